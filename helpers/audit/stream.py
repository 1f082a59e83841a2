"""The audit of one or several streams of batches: each batch read once, its checks run, its digests kept
(a 64-bit xxh3 of each sample and of the batch, never the batch), findings gathered in a `Report`.

`StreamAudit` is one rank's stream; `audit` and `audit_ranks` read whole streams offline, told about the run by
`AuditSettings` (`helpers.audit.settings`). The checks of this module find ids out of range or wrapped by uint16, a
batch of one id, labels in the wrong layout, padding in the loss, a replay of samples already seen in the order
they were seen (`repeated-batch`, `repeated-samples`), the same samples on several ranks at one step or over time,
a batch of the same samples as an earlier one in another order, and samples back for the first time all at once
(`helpers.audit.returns`); the others live in their own modules: `random-tokens` and `id-wraparound`'s statistics
(`statistics`), `ids-rounded` (`casts`), `vocab-mismatch` (`vocabulary`), `no-labels` and
`attention-mask-inverted` (`masks`), `double-bos`, `truncated-documents`, `eos-not-learned` (`document_shapes`),
`repeated-documents` (`document_replays`), `unshuffled` (`order`) and `eval-overlap` (`eval_overlap`).

What each finding measures and where its threshold comes from: docs/audit.md, "What each check measures".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import xxhash

from ..common.errors import UserError
from .batches import Batch, read_batch
from .casts import RoundingWatch, handed_over_as_float
from .document_replays import DocumentReplays
from .document_shapes import DocumentShapes
from .documents import documents
from .masks import hidden_padding, inverted_mask, no_labels
from .order import OrderWatch
from .report import Finding, Report
from .returns import FAR_BACK, FirstReturns
from .settings import REMEMBER, AuditSettings
from .sightings import Sightings, follows, sighting, where
from .statistics import (
    CHANCE,
    EXACT_CHANCE,
    MATCHES,
    POOLED,
    WINDOW,
    WRAP_LIMIT,
    WRAP_TOKENS,
    label_matches,
    pooled_pairs,
    replay_run_needed,
    uniform_bound,
    uniform_windows,
    unigram_entropy,
)
from .vocabulary import verdict

LAYOUT_WORDS = {"same": "equal to input_ids", "shifted": "one token ahead", "shifted twice": "two tokens ahead"}
FEWEST_VALUES = 16  # the pooled test asks for ids spanning at least this many values
CONSTANT_TOKENS = 64  # a batch of one id throughout is a finding from this many ids
SHARED_FEWEST, SHARED_RATIO = 8, 4  # samples from other ranks' earlier steps, against this rank's own
DOCUMENT_SHARE = 4  # the document keys kept: a quarter of `remember` each (starts, ends, first returns)
SHORTEST_RETURN = 32  # rows of fewer real tokens (a line of a licence, padded) are too short to tell a copy apart
PLAIN_SHARE, PLAIN_TOP = 8, 0.4  # plain content: few distinct ids, one of them common
REPLAY_CAUSES = ("the stream loops, an epoch counter never advances (sampler.set_epoch), a resumed run replays "
                 "what it trained on, the batches were made once and only their order is shuffled each epoch, "
                 "DataLoader workers each read the whole stream (an IterableDataset that does not split its data by "
                 "get_worker_info()), or the data holds the same documents twice in a row")
REPLAY_FIX = ("fix: advance the epoch each epoch and resume from the loader's saved state; drop duplicate "
              "documents with python -m helpers.clean --exact")


def digest(array: np.ndarray) -> int:
    return xxhash.xxh3_64_intdigest(np.ascontiguousarray(array).tobytes())


def batch_digests(ids: np.ndarray) -> tuple[int, list[int]]:
    """(the batch's digest, each sample's): what repeats and other ranks' batches are found by."""
    return digest(ids) ^ ids.shape[0], [digest(row) for row in ids]


