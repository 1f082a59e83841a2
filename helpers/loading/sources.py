"""Where a loader's samples come from: every format a training script may hand it, behind one small interface.

A source numbers its samples 0..len-1 and turns any set of sample ids into one batch in the layout
of `helpers.datasets.layout`. A sample is a pure function of (data, seed, sample id): nothing depends on which
samples were read before, so a loader resumes anywhere in O(1).

| source | data on disk | sample i |
|---|---|---|
| `ScheduledSource` | Megatron prefixes: one, a weighted blend, or a schedule | each dataset in its own order |
| `MegatronSource` | Megatron prefixes listed without weights | sample i of megatron-core's blend by size |
| `NpySource` | one flat `.npy` of tokens | window `seq_length + 1` of the split, seeded permutation per epoch |
| `ShardSource` | `dataset_metadata.json` + shards | a random window of a random shard, as a seeded permutation |
| `PackedSource` | Megatron prefixes or a blend | a row of whole documents packed by `helpers.loading.packing` |
| `SyntheticSource` | nothing: asked for by name | uniform random ids, seeded by (seed, i) |
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from ..common.compiled import BATCH_TOKENS, compiled_pays
from ..common.errors import DataNotFoundError, UserError
from ..common.paths import shown
from ..datasets.batch_memory import BATCH_BLOCKS
from ..datasets.blend_layout import BlendLayout
from ..datasets.blending import (
    Blend,
    blending_indices,
    build_split,
    exhaustive_blending_indices,
    normalize,
    parse_data_path,
)
from ..datasets.formats import METADATA
from ..datasets.gpt_dataset import GPTDatasetConfig, split_span
from ..datasets.indexed import IndexedDataset, fingerprint, idx_path
from ..datasets.layout import batch_of, from_windows
from ..datasets.sidecar import DataFacts, data_facts
from .epochs import EpochOrder
from .mixing import Mix
from .packing import pack, rows_batch
from .schedule import parse_schedule
from .settings import LoaderSettings


def _digest(content: dict) -> str:
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()[:16]


@lru_cache(maxsize=4)
def _epoch_permutation(seed: int, salt: int, epoch: int, size: int) -> np.ndarray:
    """The order of `size` items in one epoch: a seeded permutation, the same in every process."""
    return np.random.default_rng([seed, salt, epoch]).permutation(size)


def permuted(sample_ids: np.ndarray, size: int, seed: int, salt: int = 0) -> np.ndarray:
    """Item of each sample id when epochs of `size` items follow one another, each in its own order."""
    epochs, slots = np.divmod(sample_ids, size)
    out = np.empty_like(sample_ids)
    for epoch in np.unique(epochs):
        chosen = epochs == epoch
        out[chosen] = _epoch_permutation(seed, salt, int(epoch), size)[slots[chosen]]
    return out


def _window_samples(num_samples: int | None, windows: int, what: str) -> int:
    if windows < 1:
        raise UserError(f"{what} holds no window of the asked length; fix: lower seq_length or use more data")
    return windows if num_samples is None else int(num_samples)


class Source:
    """Samples numbered 0..len-1, each a pure function of the data, the seed and its number."""

    kind: str
    seq_length: int
    eod_id: int | None = None
    vocab_size: int | None = None

    def __len__(self) -> int:
        return self.num_samples

    def windows(self, sample_ids) -> np.ndarray | None:
        """Samples `sample_ids` as `[n, seq_length + 1]` token windows in the data's own integer dtype (the
        fewest bytes a DataLoader worker can hand over), or None for a source whose rows are not windows."""
        return None

    def finish(self, windows) -> dict[str, torch.Tensor]:
        """The batch of `windows()`, in the layout (cheap: compiled loops, no page faults; see `from_windows`)."""
        return from_windows(windows, self.eod_id)

    def batch(self, sample_ids) -> dict[str, torch.Tensor]:
        return self.finish(self.windows(sample_ids))

    def fingerprint(self) -> str:
        """What the samples depend on besides the seed; a resume state from other data is refused."""
        raise NotImplementedError

    def describe(self) -> str:
        """One line: where the data comes from."""
        raise NotImplementedError


# ---------------------------------------------------------------- Megatron prefixes and blends


class MegatronSource(Source):
    """Megatron's GPT samples of one split of prefixes listed without weights (blended by size, every sample
    once, in megatron-core's order)."""

    kind = "megatron"

    def __init__(self, blend: Blend, settings: LoaderSettings, config: GPTDatasetConfig, facts: DataFacts):
        self.blend, self.split, self.split_name = blend, settings.split, settings.split_name
        self.config, self.facts = config, facts
        self.seq_length, self.eod_id, self.vocab_size = config.seq_length, config.eod_id, facts.vocab_size
        num_samples = settings.num_samples
        self.dataset = build_split(blend, self.split, self.split_name, num_samples=num_samples, config=config)
        self.num_samples = len(self.dataset) if num_samples is None else min(int(num_samples), len(self.dataset))

    @staticmethod
    def _one_pass(blend: Blend, settings: LoaderSettings) -> int:
        """A weighted blend asked for 'one epoch': as many samples as its datasets hold together."""
        total = 0
        for prefix in blend.prefixes:
            indexed = IndexedDataset(prefix)
            span = split_span(settings.split, settings.split_name, len(indexed))
            if span is not None:
                total += max(int(indexed.sequence_lengths[span[0]:span[1]].sum(dtype=np.int64)) - 1, 0)
        return max(total // settings.seq_length, 1)

    def windows(self, sample_ids) -> np.ndarray:
        dtype = self.dataset.token_dtype
        return self.dataset.windows(sample_ids, dtype if dtype.kind in "iu" else np.int64)

    def finish(self, windows) -> dict[str, torch.Tensor]:
        c = self.dataset.config
        return from_windows(windows, c.eod_id, c.reset_position_ids, c.eod_mask_loss)

    def fingerprint(self) -> str:
        return _digest({"kind": self.kind, "data": [fingerprint(p) for p in self.blend.prefixes],
                        "weights": self.blend.weights, "split": self.split, "split_name": self.split_name,
                        "seq_length": self.seq_length, "samples": self.num_samples,
                        "options": [self.config.reset_position_ids, self.config.eod_mask_loss]})

    def describe(self) -> str:
        names = [Path(p).name for p in self.blend.prefixes]
        if self.blend.weights:
            parts = ", ".join(f"{round(w, 3)} x {name}" for w, name in zip(self.blend.weights, names))
        else:  # every sample once: one prefix whole, several blended by their sizes
            parts = names[0] if len(names) == 1 else f"{', '.join(names)} (blended by size)"
        opened = [IndexedDataset(p) for p in self.blend.prefixes]
        documents, tokens = sum(d.document_count for d in opened), sum(d.num_tokens for d in opened)
        return (f"real data: Megatron {self.split_name} split of {parts} ({documents:,} documents, {tokens:,} tokens"
                f" in all), tokenizer {self.facts.tokenizer} ({shown(self.facts.source)})")


# ---------------------------------------------------------------- a weighted blend or a schedule


class ScheduledSource(Source):
    """GPT samples of Megatron prefixes mixed by a schedule (a weighted blend is a schedule of one phase): each
    dataset read in its own order (`helpers.loading.epochs`), the dataset of each sample chosen by
    `helpers.loading.schedule`. Within each dataset's first epoch, a one-phase schedule is megatron-core's
    `BlendedDataset` of `GPTDataset`s sample for sample."""

    kind = "megatron"

    def __init__(self, blend: Blend, phases, settings: LoaderSettings, config: GPTDatasetConfig, facts: DataFacts):
        """`settings.num_samples` None: one epoch of one prefix, or as many samples as a blend's datasets hold."""
        self.split, self.split_name, self.config, self.facts = settings.split, settings.split_name, config, facts
        self.seq_length, self.eod_id, self.vocab_size = config.seq_length, config.eod_id, facts.vocab_size
        self.orders = []
        for k, prefix in enumerate(blend.prefixes):
            indexed = IndexedDataset(prefix)
            span = split_span(self.split, self.split_name, len(indexed))
            if span is None or span[1] <= span[0] or indexed.sequence_lengths[span[0]:span[1]].sum() <= 1:
                if any(weights[k] > 0 for _, weights in phases):
                    raise UserError(f"{prefix}: the {self.split_name} split of --split {self.split} holds no sample; "
                                    "fix: give it a larger share")
                self.orders.append(None)  # weight 0 throughout: never drawn, so an empty split is no loss
                continue
            self.orders.append(EpochOrder(indexed, span, config, self.split_name))
        num_samples = settings.num_samples
        if num_samples is None:
            num_samples = self.orders[0].per_epoch if len(self.orders) == 1 else MegatronSource._one_pass(blend,
                                                                                                         settings)
        self.num_samples = int(num_samples)
        self.mix = Mix(blend.prefixes, phases, settings.step_samples, self.num_samples,
                       global_batch=settings.global_batch)
        self._blend_layout = None  # the compiled layout's arguments for the datasets' epochs in use
        self.per_epoch = np.array([0 if order is None else order.per_epoch for order in self.orders], dtype=np.int64)
        dtype = np.result_type(*(order.token_dtype for order in self.orders if order is not None))
        self.token_dtype = dtype if dtype.kind in "iu" else np.dtype(np.int64)  # one dtype that holds every id

    def windows(self, sample_ids) -> np.ndarray:
        registry, numbers = self.mix.of(sample_ids)
        if len(self.orders) == 1:
            return self.orders[0].windows(numbers, self.token_dtype)
        out = BATCH_BLOCKS.block((numbers.size, self.seq_length + 1), self.token_dtype)
        compiled = compiled_pays(out.size, BATCH_TOKENS)  # as the whole batch's size says, not each dataset's share
        for k, rows in rows_by_dataset(self.mix.column_of(registry), len(self.orders)):
            out[rows] = self.orders[k].windows(numbers[rows], self.token_dtype, compiled)
        return out

    def finish(self, windows) -> dict[str, torch.Tensor]:
        c = self.config
        return from_windows(windows, c.eod_id, c.reset_position_ids, c.eod_mask_loss)

    def batch(self, sample_ids) -> dict[str, torch.Tensor]:
        """The batch, in this process: a batch the compiled loops pay for is laid out as each window is gathered
        (the windows are never written out whole), every dataset's rows in one compiled loop (`BlendLayout`) or,
        where it refuses, dataset by dataset (`GPTDataset.lay_out`), each by its own order."""
        sample_ids = np.asarray(sample_ids, dtype=np.int64)
        if not compiled_pays(sample_ids.size * (self.seq_length + 1), BATCH_TOKENS):
            return self.finish(self.windows(sample_ids))
        registry, numbers = self.mix.of(sample_ids)
        block = BATCH_BLOCKS.block((4, sample_ids.size, self.seq_length))
        columns = self.mix.column_of(registry)
        if not self._laid_out_together(columns, numbers, block):
            for k, rows in rows_by_dataset(columns, len(self.orders)):
                self.orders[k].lay_out(numbers[rows], rows, block)
        return batch_of(block)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_blend_layout": None}  # its arrays view the mapped tokens: a worker makes its own

    def _laid_out_together(self, columns: np.ndarray, numbers: np.ndarray, block: np.ndarray) -> bool:
        """The batch laid out by one compiled call over its datasets (`BlendLayout`), from the epochs the last batch
        used or, where a sample lies outside them, from the epoch of one of each dataset's rows; False, with nothing
        written, where a dataset's rows span two epochs, where its arrays differ in dtype from the others' or where
        one is never drawn."""
        if self._blend_layout is not None:
            if self._blend_layout.arguments is None:
                return False  # the datasets' arrays differ in dtype: in every epoch
            if self._blend_layout.lay_out(columns, numbers, block):
                return True
        if any(order is None for order in self.orders):
            return False
        epoch_of = np.array([order.latest() for order in self.orders], dtype=np.int64)
        epoch_of[columns] = numbers // self.per_epoch[columns]  # where a dataset's rows span two, the loop refuses
        self._blend_layout = BlendLayout([order.epoch(e) for order, e in zip(self.orders, epoch_of.tolist())],
                                         starts=epoch_of * self.per_epoch)
        return self._blend_layout.lay_out(columns, numbers, block)

    def cut(self) -> dict:
        """How samples are cut from each dataset: what `python -m helpers.audit ledger` needs to open them again."""
        return {"kind": self.kind, "split": self.split, "split_name": self.split_name, "seq_length": self.seq_length,
                "seed": self.config.seed, "reset_position_ids": self.config.reset_position_ids,
                "eod_mask_loss": self.config.eod_mask_loss}

    def fingerprint(self) -> str:
        """What the samples' cut depends on; the datasets and their mix may change between runs (see `Mix`)."""
        return _digest({"kind": self.kind, "split": self.split, "split_name": self.split_name,
                        "seq_length": self.seq_length, "options": [self.config.reset_position_ids,
                                                                   self.config.eod_mask_loss]})

    def describe(self) -> str:
        opened = [IndexedDataset(p) for p in self.mix.prefixes]
        documents, tokens = sum(d.document_count for d in opened), sum(d.num_tokens for d in opened)
        return (f"real data: Megatron {self.split_name} split of {describe_mix(self.mix)} ({documents:,} documents, "
                f"{tokens:,} tokens in all), tokenizer {self.facts.tokenizer} ({shown(self.facts.source)})")


def rows_by_dataset(columns: np.ndarray, datasets: int):
    """(k, the rows of dataset k, in order) for each dataset k of `datasets` that `columns` (each row's dataset)
    names, in the order of k: one stable sort of a batch's rows rather than a pass over them per dataset."""
    rows = np.argsort(columns, kind="stable")
    start = 0
    for k, end in enumerate(np.cumsum(np.bincount(columns, minlength=datasets)).tolist()):
        if end > start:
            yield k, rows[start:end]
        start = end


def describe_mix(mix: Mix) -> str:
    """`0.7 x a, 0.3 x b`, or for a schedule its phases: `step 0: 0.7 x a, 0.3 x b; step 800: ...`. Where the
    schedule's steps count another global batch than this run's (a resume), each phase by its first sample."""
    names = [Path(p).name for p in mix.prefixes]

    def weights(ws) -> str:
        return ", ".join(f"{round(w, 3)} x {name}" for w, name in zip(ws, names))

    if len(names) == 1:
        return names[0]  # all of it
    if len(mix.phases) == 1:
        return weights(mix.phases[0][1])
    if mix.samples_per_step == mix.global_batch:
        return "; ".join(f"step {step}: {weights(ws)}" for step, ws in mix.phases)
    return "; ".join(f"{phase_start(step, mix.samples_per_step, mix.global_batch)}: {weights(ws)}"
                     for step, ws in mix.phases)


def phase_start(step: int, samples_per_step: int, global_batch: int) -> str:
    """Where a phase at the schedule's `step` starts in a run of another global batch: its sample, and this run's
    step (a phase may begin inside one of its batches)."""
    sample = step * samples_per_step
    here, inside = divmod(sample, global_batch)
    return (f"sample {sample:,} (the schedule's step {step} of {samples_per_step} samples; "
            f"{'inside ' if inside else ''}step {here:,} of this run's {global_batch})")


# ---------------------------------------------------------------- a flat .npy


class NpySource(Source):
    """Fixed windows of a flat token `.npy`, overlapping by one token, shuffled per epoch.

    Opened with `np.load(mmap_mode="r")`, which reads the npy header: an `np.memmap(dtype=...)` of the
    same file would read the header's bytes as tokens.
    """

    kind = "npy"

    def __init__(self, path: Path, settings: LoaderSettings):
        self.path, self.seq_length, self.seed = Path(path), settings.seq_length, settings.seed
        split, split_name, eod_id = settings.split, settings.split_name, settings.eod_id
        self.tokens = np.load(self.path, mmap_mode="r")
        if self.tokens.ndim != 1 or self.tokens.dtype.kind not in "iu":
            raise UserError(f"{self.path}: a {self.tokens.ndim}-D {self.tokens.dtype} array; fix: give a flat "
                            "integer token array")
        sidecar = Path(f"{self.path}.json")
        meta = json.loads(sidecar.read_text()) if sidecar.exists() else {}
        self.eod_id = eod_id if eod_id is not None else meta.get("eod_id")
        windows = (self.tokens.size - 1) // self.seq_length
        span = split_span(split, split_name, windows)
        if span is None:
            raise UserError(f"--split {split} gives the {split_name} split no share; fix: give it a positive share")
        self.first_window, self.window_count = span[0], span[1] - span[0]
        self.num_samples = _window_samples(settings.num_samples, self.window_count, f"{self.path} ({split_name} split)")

    def windows(self, sample_ids) -> np.ndarray:
        window = self.first_window + permuted(np.asarray(sample_ids, np.int64), self.window_count, self.seed)
        return np.asarray(self.tokens[(window * self.seq_length)[:, None] + np.arange(self.seq_length + 1)])

    def fingerprint(self) -> str:
        return _digest({"kind": self.kind, "size": self.path.stat().st_size, "tokens": int(self.tokens.size),
                        "window": [self.first_window, self.window_count], "seq_length": self.seq_length,
                        "samples": self.num_samples})

    def describe(self) -> str:
        return (f"real data: {shown(self.path)} ({self.tokens.size:,} {self.tokens.dtype} tokens), {self.window_count:,} "
                f"windows of {self.seq_length + 1} from window {self.first_window:,}, EOD {self.eod_id}")


# ---------------------------------------------------------------- shards


class ShardSource(Source):
    """Windows inside the shards of one split (`train/` or `val/`), a random shard and a random window each
    time, drawn as a seeded permutation of every (shard, window) pair so that it resumes exactly."""

    kind = "shards"

    def __init__(self, folder: Path, settings: LoaderSettings):
        self.folder, self.seq_length, self.seed = Path(folder), settings.seq_length, settings.seed
        split_name, seq_length, eod_id = settings.split_name, settings.seq_length, settings.eod_id
        meta = json.loads((self.folder / METADATA).read_text())
        directory = {"train": "train/", "valid": "val/"}.get(split_name)
        if directory is None:
            raise UserError(f"{self.folder}: shards have train/ and val/ only, not a {split_name} split; "
                            "fix: ask for split_name='train' or 'valid'")
        self.shards = [s for s in meta["shards"] if s["file"].startswith(directory)]
        self.dtype = np.dtype(meta["dtype"])
        self.eod_id = eod_id if eod_id is not None else meta.get("eod_id")
        per_shard = np.array([max((s["tokens"] - 1) // seq_length, 0) for s in self.shards], dtype=np.int64)
        self.window_starts = np.concatenate([[0], np.cumsum(per_shard)])
        self.window_count = int(self.window_starts[-1])
        self.num_samples = _window_samples(settings.num_samples, self.window_count, f"{self.folder}/{directory}")
        self._maps: dict[int, np.ndarray] = {}

    def _shard(self, k: int) -> np.ndarray:
        if k not in self._maps:
            self._maps[k] = np.memmap(self.folder / self.shards[k]["file"], dtype=self.dtype, mode="r")
        return self._maps[k]

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_maps": {}}  # workers map the shards themselves

    def windows(self, sample_ids) -> np.ndarray:
        window = permuted(np.asarray(sample_ids, np.int64), self.window_count, self.seed)
        shard = np.searchsorted(self.window_starts, window, side="right") - 1
        start = (window - self.window_starts[shard]) * self.seq_length
        out = np.empty((window.size, self.seq_length + 1), dtype=self.dtype)
        for k in np.unique(shard):
            chosen = shard == k
            out[chosen] = self._shard(int(k))[start[chosen][:, None] + np.arange(self.seq_length + 1)]
        return out

    def fingerprint(self) -> str:
        return _digest({"kind": self.kind, "shards": self.shards, "dtype": self.dtype.name,
                        "seq_length": self.seq_length, "samples": self.num_samples})

    def describe(self) -> str:
        return (f"real data: {len(self.shards)} shards in {shown(self.folder)} ({self.window_count:,} windows of "
                f"{self.seq_length + 1}, {self.dtype.name}), EOD {self.eod_id}")


# ---------------------------------------------------------------- packed rows of whole documents


class PackedSource(Source):
    """Rows of whole documents (pieces of `seq_length` for longer ones) packed per dataset with
    `helpers.loading.packing`, blended row by row by the weights; each dataset's rows reshuffled every epoch."""

    kind = "packed"

    def __init__(self, blend: Blend, settings: LoaderSettings, pad_id: int, phases=None):
        """`settings.eod_id` is the data's (its sidecar's where none was given); `phases`: the schedule (a
        weighted blend: one phase), None for prefixes listed without weights."""
        split, split_name, seq_length = settings.split, settings.split_name, settings.seq_length
        strategy = settings.packing
        self.blend, self.split, self.split_name = blend, split, split_name
        self.seq_length, self.seed, self.strategy = seq_length, settings.seed, strategy
        self.eod_id, self.pad_id = settings.eod_id, pad_id
        num_samples = settings.num_samples
        self.datasets, self.plans, self.first_sequence = [], [], []
        for k, prefix in enumerate(blend.prefixes):
            indexed = IndexedDataset(prefix)
            span = split_span(split, split_name, len(indexed))
            if span is None or span[1] <= span[0]:
                if blend.weights is None or blend.weights[k] > 0:
                    raise UserError(f"{prefix}: the {split_name} split of --split {split} holds no document; "
                                    "fix: give it a larger share")
                span = (0, 0)  # weight 0: never drawn, so an empty split is no loss (as in the GPT samples)
            self.datasets.append(indexed)
            self.first_sequence.append(span[0])
            self.plans.append(pack(indexed.sequence_lengths[span[0]:span[1]], seq_length, strategy, overlong="split"))
        rows = [plan.rows for plan in self.plans]
        self.mix = None
        if phases is None:  # prefixes without weights: by size
            self.num_samples = sum(rows) if num_samples is None else int(num_samples)
            if self.num_samples == sum(rows):
                self.dataset_index, self.dataset_row = exhaustive_blending_indices(rows)
            else:
                self.dataset_index, self.dataset_row = blending_indices(normalize(rows), self.num_samples)
        else:
            weights = phases[0][1]
            self.num_samples = int(num_samples) if num_samples is not None else \
                max(1, int(min(r / w for r, w in zip(rows, weights) if w > 0)))
            self.mix = Mix(blend.prefixes, phases, settings.step_samples, self.num_samples,
                           global_batch=settings.global_batch)

    def _row_of(self, sample: int) -> tuple[int, int, int]:
        """(dataset position, its row number in its own order, the shuffle's salt) of global sample `sample`."""
        if self.mix is None:
            k = int(self.dataset_index[sample])
            return k, int(self.dataset_row[sample]), k + 1
        registry, number = (int(x[0]) for x in self.mix.of([sample]))
        return int(self.mix.column_of(registry)), number, registry + 1

    def batch(self, sample_ids) -> dict[str, torch.Tensor]:
        rows = []
        for sample in np.asarray(sample_ids, np.int64):
            k, number, salt = self._row_of(int(sample))
            plan, data, first = self.plans[k], self.datasets[k], self.first_sequence[k]
            row = int(permuted(np.array([number]), plan.rows, self.seed, salt=salt)[0])
            rows.append([data.get(first + d, start, length) for d, start, length in plan.segments_of_row(row)])
        return rows_batch(rows, self.seq_length, self.pad_id)

    def cut(self) -> dict:
        """How rows are packed from each dataset: what `python -m helpers.audit ledger` needs to open them again."""
        return {"kind": self.kind, "split": self.split, "split_name": self.split_name, "seq_length": self.seq_length,
                "seed": self.seed, "strategy": self.strategy}

    def fingerprint(self) -> str:
        """With a mix, the datasets and their weights may change between runs (see `Mix`); without, they may not."""
        content = {"kind": self.kind, "split": self.split, "split_name": self.split_name,
                   "seq_length": self.seq_length, "strategy": self.strategy}
        if self.mix is None:
            content.update(data=[fingerprint(p) for p in self.blend.prefixes], weights=self.blend.weights,
                           samples=self.num_samples)
        return _digest(content)

    def describe(self) -> str:
        rows = ", ".join(f"{Path(p).name}: {plan.rows:,} rows" for p, plan in zip(self.blend.prefixes, self.plans))
        return f"real data, packed ({self.strategy}, {self.seq_length} tokens a row): {self.split_name} split, {rows}"


# ---------------------------------------------------------------- synthetic, by name only


class SyntheticSource(Source):
    """Uniform random ids in [0, vocab_size): no text at all. A model cannot beat ln(vocab_size) on it."""

    kind = "synthetic"

    def __init__(self, vocab_size: int, num_samples: int, seq_length: int, seed: int):
        if not vocab_size or vocab_size < 2:
            raise UserError("synthetic data needs vocab_size (at least 2); fix: pass vocab_size=len(tokenizer)")
        if num_samples is None:
            raise UserError("synthetic data has no epoch; fix: pass num_samples (steps x batch size)")
        self.vocab_size, self.num_samples, self.seq_length, self.seed = int(vocab_size), int(num_samples), seq_length, seed

    def windows(self, sample_ids) -> np.ndarray:
        return np.stack([np.random.default_rng([self.seed, 0x5EED, int(i)]).integers(
            0, self.vocab_size, self.seq_length + 1) for i in np.asarray(sample_ids)])

    def fingerprint(self) -> str:
        return _digest({"kind": self.kind, "vocab_size": self.vocab_size, "seq_length": self.seq_length,
                        "samples": self.num_samples})

    def describe(self) -> str:
        return (f"SYNTHETIC DATA, asked for by name: uniform random ids in [0, {self.vocab_size:,}), no text; "
                f"the loss cannot fall below ln V = {math.log(self.vocab_size):.3f}")


# ---------------------------------------------------------------- telling formats apart


def _one_path(data_path) -> Path | None:
    """The one path `data_path` names (a string without spaces, a Path, or a one-element list of either,
    as Megatron prefixes are given), else None: a blend, or several prefixes."""
    if isinstance(data_path, (list, tuple)) and len(data_path) == 1:
        data_path = data_path[0]
    if isinstance(data_path, Path) or (isinstance(data_path, str) and " " not in data_path):
        return Path(data_path)
    return None


def open_source(settings: LoaderSettings) -> Source:
    """The source `settings.data_path` names, told apart by what is on disk whatever the container (a path,
    or a one-element list): a `.npy` file, a shard folder with `dataset_metadata.json`, else Megatron
    prefixes (`[prefix]`, `[w1, p1, w2, p2]`, or a string of them). A folder named like a prefix that has
    its `.idx` (megatron-core puts its index cache there) is the prefix. `settings` as `make_dataloader` hands
    them: the world size decided (a schedule's steps count its global batch)."""
    data_path = settings.data_path
    if settings.source == "synthetic":
        if settings.schedule is not None:
            raise UserError("a schedule mixes real datasets; synthetic data has none; fix: drop the schedule")
        return SyntheticSource(settings.vocab_size, settings.num_samples, settings.seq_length, settings.seed)
    if settings.source != "real":
        raise UserError(f"source must be 'real' or 'synthetic', got {settings.source!r}; "
                        "fix: source='real' (or 'synthetic' with vocab_size, for random tokens)")
    if data_path is None or (isinstance(data_path, (list, tuple)) and not data_path):
        raise DataNotFoundError("no data_path given for real data; fix: pass Megatron prefixes (make them with "
                                "python -m helpers.preprocess), or ask for source='synthetic' by name")
    single = _one_path(data_path)
    if settings.schedule is not None and single is not None and (single.suffix == ".npy" or (
            single.is_dir() and not idx_path(single).exists())):
        raise UserError(f"{single}: a schedule mixes Megatron prefixes, not a .npy or shard folder; fix: give the "
                        "prefixes of python -m helpers.preprocess, or no schedule")
    if single is not None and single.suffix == ".npy":
        if not single.exists():
            raise DataNotFoundError(f"{single}: no such token file; fix: make it with python -m helpers.preprocess "
                                    "--format npy, or correct the path")
        return NpySource(single, settings)
    if single is not None and single.is_dir() and not idx_path(single).exists():
        if not (single / METADATA).exists():
            raise DataNotFoundError(f"{single / METADATA}: no such file; fix: make shards with python -m "
                                    "helpers.preprocess --format shards, or point at a Megatron prefix")
        return ShardSource(single, settings)
    blend = parse_data_path([str(data_path)] if isinstance(data_path, Path) else data_path)
    facts = _one_tokenizer(blend, settings.tokenizer)
    settings = replace(settings, eod_id=settings.eod_id if settings.eod_id is not None else facts.eod_id)
    phases = _phases(blend, settings.schedule)
    if settings.packing is not None:
        return PackedSource(blend, settings, pad_id=settings.eod_id if settings.eod_id is not None else 0,
                            phases=phases)
    config = GPTDatasetConfig(seq_length=settings.seq_length, seed=settings.seed, eod_id=settings.eod_id,
                              reset_position_ids=settings.reset_position_ids, eod_mask_loss=settings.eod_mask_loss,
                              cache_dir=None if settings.cache_dir is None else str(settings.cache_dir))
    if phases is None:
        return MegatronSource(blend, settings, config, facts)
    return ScheduledSource(blend, phases, settings, config=config, facts=facts)


def _one_tokenizer(blend: Blend, tokenizer) -> DataFacts:
    """The data's facts (`data_facts`), the same for every prefix of the blend: ids made by two tokenizers mean
    different tokens (and the EOD of one is a word of the other), so a blend of them is refused in one line."""
    facts = data_facts(blend.prefixes[0], tokenizer)
    for prefix in blend.prefixes[1:]:
        other = data_facts(prefix, tokenizer)
        if other.fingerprint != facts.fingerprint:
            raise UserError(f"{prefix}: tokenized with {other.tokenizer}, but {blend.prefixes[0]} with "
                            f"{facts.tokenizer}, and one blend's ids must mean the same tokens; fix: preprocess every "
                            "prefix of the blend with one tokenizer")
    return facts


def _phases(blend: Blend, schedule) -> list | None:
    """The schedule's phases over the blend's prefixes: the schedule given, else the blend's weights as one phase
    (one prefix: weight 1); None for prefixes listed without weights (blended by size, every sample once)."""
    if schedule is not None:
        if blend.weights is not None and len(blend.prefixes) > 1:
            raise UserError("both a weighted data path and a schedule; fix: list the prefixes without weights and "
                            "give the weights in the schedule")
        return parse_schedule(schedule, len(blend.prefixes))
    if len(blend.prefixes) == 1:
        return [(0, (1.0,))]
    return None if blend.weights is None else [(0, tuple(blend.weights))]
