"""The audit of one or several streams of batches: each batch read once, its checks run, its digests kept
(a 64-bit xxh3 of each sample and of the batch, never the batch), findings gathered in a `Report`.

What each finding measures, and its threshold:
- `random-tokens`: 128-token windows whose equal pairs are as few as a uniform draw's
  (`helpers.audit.statistics`, margins measured there);
- `id-out-of-range`: any input id outside [0, vocab_size), or label other than ignore_index;
- `id-wraparound`: a vocabulary above 65,536 whose ids come as uint16, or 4,096 tokens with no id from
  65,536 up (`helpers.audit.statistics`);
- `constant-batch`: a batch of one id throughout, or a row of zeros;
- `labels-misaligned`: the share of label positions equal to the ids at the same place, one on, two on;
  the layout the model expects must match at 99% or more of them (a right layout matches at 100%; the
  wrong one, on real text, at the share of tokens equal to their neighbour: 0 to 22% here);
- `padding-in-loss`: a label other than ignore_index where the attention mask is 0 (or the input is the pad
  id; a trailing run of two or more where the pad id is also the end-of-document id);
- `repeated-batch`, `repeated-samples`: a batch, or half or more of a batch's samples, already seen at an
  earlier step (a single repeated sample, as exact duplicates in a corpus make, is no finding; with one
  sample a batch, two repeated steps in a row are);
- `same-batch-across-ranks`: samples of this step seen on another rank at the same step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import xxhash

from ..common.errors import UserError
from .batches import Batch, read_batch
from .report import Finding, Report
from .statistics import (MATCHES, WINDOW, WRAP_LIMIT, WRAP_TOKENS, label_matches, padding_positions,
                         uniform_windows, unigram_entropy)

LABELS = ("same", "shifted", None)
LAYOUT_WORDS = {"same": "equal to input_ids", "shifted": "one token ahead", "shifted twice": "two tokens ahead"}
RANK_SLOTS = 1 << 20  # a sample's first sighting kept as one int: step * RANK_SLOTS + rank


@dataclass(frozen=True)
class AuditSettings:
    vocab_size: int
    labels: str | None = None
    pad_id: int | None = None
    ignore_index: int = -100
    eod_id: int | None = None

    def check(self) -> None:
        if not isinstance(self.vocab_size, int) or self.vocab_size < 2:
            raise UserError(f"vocab_size {self.vocab_size!r}: not a vocabulary size; fix: pass the model's vocabulary "
                            "size, an integer >= 2 (model.config.vocab_size)")
        if self.labels not in LABELS:
            raise UserError(f"labels={self.labels!r}: no such layout; fix: pass 'same' (the model shifts, as Hugging "
                            "Face models do), 'shifted' (y[t] = x[t+1], as nanoGPT and Megatron) or None")


def digest(array: np.ndarray) -> int:
    return xxhash.xxh3_64_intdigest(np.ascontiguousarray(array).tobytes())


def batch_digests(ids: np.ndarray) -> tuple[int, list[int]]:
    """(the batch's digest, each sample's): what repeats and other ranks' batches are found by."""
    return digest(ids) ^ ids.shape[0], [digest(row) for row in ids]


class Seen:
    """Digests of batches and samples already seen, on any rank: what a replay or a shared batch is found by.
    Its state is two dicts of ints, to save with a checkpoint (`Auditor.state_dict`)."""

    def __init__(self, batches: dict | None = None, samples: dict | None = None):
        self.batches: dict[int, int] = batches or {}
        self.samples: dict[int, int] = samples or {}

    @staticmethod
    def where(value: int) -> tuple[int, int]:
        """(step, rank) of a sighting."""
        return value // RANK_SLOTS, value % RANK_SLOTS