class Seen:
    """Where batches and samples were first seen, on any rank, for the newest `remember` samples (and as many
    batches): what a replay or a shared batch is found by; its state goes into a checkpoint."""

    def __init__(self, remember: int = REMEMBER):
        self.batches = Sightings(remember)
        self.samples = Sightings(remember)
        self.ranks: set[int] = set()

    def enter(self, digests: tuple[int, list[int]], step: int, rank: int) -> None:
        whole, rows = digests
        self.ranks.add(rank)
        self.batches.add(whole, sighting(step, 0, rank))
        self.samples.add_many(rows, [sighting(step, row, rank, row == len(rows) - 1) for row in range(len(rows))])


@dataclass
class Run:
    """Samples seen before that come back one after another in the order they came then."""

    length: int = 0  # samples in the run, the previous batches' included
    here: int = 0  # of them, rows of this batch
    start: int | None = None  # the earlier sighting of the run's first row in this batch


def _plain_rows(ids: np.ndarray) -> np.ndarray:
    """Rows of few distinct ids (1/`PLAIN_SHARE` of their length or fewer) with one id making `PLAIN_TOP` of them
    or more: dumps of zero bytes, rulers, padding. Such content recurs in many documents, so an equal row is equal
    content, not the same sample; they neither start nor carry a replay's run. (Byte-level text has few distinct
    ids too, but no id that common.)"""
    ordered = np.sort(ids, axis=1)
    starts = np.ones(ordered.shape, bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    distinct = starts.sum(axis=1)
    index = np.broadcast_to(np.arange(ordered.shape[1]), ordered.shape)
    run_start = np.maximum.accumulate(np.where(starts, index, 0), axis=1)
    top = (index - run_start).max(axis=1) + 1
    return (distinct * PLAIN_SHARE <= ids.shape[1]) & (top >= PLAIN_TOP * ids.shape[1])


def _longest_run(earlier: list[int | None], last: int | None, carried: int) -> tuple[Run, int]:
    """(this batch's longest run, the run it ends with): each row's earlier sighting against the one before it
    (`last` and `carried`: the previous batch's last row and the run that ended there)."""
    run, longest, previous = Run(carried), Run(), last
    for value in earlier:
        if value is not None and follows(previous, value):
            run = Run(run.length + 1, run.here + 1, run.start if run.here else value)
        else:
            run = Run(1, 1, value) if value is not None else Run()
        if run.length > longest.length:
            longest = run
        previous = value
    return longest, run.length


class StreamAudit:
    """One rank's stream: `look(batch)` runs every check on its next batch and returns the findings."""

    def __init__(self, settings: AuditSettings, rank: int = 0, seen: Seen | None = None, overlap=None):
        self.settings, self.rank = settings, rank
        self.overlap = overlap  # an `EvalOverlap`, or None
        self.seen = seen if seen is not None else Seen(settings.remember)
        self.step = 0
        self.tokens = 0
        self.high_ids = 0  # ids >= 65,536 seen (for a vocabulary above that)
        self.counts = np.zeros(settings.vocab_size, np.int64)
        self.max_id = -1
        self.fewest_pairs, self.uniform_pairs = math.inf, 0.0
        self.labels_seen: str | None = None
        self.rows = self.length = 0
        self.pooling: list[np.ndarray] = []  # the newest steps' ids, as few as hold POOLED tokens
        self.last_sighting: int | None = None  # the earlier sighting of the previous batch's last row
        self.chain = 0  # samples in the in-order replay that ended the previous batch
        self.looked_at = 0  # samples this stream has looked at
        self.last_constant: int | None = None  # the id of the previous batch, where it was one id throughout
        self.last_alongside = False
        self.rounding = RoundingWatch()
        self.rounded = False  # ids-rounded was named: what the ids' range says is the cast's doing
        self.shapes = DocumentShapes(settings.bos_id, settings.eod_id)
        self.replays = DocumentReplays(settings.remember // DOCUMENT_SHARE)
        self.order = OrderWatch()
        self.from_other_ranks = self.from_own_rank = 0  # samples seen again at a later step, by where first seen
        self.ranks_seen = {rank}
        self.batch_sets = Sightings(settings.remember)  # each batch's samples as a set: a batch made again
        self.sample_returns = FirstReturns()  # samples back for the first time, step by step
        self.returned_samples = Sightings(settings.remember // DOCUMENT_SHARE)

    def statistics(self) -> dict:
        return {"steps": self.step, "rows": self.rows, "tokens": self.tokens, "length": self.length,
                "labels": self.labels_seen, "entropy": unigram_entropy(self.counts) if self.counts.any() else 0.0,
                "ln_vocab": math.log(self.settings.vocab_size), "fewest_pairs": self.fewest_pairs,
                "uniform_pairs": self.uniform_pairs, "max_id": self.max_id}

    def look(self, raw) -> list[Finding]:
        """Every check on the stream's next batch, as handed over (see `helpers.audit.batches`)."""
        batch = read_batch(raw, self.step, self.settings.ignore_index)
        return self.examine(batch, batch_digests(batch.input_ids))

    def examine(self, batch: Batch, digests: tuple[int, list[int]]) -> list[Finding]:
        """`look` on a batch already read, with its `batch_digests`."""
        found: list[Finding] = []

        def finding(code: str, message: str) -> None:
            found.append(Finding(code, self.step, self.rank, message))

        random = self._random(batch, finding)
        self._rounding(batch, finding, random)
        constant = self._ids(batch, finding, random)
        if not random and not constant:  # random or constant inputs match no label
            if not self.rounded and not self._wrapped_now(batch):  # the cast's finding says it all
                self._labels(batch, finding)  # layout: one finding says it
            self._documents(batch, finding)
        self._repeats(batch, digests, finding)
        if self.overlap is not None:
            found_overlap = self.overlap.find(batch.input_ids)
            if found_overlap is not None:
                finding("eval-overlap", found_overlap)
        self.step += 1
        return found

    def _ids(self, batch: Batch, finding, random: bool) -> bool:
        """The ids' range, wrap-around and constancy; True for a batch of one id throughout."""
        s, ids = self.settings, batch.input_ids
        self.rows, self.length = ids.shape
        self.tokens += ids.size
        kept = ids[ids != np.iinfo(np.int64).min] if self.rounded else ids  # float16's infinities: ids-rounded
        low, high = (int(kept.min()), int(kept.max())) if kept.size else (0, 0)
        self.max_id = max(self.max_id, high)
        inside = kept[(kept >= 0) & (kept < s.vocab_size)]
        self.counts += np.bincount(inside, minlength=s.vocab_size)
        if low < 0 or high >= s.vocab_size:
            outside = kept.size - inside.size
            out = kept[(kept < 0) | (kept >= s.vocab_size)]
            finding("id-out-of-range", f"{outside:,} of {ids.size:,} input ids outside [0, {s.vocab_size:,}) (those: "
                    f"smallest {int(out.min()):,}, largest {int(out.max()):,}); the embedding lookup fails or reads another row; fix: pass the "
                    "tokenizer's vocabulary size to the model, or check the ids' dtype and tokenizer")
        if batch.labels is not None:
            labels = batch.labels[batch.labels != s.ignore_index]
            if labels.size and (labels.min() < 0 or labels.max() >= s.vocab_size):
                finding("id-out-of-range", f"labels hold ids outside [0, {s.vocab_size:,}) (largest "
                        f"{int(labels.max()):,}, smallest {int(labels.min()):,}) other than ignore_index "
                        f"{s.ignore_index}; fix: mask with {s.ignore_index}, not another value")
        one_id = int(ids.flat[0]) if bool((ids == ids.flat[0]).all()) else None
        # one row of one id can be a ruler in real text; two such steps in a row, or several rows, are a finding
        constant = one_id is not None and ids.size >= CONSTANT_TOKENS and (ids.shape[0] > 1 or
                                                                           self.last_constant == one_id)
        self.last_constant = one_id
        if constant:
            finding("constant-batch", f"every one of the batch's {ids.size:,} ids is {int(ids.flat[0])}: a failed read "
                    "or an empty buffer; fix: check the reader returns data (a missing file must be an error)")
        elif (zero_rows := int((~ids.any(axis=1) & ~self._padding_rows(batch)).sum())) and ids.shape[1] >= 8:
            finding("constant-batch", f"{zero_rows} of {ids.shape[0]} rows are all id 0 (a zero-filled buffer); fix: "
                    "check the reader returns data for every sample")
        if not random and not self.rounded:  # random or rounded ids say nothing of how they were stored
            self._range(batch, finding)
        return constant

    def _padding_rows(self, batch: Batch) -> np.ndarray:
        """Rows that are padding throughout (an empty document): the mask all 0, or the pad id throughout."""
        if batch.attention_mask is not None:
            return ~batch.attention_mask.any(axis=1)
        return (batch.input_ids == self.settings.pad_id).all(axis=1)

    def _wrapped_now(self, batch: Batch) -> bool:
        return batch.stored_dtype == "uint16" and self.settings.vocab_size > WRAP_LIMIT

    def _rounding(self, batch: Batch, finding, random: bool) -> None:
        """Ids handed over in a float type, or cast to one and back (`helpers.audit.casts`)."""
        line = handed_over_as_float(batch.stored_dtype, self.settings.vocab_size)
        if line is None and not random and not self.rounded:
            line = self.rounding.look(batch.input_ids, self.settings.vocab_size)
        if line is not None:
            self.rounded = True
            finding("ids-rounded", line)

    def _range(self, batch: Batch, finding) -> None:
        """What the ids' range says once WRAP_TOKENS have come: wrapped by uint16, or another vocabulary's
        (`helpers.audit.vocabulary`); a batch handed over as uint16 for a larger vocabulary at once."""
        s, ids = self.settings, batch.input_ids
        self.high_ids += int((ids >= WRAP_LIMIT).sum())
        checked = self.tokens - ids.size  # tokens counted before this batch
        if batch.stored_dtype == "uint16" and s.vocab_size > WRAP_LIMIT:
            finding("id-wraparound", f"ids handed over as uint16 for a vocabulary of {s.vocab_size:,}: "
                    "every id from 65,536 up has lost its top bits; fix: store them as int32 (Megatron's choice above "
                    "65,500 ids) or int64")
        elif self.tokens >= WRAP_TOKENS and checked < WRAP_TOKENS:
            said = verdict(self.max_id, s.vocab_size, s.tokenizer_vocab)
            if said is not None:
                finding(*said)

    def _random(self, batch: Batch, finding) -> bool:
        """The per-row windows and the pooled ids against a uniform draw; True when either looks like one."""
        s, ids = self.settings, batch.input_ids
        windows, uniform, fewest, mean, bound = uniform_windows(ids, s.vocab_size)
        if windows:
            self.fewest_pairs, self.uniform_pairs = min(self.fewest_pairs, fewest), mean
        pooled = self._pooled(ids)
        if uniform:
            size = min(ids.shape[1], WINDOW)
            finding("random-tokens", f"{uniform} of {windows} windows of {size} ids look uniformly random (fewest "
                    f"equal pairs {fewest:.0f}, a uniform draw gives {mean:.2f}, real text here more than "
                    f"{bound:.1f}); {self._entropy(ids)}; fix: load real data, and make a missing file an error "
                    "instead of a torch.randint fallback")
        elif pooled:
            finding("random-tokens", f"{pooled}; {self._entropy(ids)}; fix: load real data, and make a missing file "
                    "an error instead of a torch.randint fallback")
        return bool(uniform or pooled)

    def _pooled(self, ids: np.ndarray) -> str:
        """The pooled test on this batch's ids (with the newest steps' before, as few as make POOLED tokens, for
        a smaller batch): what it saw when they look like a uniform draw over the range they span, else ''."""
        steps = 1
        if ids.size < POOLED:
            self.pooling.append(ids.ravel())
            while sum(part.size for part in self.pooling[1:]) >= POOLED:
                self.pooling.pop(0)
            if sum(part.size for part in self.pooling) < POOLED:
                return ""
            steps, ids = len(self.pooling), np.concatenate(self.pooling)
        else:
            self.pooling = []
        tokens, pairs, values = pooled_pairs(ids)
        mean, bound = uniform_bound(tokens, values)
        if pairs > bound or values < FEWEST_VALUES:  # one id throughout is a constant batch, not a draw
            return ""
        low = int(ids.min())
        over = f" over {steps} steps" if steps > 1 else ""
        return (f"the {tokens:,} ids{over} look uniformly random over ids {low:,} to {low + values - 1:,} (equal pairs "
                f"{pairs:,}, a uniform draw gives {mean:.1f}, real text more than {bound:.1f})")

    def _entropy(self, ids: np.ndarray) -> str:
        s = self.settings
        counts = np.bincount(ids[(ids >= 0) & (ids < s.vocab_size)], minlength=s.vocab_size)
        return (f"unigram entropy {unigram_entropy(counts):.2f} of ln V {math.log(s.vocab_size):.2f} nats over "
                f"{ids.size:,} tokens")

    def _labels(self, batch: Batch, finding) -> None:
        s, labels = self.settings, batch.labels
        if labels is None:
            return
        empty = no_labels(labels, s.ignore_index)
        if empty is not None:
            finding("no-labels", empty)
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
        inverted = inverted_mask(batch.input_ids, batch.attention_mask, s.pad_id)
        if inverted is not None:
            finding("attention-mask-inverted", inverted)
            return
        pads = hidden_padding(batch.input_ids, batch.attention_mask, s.pad_id, s.eod_id)
        in_loss = int((pads & (labels != s.ignore_index)).sum())
        if in_loss:
            finding("padding-in-loss", f"{in_loss:,} padding positions of {int(pads.sum()):,} carry a label (not "
                    f"{s.ignore_index}): the loss learns to predict padding; fix: set labels to {s.ignore_index} "
                    "where attention_mask is 0 (or the input is the pad id)")

    def _documents(self, batch: Batch, finding) -> None:
        """The checks on documents (`helpers.audit.documents`): their starts, lengths and ends, documents seen
        again in other rows, and the stream's order."""
        s, ids = self.settings, batch.input_ids
        if batch.attention_mask is not None and inverted_mask(ids, batch.attention_mask, s.pad_id) is not None:
            return  # where the padding is cannot be read from this mask
        found = documents(ids, hidden_padding(ids, batch.attention_mask, s.pad_id, s.eod_id), s.eod_id)
        labels = batch.labels
        if labels is not None and not (labels != s.ignore_index).any():
            labels = None  # no-labels says it
        for code, line in self.shapes.look(ids, labels, found):
            finding(code, line)
        replayed = self.replays.look(ids, found, self.step)
        if replayed is not None:
            finding("repeated-documents", replayed)
        ordered = self.order.look(ids, [end - start for _, start, end in found.whole])
        if ordered is not None:
            finding("unshuffled", ordered)

    def _repeats(self, batch: Batch, digests: tuple[int, list[int]], finding) -> None:
        """A replay (this batch's samples seen before, in the order they came then) and samples shared with
        another rank at this step; then this batch's digests entered as seen."""
        seen, whole, rows = self.seen, *digests
        sightings = seen.samples.get_many(rows)
        plain = _plain_rows(batch.input_ids)
        earlier = [value if value is not None and where(value)[0] < self.step and not flat else None
                   for value, flat in zip(sightings, plain)]
        alongside = [value for value in sightings if value is not None and where(value)[0] == self.step
                     and where(value)[2] != self.rank]
        self.looked_at += len(rows)
        self._count_by_rank(earlier)
        longest, self.chain = _longest_run(earlier, self.last_sighting, self.chain)
        needed = replay_run_needed(len(seen.samples), self.looked_at)
        batch_seen = seen.batches.get(whole)
        enough = (longest.length >= needed and longest.here * 2 >= len(rows)) or (
            not plain.any() and self._redrawn(batch_seen, rows))
        shared = len(alongside) * 2 >= len(rows) and (len(alongside) > 1 or self.last_alongside)
        if shared:
            other = where(alongside[0])[2]
            if batch_seen == sighting(self.step, 0, other):
                what = f"the same batch as rank {other} at this step: the ranks train on the same data, so W GPUs do " \
                       "the work of one"
            else:
                what = f"{len(alongside)} of {len(rows)} samples equal to rank {other}'s at this step: the ranks " \
                       "share their data, so part of their work is done twice"
            finding("same-batch-across-ranks", f"{what}; fix: give the sampler its rank and world size "
                    "(DistributedSampler(dataset, num_replicas=W, rank=r), or the loader's rank=)")
        elif enough and batch_seen is not None and where(batch_seen)[0] < self.step:
            step, _, rank = where(batch_seen)
            just_before = ("the batch just before it: each batch comes again at once, as DataLoader workers that each "
                           "read the whole stream give it (an IterableDataset that does not split its data by "
                           "torch.utils.data.get_worker_info()); fix: give each worker its own share of the data "
                           if step == self.step - 1 and rank == self.rank else "")
            if just_before:
                finding("repeated-batch", f"this batch equals {just_before}(or use a map-style dataset with a "
                        "sampler)")
            else:
                finding("repeated-batch", f"this batch equals the one at step {step} (rank {rank}), its samples in "
                        f"the same order: {REPLAY_CAUSES}; {REPLAY_FIX}")
        elif enough:
            finding("repeated-samples", f"{longest.here} of {len(rows)} samples come back in the order they were "
                    f"trained on at step {where(longest.start)[0]} ({longest.length} in a row; a new epoch's "
                    f"shuffle of {len(seen.samples):,} samples gives {needed} in a row less than once in 10,000 runs): "
                    f"{REPLAY_CAUSES}; {REPLAY_FIX}")
        elif not plain.any():
            self._regrouped(rows, finding)
        real = batch.attention_mask.sum(axis=1) if batch.attention_mask is not None else np.full(len(rows),
                                                                                                 batch.input_ids.shape[1])
        self._returns(list(zip(rows, earlier)), len(alongside), plain | (real < SHORTEST_RETURN), finding)
        self._shared_over_time(finding)
        self.last_sighting = earlier[-1]
        self.last_alongside = bool(alongside)
        seen.enter(digests, self.step, self.rank)

    def _redrawn(self, batch_seen: int | None, rows: list[int]) -> bool:
        """A whole batch equal to an earlier step's, its distinct samples in the same order: a reshuffle deals
        one of perm(samples seen, rows) ordered batches, so a match among the steps so far is named once that
        chance is under 1 in `EXACT_CHANCE` (`Trainer(ignore_data_skip=True)` at its first resumed step)."""
        if batch_seen is None or where(batch_seen)[0] >= self.step or len(set(rows)) != len(rows) or len(rows) < 2:
            return False
        return math.perm(len(self.seen.samples), len(rows)) >= EXACT_CHANCE * (self.step + 1)

    def _regrouped(self, rows: list[int], finding) -> None:
        """A batch holding the same samples as an earlier one, in any order: batches made once, then only their
        order shuffled each epoch. A reshuffle groups the same samples again less than once in CHANCE runs
        where the distinct samples seen can make that many more groups than there are pairs of steps."""
        distinct = len(set(rows))
        key = (sum(rows) + distinct) % (1 << 64)
        earlier = self.batch_sets.get(key)
        self.batch_sets.add(key, self.step)
        if distinct < 2 or earlier is None or earlier >= self.step:
            return
        groups = math.comb(len(self.seen.samples), distinct)
        if groups < CHANCE * (self.step + 1) ** 2:
            return
        finding("repeated-batch", f"this batch holds the same {distinct} samples as the one at step {earlier}, in "
                "another order: the batches were made once and only their order is shuffled each epoch, so the "
                "same samples always share a step; fix: shuffle the samples, then batch them (DataLoader(dataset, "
                "shuffle=True, batch_size=...)), not a list of batches")

    def _returns(self, sighted: list[tuple[int, int | None]], alongside: int, plain: np.ndarray, finding) -> None:
        """Samples trained on before coming back for the first time all at once, in a new order, while new ones
        still come: a restart inside an epoch with a new shuffle of the same samples (`helpers.audit.returns`)."""
        counted = list({row: value for (row, value), flat in zip(sighted, plain) if not flat}.items())  # distinct
        known = [row for row, value in counted if value is not None]
        far = {row for row, value in counted if value is not None and where(value)[0] <= self.step - FAR_BACK}
        again = self.returned_samples.get_many(known)
        first = [row for row, held in zip(known, again) if held is None and row in far]
        self.returned_samples.add_many(first, [self.step] * len(first))
        self.sample_returns.add(len(counted), max(len(counted) - len(known) - alongside, 0), len(first))
        jump = self.sample_returns.jump()
        if jump is not None:
            finding("repeated-samples", f"samples back for the first time, trained on at earlier steps and now in "
                    f"another order: {jump.rates()}, while new samples still come: the data restarted inside an "
                    "epoch with a new shuffle, as a resumed run does when it rebuilds its loader instead of "
                    "restoring it; fix: resume from the loader's saved state (or skip the samples already trained "
                    "on with the same seed), and keep the shuffle's seed in the checkpoint")

    def _count_by_rank(self, earlier: list[int | None]) -> None:
        for value in earlier:
            if value is not None:
                rank = where(value)[2]
                self.ranks_seen.add(rank)
                if rank == self.rank:
                    self.from_own_rank += 1
                else:
                    self.from_other_ranks += 1

    def _shared_over_time(self, finding) -> None:
        """Samples that another rank trained on at an earlier step, far more often than this rank's own come
        back: every rank reads the whole dataset in its own order (a shuffle seeded per rank, no sampler). A
        corpus's duplicates and new epochs bring back this rank's samples as often as the others'."""
        ranks = max(len(self.ranks_seen), len(self.seen.ranks))
        other, own = self.from_other_ranks, self.from_own_rank
        if ranks < 2 or other < max(SHARED_FEWEST, SHARED_RATIO * (ranks - 1) * (own + 1)):
            return
        finding("same-data-across-ranks", f"{other:,} samples this rank trained on had been trained on by another "
                f"rank at an earlier step, against {own:,} of its own seen again: every rank reads the whole "
                "dataset in an order of its own, so each sample is trained on once per rank and an epoch costs W "
                "times its work; fix: give each rank its share (DistributedSampler(dataset, num_replicas=W, "
                "rank=r), or the loader's rank=), and one seed on every rank")


def _streams_checked(streams: Sequence) -> None:
    if not streams:
        raise UserError("no stream given; fix: pass one iterable of batches per rank")


def audit(batches: Iterable, settings: AuditSettings | None = None, *, max_steps: int | None = None, overlap=None,
          **named) -> Report:
    """Audit one rank's stream of batches (read once, lazily, up to `max_steps`); see `helpers.audit`.
    `settings`: an `AuditSettings`, or its fields as keywords (`vocab_size=` at least); `overlap`: an
    `helpers.audit.eval_overlap.EvalOverlap` to look for evaluation n-grams with."""
    return audit_ranks([batches], AuditSettings.given(settings, named, "audit"), max_steps=max_steps, overlap=overlap)


def audit_ranks(streams: Sequence[Iterable], settings: AuditSettings | None = None, *, max_steps: int | None = None,
                overlap=None, **named) -> Report:
    """Audit several ranks' streams offline, step by step together: each as `audit` does, and their batches
    compared with each other's at every step."""
    _streams_checked(streams)
    settings = AuditSettings.given(settings, named, "audit_ranks")
    seen = Seen(settings.remember)
    audits = [StreamAudit(settings, rank, seen, overlap) for rank in range(len(streams))]
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