class StreamAudit:
    """One rank's stream: `look(batch)` runs every check on its next batch and returns the findings."""

    def __init__(self, settings: AuditSettings, rank: int = 0, seen: Seen | None = None):
        settings.check()
        self.settings, self.rank, self.seen = settings, rank, seen if seen is not None else Seen()
        self.step = 0
        self.tokens = 0
        self.high_ids = 0  # ids >= 65,536 seen (for a vocabulary above that)
        self.counts = np.zeros(settings.vocab_size, np.int64)
        self.max_id = -1
        self.fewest_pairs, self.uniform_pairs = math.inf, 0.0
        self.labels_seen: str | None = None
        self.rows = self.length = 0
        self.last_repeated = False

    def statistics(self) -> dict:
        return {"steps": self.step, "rows": self.rows, "tokens": self.tokens, "length": self.length,
                "labels": self.labels_seen, "entropy": unigram_entropy(self.counts) if self.counts.any() else 0.0,
                "ln_vocab": math.log(self.settings.vocab_size), "fewest_pairs": self.fewest_pairs,
                "uniform_pairs": self.uniform_pairs, "max_id": self.max_id}

    def look(self, raw) -> list[Finding]:
        """Every check on the stream's next batch, as handed over (see `helpers.audit.batches`)."""
        batch = read_batch(raw, self.step)
        return self.examine(batch, batch_digests(batch.input_ids))

    def examine(self, batch: Batch, digests: tuple[int, list[int]]) -> list[Finding]:
        """`look` on a batch already read, with its `batch_digests`."""
        found: list[Finding] = []

        def finding(code: str, message: str) -> None:
            found.append(Finding(code, self.step, self.rank, message))

        constant = self._ids(batch, finding)
        if not self._random(batch, finding) and not constant:  # random or constant inputs match no label
            self._labels(batch, finding)  # layout: one finding says it
        self._repeats(batch, digests, finding)
        self.step += 1
        return found

    def _ids(self, batch: Batch, finding) -> bool:
        """The ids' range, wrap-around and constancy; True for a batch of one id throughout."""
        s, ids = self.settings, batch.input_ids
        self.rows, self.length = ids.shape
        self.tokens += ids.size
        low, high = int(ids.min()), int(ids.max())
        self.max_id = max(self.max_id, high)
        inside = ids[(ids >= 0) & (ids < s.vocab_size)]
        self.counts += np.bincount(inside, minlength=s.vocab_size)
        if low < 0 or high >= s.vocab_size:
            outside = ids.size - inside.size
            finding("id-out-of-range", f"{outside:,} of {ids.size:,} input ids outside [0, {s.vocab_size:,}) (smallest "
                    f"{low:,}, largest {high:,}); the embedding lookup fails or reads another row; fix: pass the "
                    "tokenizer's vocabulary size to the model, or check the ids' dtype and tokenizer")
        if batch.labels is not None:
            labels = batch.labels[batch.labels != s.ignore_index]
            if labels.size and (labels.min() < 0 or labels.max() >= s.vocab_size):
                finding("id-out-of-range", f"labels hold ids outside [0, {s.vocab_size:,}) (largest {int(labels.max()):,}, "
                        f"smallest {int(labels.min()):,}) other than ignore_index {s.ignore_index}; fix: mask with "
                        f"{s.ignore_index}, not another value")
        constant = bool((ids == ids.flat[0]).all())
        if constant:
            finding("constant-batch", f"every one of the batch's {ids.size:,} ids is {int(ids.flat[0])}: a failed read "
                    "or an empty buffer; fix: check the reader returns data (a missing file must be an error)")
        elif (zero_rows := int((~ids.any(axis=1)).sum())) and ids.shape[1] >= 8:
            finding("constant-batch", f"{zero_rows} of {ids.shape[0]} rows are all id 0 (a zero-filled buffer); fix: "
                    "check the reader returns data for every sample")
        if s.vocab_size > WRAP_LIMIT:
            self.high_ids += int((ids >= WRAP_LIMIT).sum())
            if batch.stored_dtype == "uint16":
                finding("id-wraparound", f"ids handed over as uint16 for a vocabulary of {s.vocab_size:,}: every id "
                        "from 65,536 up has lost its top bits; fix: store them as int32 (Megatron's choice above "
                        "65,500 ids) or int64")
            elif not self.high_ids and self.tokens >= WRAP_TOKENS and self.tokens - ids.size < WRAP_TOKENS:
                finding("id-wraparound", f"no id >= 65,536 in the first {self.tokens:,} tokens of a {s.vocab_size:,}-id "
                        "vocabulary (real text uses them for about 2% of its tokens here): ids wrapped by a uint16 "
                        "array; fix: store them as int32 or int64")
        return constant

    def _random(self, batch: Batch, finding) -> bool:
        s, ids = self.settings, batch.input_ids
        windows, uniform, fewest, mean, bound = uniform_windows(ids, s.vocab_size)
        self.fewest_pairs, self.uniform_pairs = min(self.fewest_pairs, fewest), mean
        if uniform:
            counts = np.bincount(ids[(ids >= 0) & (ids < s.vocab_size)], minlength=s.vocab_size)
            finding("random-tokens", f"{uniform} of {windows} windows of {min(WINDOW, ids.shape[1])} ids look uniformly "
                    f"random (fewest equal pairs {fewest:.0f}, a uniform draw gives {mean:.2f}, real text here "
                    f"more than {bound:.1f}); unigram entropy {unigram_entropy(counts):.2f} of ln V "
                    f"{math.log(s.vocab_size):.2f} nats over {ids.size:,} tokens; fix: load real data, and make a "
                    "missing file an error instead of a torch.randint fallback")
        return bool(uniform)

    def _labels(self, batch: Batch, finding) -> None:
        s, labels = self.settings, batch.labels
        if labels is None:
            return
        shares = label_matches(batch.input_ids, labels, s.ignore_index)
        seen = [name for name, share in shares.items() if share is not None and share >= MATCHES]
        if len(seen) == 1:
            self.labels_seen = seen[0]
        shown = ", ".join(f"{name} {share:.2f}" for name, share in shares.items() if share is not None)
        wanted = s.labels
        if wanted is not None and shares.get(wanted) is not None and shares[wanted] < MATCHES:
            what = {"same": "labels equal to input_ids (the model shifts them itself)",
                    "shifted": "labels one token ahead of input_ids"}[wanted]
            got = f"they are {LAYOUT_WORDS[seen[0]]}" if len(seen) == 1 else "they match no layout"
            fix = ("pass input_ids as labels and let the model shift" if wanted == "same"
                   else "set y[t] = x[t+1] (a window of length+1 tokens, split)")
            finding("labels-misaligned", f"expected {what}, but {got} (share of label positions matching each layout: "
                    f"{shown}); the model trains on the wrong target; fix: {fix}")
        elif wanted is None and not {"same", "shifted"} & set(seen) and any(v is not None for v in shares.values()):
            got = f"they are {LAYOUT_WORDS[seen[0]]}" if len(seen) == 1 else "they match no layout"
            finding("labels-misaligned", f"labels are neither input_ids nor input_ids one token on: {got} (share of "
                    f"label positions matching each layout: {shown}); fix: labels are input_ids (the model shifts) "
                    "or x[t+1]")
        pads = padding_positions(batch.input_ids, batch.attention_mask, s.pad_id, s.eod_id)
        in_loss = int((pads & (labels != s.ignore_index)).sum())
        if in_loss:
            finding("padding-in-loss", f"{in_loss:,} padding positions of {int(pads.sum()):,} carry a label (not "
                    f"{s.ignore_index}): the loss learns to predict padding; fix: set labels to {s.ignore_index} "
                    "where attention_mask is 0 (or the input is the pad id)")

    def _repeats(self, batch: Batch, digests: tuple[int, list[int]], finding) -> None:
        ids, seen, here = batch.input_ids, self.seen, self.step * RANK_SLOTS + self.rank
        whole, rows = digests
        earlier = [seen.samples[d] for d in rows if d in seen.samples and seen.samples[d] // RANK_SLOTS < self.step]
        alongside = [seen.samples[d] for d in rows if d in seen.samples and seen.samples[d] // RANK_SLOTS == self.step
                     and seen.samples[d] % RANK_SLOTS != self.rank]
        single = ids.shape[0] == 1
        repeated = bool(earlier) and (len(earlier) * 2 >= len(rows)) and (not single or self.last_repeated)
        if alongside:
            other = Seen.where(alongside[0])[1]
            what = "the same batch as" if seen.batches.get(whole) == self.step * RANK_SLOTS + other else \
                f"{len(alongside)} of {len(rows)} samples of"
            finding("same-batch-across-ranks", f"{what} rank {other} at this step: the ranks train on the same data, "
                    "so W GPUs do the work of one; fix: give the sampler its rank and world size "
                    "(DistributedSampler(dataset, num_replicas=W, rank=r), or the loader's rank=)")
        elif whole in seen.batches and seen.batches[whole] // RANK_SLOTS < self.step and (not single or self.last_repeated):
            step, rank = Seen.where(seen.batches[whole])
            finding("repeated-batch", f"this batch equals the one at step {step} (rank {rank}): the stream loops, "
                    "an epoch counter never advances (sampler.set_epoch), or a resumed run replays what it "
                    "trained on; fix: advance the epoch each epoch, and resume from the loader's saved state")
        elif repeated:
            first = min(Seen.where(value)[0] for value in earlier)
            finding("repeated-samples", f"{len(earlier)} of {len(rows)} samples were already trained on (first at "
                    f"step {first}): the sampler replays data; fix: call sampler.set_epoch(epoch) each epoch, "
                    "check the dataset's length and the resume position")
        self.last_repeated = bool(earlier)
        seen.batches.setdefault(whole, here)
        for d in rows:
            seen.samples.setdefault(d, here)


def _streams_checked(streams: Sequence) -> None:
    if not streams:
        raise UserError("no stream given; fix: pass one iterable of batches per rank")


def audit(batches: Iterable, *, vocab_size: int, labels: str | None = None, pad_id: int | None = None,
          ignore_index: int = -100, eod_id: int | None = None, max_steps: int | None = None) -> Report:
    """Audit one rank's stream of batches (read once, lazily, up to `max_steps`); see `helpers.audit`."""
    return audit_ranks([batches], vocab_size=vocab_size, labels=labels, pad_id=pad_id, ignore_index=ignore_index,
                       eod_id=eod_id, max_steps=max_steps)


def audit_ranks(streams: Sequence[Iterable], *, vocab_size: int, labels: str | None = None,
                pad_id: int | None = None, ignore_index: int = -100, eod_id: int | None = None,
                max_steps: int | None = None) -> Report:
    """Audit several ranks' streams offline, step by step together: each as `audit` does, and their batches
    compared with each other's at every step."""
    _streams_checked(streams)
    settings = AuditSettings(vocab_size=vocab_size, labels=labels, pad_id=pad_id, ignore_index=ignore_index,
                             eod_id=eod_id)
    seen = Seen()
    audits = [StreamAudit(settings, rank, seen) for rank in range(len(streams))]
    iterators = [iter(stream) for stream in streams]
    report = Report()
    live = list(range(len(streams)))
    while live and (max_steps is None or audits[live[0]].step < max_steps):
        for rank in list(live):
            try:
                batch = next(iterators[rank])
            except StopIteration:
                live.remove(rank)
                continue
            for found in audits[rank].look(batch):
                report.add(found)
    if all(a.step == 0 for a in audits):
        raise UserError("the stream is empty: no batch to audit; fix: check the loader yields batches (its length, "
                        "drop_last, the resume position)")
    report.statistics = {a.rank: a.statistics() for a in audits}
    return report
