"""The GPT sample view of an indexed dataset, built exactly as megatron-core's `GPTDataset` builds it.

Three indices, from one `numpy.random.RandomState(seed)` in Megatron's order:

- **document index**: the split's sequence ids, tiled once per epoch and shuffled (int32); when the
  last epoch contributes fewer than 80% of an epoch's samples it is shuffled on its own, so that a
  partial epoch does not bias which documents are seen;
- **sample index** `[n+1, 2]`: where sample k starts, as (position in the document index, token
  offset). Samples are `seq_length + 1` tokens, overlap by one token, and cross document boundaries:
  sample k starts at token `k x seq_length` of the concatenated stream, found here with one
  `searchsorted` instead of a loop;
- **shuffle index**: a permutation of the samples (the last partial epoch, again, on its own).

Indices are cached on disk (when a cache folder is given) under a name that hashes the parameters
and the data's fingerprint (`helpers.datasets.indexed.fingerprint`), so a changed dataset never reuses stale
indices; a cache folder appears whole or not at all, and a damaged one is said and rebuilt. Samples
come out in the one batch layout of `helpers.datasets.layout`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..common.compiled import BATCH_TOKENS, SAMPLE_INDEX_ENTRIES, compiled_pays, jit
from ..common.errors import UserError
from ..common.files import process_alive, temporary_name
from .batch_memory import BATCH_BLOCKS
from .indexed import IndexedDataset, fingerprint
from .layout import batch_of, from_windows, layout_row

SPLITS = ("train", "valid", "test")
SEPARATE_FINAL_EPOCH_THRESHOLD = 0.80


SPLIT_SHARE = re.compile(r"\s*([0-9]+\.?[0-9]*|\.[0-9]+)\s*")
SPLIT_EXAMPLE = "write up to three shares for train, valid, test, e.g. 969,30,1 or 90,10"


def parse_split(split: str) -> list[float]:
    """'969,30,1' → normalised shares of train, valid, test (missing ones are 0), as megatron-core reads them.

    megatron-core picks every run of digits and dots out of the string, so it would read '-5,10,1' as
    5,10,1 and '90,,10' as 90,10,0; such strings are refused here, so that whatever is accepted means
    what it says and gives Megatron's fractions to the last bit. Parts are separated by ',' (or '/').
    """
    text = str(split)
    parts = text.split("," if "," in text or "/" not in text else "/")
    if len(parts) > 3:
        raise UserError(f"--split '{text}' has {len(parts)} parts; fix: {SPLIT_EXAMPLE}")
    for position, part in enumerate(parts, 1):
        if not SPLIT_SHARE.fullmatch(part):
            raise UserError(f"--split '{text}': part {position} ('{part}') is not a non-negative number; "
                            f"fix: {SPLIT_EXAMPLE}")
    values = np.array([float(p) for p in parts] + [0.0] * (3 - len(parts)), dtype=np.float64)
    total = np.sum(values)
    if total <= 0:
        raise UserError(f"--split '{text}' gives no split a share; fix: {SPLIT_EXAMPLE}")
    return (values / total).tolist()


@jit(cache=True, nogil=True)
def gather_row(tokens, sample, indices, row):  # pragma: no cover - compiled
    """`row` = the tokens of sample `sample`, as wide as `row`: from where the sample index says it starts (an
    entry of the document index and an offset in its sequence), one contiguous run of the `.bin` per sequence
    it touches, as megatron-core reads a sample. `indices`: (sample index, document index, sequence lengths,
    sequence pointers, bytes per token)."""
    sample_index, document_index, lengths, pointers, itemsize = indices
    width = row.size
    entry, offset = sample_index[sample, 0], sample_index[sample, 1]
    done = 0
    while done < width:
        if entry >= document_index.size:
            raise IndexError("a window runs past the end of the document stream")
        sequence = document_index[entry]
        take = min(lengths[sequence] - offset, width - done)
        first = pointers[sequence] // itemsize + offset
        source, target = tokens[first:first + take], row[done:done + take]
        for j in range(np.uint64(max(take, 0))):  # an unsigned index has no negative case to check: a plain copy
            target[j] = source[j]
        done += take
        entry += 1
        offset = 0


@jit(cache=True, nogil=True)
def _gather_windows(tokens, samples, indices, out):  # pragma: no cover - compiled
    """Row i of `out` = the tokens of sample `samples[i]` (`gather_row`). Nothing is built beforehand: the
    first batch of a new process costs what its rows cost. One thread, no temporary arrays."""
    for i in range(samples.size):
        gather_row(tokens, samples[i], indices, out[i])


@jit(cache=True, nogil=True)
def _gather_layout(tokens, order, sample_ids, rows, indices, layout, out):  # pragma: no cover - compiled
    """Rows `rows[i]` of `out[0..3]` laid out (`layout_row`) from the window of sample `order[sample_ids[i]]`,
    each window gathered into one small row that stays in the core's cache rather than into a batch of windows
    written out and read again. `layout`: (EOD id or -1, reset positions, mask EOD loss). Returns -1, or the
    place of the first sample id outside `order` or row outside `out`, before anything is written (the caller
    names it)."""
    for i in range(sample_ids.size):
        if sample_ids[i] < 0 or sample_ids[i] >= order.size or rows[i] < 0 or rows[i] >= out.shape[1]:
            return i
    window = np.empty(out.shape[2] + 1, dtype=tokens.dtype)
    for i in range(sample_ids.size):
        gather_row(tokens, order[sample_ids[i]], indices, window)
        layout_row(window, layout, out, rows[i])
    return -1


def _gather_windows_numpy(tokens, samples, indices, out):
    """`_gather_windows` with a numpy copy per sequence a window touches (for small batches)."""
    sample_index, document_index, lengths, pointers, itemsize = indices
    width = out.shape[1]
    for i in range(samples.size):
        entry, offset = int(sample_index[samples[i], 0]), int(sample_index[samples[i], 1])
        done = 0
        while done < width:
            if entry >= document_index.size:
                raise IndexError("a window runs past the end of the document stream")
            sequence = document_index[entry]
            take = min(int(lengths[sequence]) - offset, width - done)
            first = int(pointers[sequence]) // itemsize + offset
            out[i, done:done + take] = tokens[first:first + take]
            done += take
            entry += 1
            offset = 0


def split_bookends(split: str) -> list[tuple[float, float] | None]:
    """Cumulative (start, end) fractions per split, None for a split with no share."""
    weights = parse_split(split)
    edges = [0.0]
    for w in weights:
        edges.append(edges[-1] + w)
    return [None if end <= start else (start, end) for start, end in zip(edges[:-1], edges[1:])]


def split_ranges(split: str, num_sequences: int) -> list[tuple[int, int] | None]:
    """Sequence ranges [begin, end) of each split, with Python's `round` as Megatron uses."""
    return [None if b is None else (int(round(b[0] * float(num_sequences))), int(round(b[1] * float(num_sequences))))
            for b in split_bookends(split)]


def split_span(split: str, split_name: str, num_sequences: int) -> tuple[int, int] | None:
    """The range [begin, end) of the split called `split_name` among `num_sequences`, None where `split`
    gives it no share."""
    if split_name not in SPLITS:
        raise UserError(f"split name '{split_name}' is not one of {', '.join(SPLITS)}; fix: use one of those")
    return split_ranges(split, num_sequences)[SPLITS.index(split_name)]


def number_of_epochs(tokens_per_epoch: int, num_samples: int | None, seq_length: int) -> int:
    """Smallest E with E x tokens_per_epoch >= num_samples x seq_length + 1 (1 when num_samples is None)."""
    if num_samples is None:
        return 1
    needed = num_samples * seq_length + 1
    return max(1, -(-needed // tokens_per_epoch))


def build_document_index(documents: np.ndarray, epochs: int, rng: np.random.RandomState,
                         separate_final_epoch: bool) -> np.ndarray:
    """Document ids tiled per epoch and shuffled, as int32; the final epoch apart when asked."""
    if not separate_final_epoch or epochs == 1:
        index = np.tile(documents.astype(np.int32, copy=False), epochs)
        rng.shuffle(index)
        return index
    first = build_document_index(documents, epochs - 1, rng, False)
    last = build_document_index(documents, 1, rng, False)
    return np.concatenate([first, last])


def build_sample_index(sequence_lengths: np.ndarray, document_index: np.ndarray, seq_length: int,
                       num_samples: int) -> np.ndarray:
    """[num_samples + 1, 2]: (position in the document index, offset) where each sample starts: compiled for a
    large document index, else in numpy (`helpers.common.compiled`)."""
    if document_index.size == 0 or compiled_pays(document_index.size, SAMPLE_INDEX_ENTRIES):
        return _sample_starts(sequence_lengths, document_index, seq_length, num_samples)
    return _sample_starts_numpy(sequence_lengths, document_index, seq_length, num_samples)


def _sample_starts_numpy(sequence_lengths, document_index, seq_length, num_samples):
    """`_sample_starts` in numpy: the entry holding token k x seq_length is the first whose end (a cumulative
    sum of the entries' lengths) lies past it; starts past the stream's end stay in its last entry."""
    ends = np.cumsum(sequence_lengths[document_index], dtype=np.int64)
    starts = np.arange(num_samples + 1, dtype=np.int64) * seq_length
    entries = np.minimum(np.searchsorted(ends, starts, side="right"), document_index.size - 1)
    out = np.empty((num_samples + 1, 2), dtype=np.int64)
    out[:, 0] = entries
    out[:, 1] = starts - (ends[entries] - sequence_lengths[document_index[entries]])
    return out


@jit(cache=True)
def _sample_starts(sequence_lengths, document_index, seq_length, num_samples):  # pragma: no cover - compiled
    """Sample k starts at token k x seq_length of the documents' stream, in the entry holding that token (an
    entry ending exactly there gives way to the next); starts past the stream's end stay in its last entry.
    One pass over the document index: no array of its lengths or their sums."""
    out = np.empty((num_samples + 1, 2), dtype=np.int64)
    k, begin = 0, 0
    for entry in range(document_index.size):
        end = begin + sequence_lengths[document_index[entry]]
        while k <= num_samples and k * seq_length < end:
            out[k, 0], out[k, 1] = entry, k * seq_length - begin
            k += 1
        if k > num_samples:
            return out
        begin = end
    last = document_index.size - 1
    begin -= sequence_lengths[document_index[last]] if last >= 0 else 0
    while k <= num_samples:
        out[k, 0], out[k, 1] = last, k * seq_length - begin
        k += 1
    return out


def build_shuffle_index(num_samples: int, total: int, rng: np.random.RandomState) -> np.ndarray:
    """A permutation of [0, num_samples), then of [num_samples, total) on its own."""
    dtype = np.int64 if total >= np.iinfo(np.uint32).max - 1 else np.uint32
    first = np.arange(num_samples, dtype=dtype)
    rng.shuffle(first)
    if num_samples == total:
        return first
    last = np.arange(num_samples, total, dtype=dtype)
    rng.shuffle(last)
    return np.concatenate([first, last])


@dataclass(frozen=True)
class GPTDatasetConfig:
    """How samples are cut from a split, as Megatron's flags say it (one frozen object, passed down whole).

    `reset_position_ids` and `eod_mask_loss` are Megatron's `--reset-position-ids` and `--eod-mask-loss`;
    document boundaries always travel as `document_ids`, from which `--reset-attention-mask`'s mask follows.
    """

    seq_length: int
    seed: int = 1234
    eod_id: int | None = None
    reset_position_ids: bool = False
    eod_mask_loss: bool = False
    cache_dir: str | None = None

    def __post_init__(self):
        if self.seq_length < 1:
            raise UserError(f"seq_length must be at least 1, got {self.seq_length}; fix: e.g. seq_length=2048")
        if (self.reset_position_ids or self.eod_mask_loss) and self.eod_id is None:
            raise UserError("document-aware samples need the EOD id; fix: pass eod_id (the sidecar has it)")


@dataclass(frozen=True)
class SampleIndices:
    document_index: np.ndarray
    sample_index: np.ndarray
    shuffle_index: np.ndarray
    epochs: int
    tokens_per_epoch: int


INDEX_NAMES = ("document_index", "sample_index", "shuffle_index")


def _no_samples() -> SampleIndices:
    """The indices of a dataset with no sample: no document drawn, no epoch, one sample boundary."""
    return SampleIndices(document_index=np.zeros(0, np.int32), sample_index=np.zeros((1, 2), np.int64),
                         shuffle_index=np.zeros(0, np.uint32), epochs=0, tokens_per_epoch=0)


def _distributed_rank() -> int | None:
    """This process's rank when torch.distributed runs several processes, else None."""
    if torch.distributed.is_available() and torch.distributed.is_initialized() \
            and torch.distributed.get_world_size() > 1:
        return torch.distributed.get_rank()
    return None


class GPTDataset(torch.utils.data.Dataset):
    """Samples of `seq_length + 1` tokens from one split of an indexed dataset, as megatron-core makes them.

    `ds[i]` is one sample in the layout of `helpers.datasets.layout` (1-D tensors); `ds.windows(ids)` gathers
    the raw `[n, seq_length + 1]` token windows of many samples in one vectorised pass.
    """

    def __init__(self, prefix: str | os.PathLike, split_range: tuple[int, int], num_samples: int | None,
                 config: GPTDatasetConfig, split_name: str = "train", dataset: IndexedDataset | None = None):
        self.prefix = Path(prefix)
        self.dataset = dataset or IndexedDataset(prefix)
        self.config = config
        self.split_name, self.split_range, self.num_samples_requested = split_name, split_range, num_samples
        self.seq_length = config.seq_length
        begin, end = split_range
        self.documents = np.arange(begin, end, dtype=np.int32)
        tokens = int(self.dataset.sequence_lengths[begin:end].sum(dtype=np.int64))
        if tokens <= 1 and (num_samples is None or num_samples > 0):
            raise UserError(f"{self.prefix}: the {split_name} split gets sequences [{begin}, {end}) holding "
                            f"{tokens} tokens, but samples are asked of it ({num_samples or 'one epoch'}); "
                            "fix: give it a larger share in --split or ask for no samples")
        indices = self._load_or_build(tokens)
        self.document_index, self.sample_index, self.shuffle_index = \
            indices.document_index, indices.sample_index, indices.shuffle_index
        self.epochs, self.tokens_per_epoch = indices.epochs, indices.tokens_per_epoch

    # ------------------------------------------------------------ index building

    def description(self) -> dict:
        return {"class": "GPTDataset", "prefix": str(self.prefix.resolve()), "split": self.split_name,
                "range": list(self.split_range), "num_samples": self.num_samples_requested,
                "seq_length": self.seq_length, "seed": self.config.seed, "files": fingerprint(self.prefix)}

    def _build(self, tokens_per_epoch: int) -> SampleIndices:
        if tokens_per_epoch == 0:  # an empty split asked for no samples (the constructor refuses the rest)
            return _no_samples()
        epochs = number_of_epochs(tokens_per_epoch, self.num_samples_requested, self.seq_length)
        separate = False
        if epochs > 1:
            before_final = ((epochs - 1) * tokens_per_epoch - 1) // self.seq_length
            from_final = self.num_samples_requested - before_final
            per_epoch = (tokens_per_epoch - 1) // self.seq_length
            separate = from_final < int(SEPARATE_FINAL_EPOCH_THRESHOLD * per_epoch)
        rng = np.random.RandomState(self.config.seed)
        document_index = build_document_index(self.documents, epochs, rng, separate)
        num_samples = (epochs * tokens_per_epoch - 1) // self.seq_length
        sample_index = build_sample_index(self.dataset.sequence_lengths, document_index, self.seq_length, num_samples)
        first = before_final if separate else num_samples
        shuffle_index = build_shuffle_index(first, num_samples, rng)
        return SampleIndices(document_index=document_index, sample_index=sample_index, shuffle_index=shuffle_index,
                             epochs=epochs, tokens_per_epoch=tokens_per_epoch)

    def _load_or_build(self, tokens_per_epoch: int) -> SampleIndices:
        """Build the indices, or load them from `config.cache_dir`; under torch.distributed rank 0 builds
        and saves while the other ranks wait at a barrier, then load its files."""
        if self.config.cache_dir is None:
            return self._build(tokens_per_epoch)
        description = json.loads(json.dumps(self.description(), sort_keys=True))
        key = hashlib.sha256(json.dumps(description, sort_keys=True).encode()).hexdigest()[:16]
        folder = Path(self.config.cache_dir) / f"gpt-{self.split_name}-{key}"
        rank = _distributed_rank()
        if rank not in (None, 0):
            torch.distributed.barrier()
            return _load_indices(folder, description)
        indices = _cached_indices(folder, description)
        if indices is None:
            indices = self._build(tokens_per_epoch)
            _save_indices(folder, indices, description)
        if rank == 0:
            torch.distributed.barrier()
        return indices

    # ------------------------------------------------------------ samples

    def __len__(self) -> int:
        return self.sample_index.shape[0] - 1

    @property
    def token_dtype(self) -> np.dtype:
        """The `.bin`'s dtype: windows in it are the fewest bytes to hand from a worker to the main process."""
        return self.dataset.dtype

    def windows(self, sample_ids, dtype=np.int64, compiled: bool | None = None) -> np.ndarray:
        """`[n, seq_length + 1]` token windows (int64 unless `dtype` says) of samples `sample_ids` (after
        shuffling), gathered in one pass. Sample j is tokens `j x seq_length ...` of the shuffled documents'
        stream: its `.bin` positions run on by one, and jump only where the window enters the next document
        of the document index. In recycled memory (`batch_memory`): fresh memory costs a fault per page.
        `compiled`: gather with the compiled loop or its twin, as the whole batch's size says when these windows
        are part of one (`helpers.common.compiled`); None: as their own size says."""
        samples = self._shuffled(sample_ids)
        out = BATCH_BLOCKS.block((samples.size, self.seq_length + 1), dtype)
        data = self.dataset
        if compiled is None:
            compiled = compiled_pays(out.size, BATCH_TOKENS)
        gather = _gather_windows if compiled else _gather_windows_numpy
        gather(data.tokens, samples, self._indices(), out)
        return out

    def _shuffled(self, sample_ids) -> np.ndarray:
        sample_ids = np.asarray(sample_ids, dtype=np.int64)
        if sample_ids.size and (sample_ids.min() < 0 or sample_ids.max() >= len(self)):
            raise IndexError(f"samples {sample_ids.min()}..{sample_ids.max()} out of range for {len(self)} samples")
        return self.shuffle_index[sample_ids].astype(np.int64)

    def _indices(self) -> tuple:
        data = self.dataset
        return self.sample_index, self.document_index, data.sequence_lengths, data.sequence_pointers, \
            data.dtype.itemsize

    def layout_inputs(self) -> tuple:
        """What the compiled gather-and-layout reads besides the batch's samples: the tokens, the shuffled samples
        (looked up and checked in its loop), the indices and the layout; made at the first batch, not pickled."""
        made = self.__dict__.get("_layout_made")
        if made is None:
            c = self.config
            layout = (-1 if c.eod_id is None else int(c.eod_id), bool(c.reset_position_ids), bool(c.eod_mask_loss))
            made = self._layout_made = (self.dataset.tokens, self.shuffle_index[:len(self)], self._indices(), layout)
        return made

    def __getstate__(self) -> dict:
        return {key: value for key, value in self.__dict__.items() if key != "_layout_made"}

    def lay_out(self, sample_ids, rows: np.ndarray, out: np.ndarray) -> None:
        """Rows `rows` of `out` (`[4, B, seq_length]` int64) = samples `sample_ids` in the layout of
        `helpers.datasets.layout`, compiled, each window gathered and laid out in one go (the layout of
        `windows()` without writing the windows out: for batches the compiled loops pay for)."""
        sample_ids, rows = np.asarray(sample_ids, dtype=np.int64), np.asarray(rows, dtype=np.int64)
        if out.shape[0] != 4 or out.shape[2:] != (self.seq_length,) or out.dtype != np.int64 or \
                rows.shape != sample_ids.shape:
            raise ValueError(f"out is {out.dtype} {list(out.shape)} with {rows.size} rows for {sample_ids.size} "
                             f"samples; it must be int64 [4, B, {self.seq_length}], one row per sample")
        tokens, order, indices, layout = self.layout_inputs()
        if _gather_layout(tokens, order, sample_ids, rows=rows, indices=indices, layout=layout, out=out) >= 0:
            self._shuffled(sample_ids)  # says which samples are out of range, else the rows are
            raise IndexError(f"rows {rows.min()}..{rows.max()} out of range for the {out.shape[1]} rows of out")

    def batch(self, sample_ids) -> dict[str, torch.Tensor]:
        """Samples `sample_ids` as one batch in the layout of `helpers.datasets.layout`."""
        c = self.config
        sample_ids = np.asarray(sample_ids, dtype=np.int64)
        if not compiled_pays(sample_ids.size * (self.seq_length + 1), BATCH_TOKENS):
            return from_windows(self.windows(sample_ids), c.eod_id, c.reset_position_ids, c.eod_mask_loss)
        block = BATCH_BLOCKS.block((4, sample_ids.size, self.seq_length))
        self.lay_out(sample_ids, np.arange(sample_ids.size), block)
        return batch_of(block)

    def documents_seen(self, sample_ids) -> np.ndarray:
        """For each sequence of the split (in order), how many times samples `sample_ids` (after shuffling) hold
        at least one of its tokens: each time it appears in the document index (once per epoch), 1 or 0."""
        shuffled = self.shuffle_index[np.asarray(sample_ids, dtype=np.int64)].astype(np.int64)
        first, last = self.sample_index[shuffled, 0], self.sample_index[shuffled + 1, 0]
        change = np.zeros(self.document_index.size + 1, dtype=np.int64)
        np.add.at(change, first, 1)
        np.add.at(change, last + 1, -1)
        touched = np.cumsum(change[:-1]) > 0  # per entry of the document index
        begin, end = self.split_range
        return np.bincount(self.document_index[touched].astype(np.int64) - begin, minlength=end - begin)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        if not -len(self) <= i < len(self):
            raise IndexError(f"sample {i} out of range for {len(self)} samples")
        return {k: v[0] for k, v in self.batch([i % len(self)]).items()}


# ------------------------------------------------------------ the index cache
#
# A cache folder holds the three indices as .npy files and `description.json`. It is written under a
# hidden temporary name (unique to host, process and thread) and renamed into place whole, so a failed
# or killed save never leaves a folder under the final name; a damaged folder is said and rebuilt.


class DamagedCacheError(UserError):
    """A cache folder that cannot be read back, or whose files disagree with each other."""

    def __init__(self, folder: Path, problem: str):
        self.folder, self.problem = folder, problem
        super().__init__(f"{folder}: cached indices are damaged ({problem}); fix: remove that folder "
                         "(rank 0 rebuilds it)")


def _load_indices(folder: Path, description: dict) -> SampleIndices:
    """The indices cached in `folder`, checked against each other and `description`."""
    try:
        meta = json.loads((folder / "description.json").read_text())
        epochs, tokens_per_epoch = int(meta.pop("epochs")), int(meta.pop("tokens_per_epoch"))
        arrays = [np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in INDEX_NAMES]
    except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError) as err:
        problem = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else 'unreadable'}"
    else:
        indices = SampleIndices(*arrays, epochs, tokens_per_epoch)
        problem = "it describes other data" if meta != description else _inconsistency(indices, description)
        if problem is None:
            return indices
    raise DamagedCacheError(folder, problem)


def _inconsistency(indices: SampleIndices, description: dict) -> str | None:
    """What is wrong with the shapes and types of cached indices, or None."""
    begin, end = description["range"]
    documents, samples, shuffle = indices.document_index, indices.sample_index, indices.shuffle_index
    if documents.dtype != np.int32 or documents.shape != ((end - begin) * indices.epochs,):
        return f"document index {documents.dtype} {documents.shape}"
    if samples.dtype != np.int64 or samples.ndim != 2 or samples.shape[0] < 1 or samples.shape[1] != 2:
        return f"sample index {samples.dtype} {samples.shape}"
    if shuffle.dtype not in (np.uint32, np.int64) or shuffle.shape != (samples.shape[0] - 1,):
        return f"shuffle index {shuffle.dtype} {shuffle.shape} for {samples.shape[0] - 1} samples"
    return None


def _cached_indices(folder: Path, description: dict) -> SampleIndices | None:
    """The indices cached in `folder`, or None when there are none; a damaged folder is said and removed."""
    if not folder.exists():
        return None
    try:
        return _load_indices(folder, description)
    except DamagedCacheError as err:
        print(f"warning: {folder}: cached indices are damaged ({err.problem}); rebuilding them", file=sys.stderr)
    aside = _temporary_name(folder, "old")
    try:
        os.replace(folder, aside)
    except FileNotFoundError:  # another process moved it first
        pass
    shutil.rmtree(aside, ignore_errors=True)
    return None


TEMPORARY = re.compile(r"\.(?P<name>.+)\.(?P<purpose>new|old)-(?P<thread>\d+)@(?P<host>.*)\.tmp-(?P<pid>\d+)")


def _temporary_name(folder: Path, purpose: str) -> Path:
    """A hidden sibling of `folder` that no other host, process or thread uses at the same time."""
    return temporary_name(folder, f"{purpose}-{threading.get_ident()}@{socket.gethostname()}")


def _remove_dead_temporaries(cache_dir: Path) -> None:
    """Remove the cache's temporaries left by processes of this host that are gone (killed mid-save)."""
    for path in cache_dir.glob(".*.tmp-*"):
        match = TEMPORARY.fullmatch(path.name)
        if match and match["host"] == socket.gethostname() and not process_alive(int(match["pid"])):
            shutil.rmtree(path, ignore_errors=True)


def _save_indices(folder: Path, indices: SampleIndices, description: dict) -> None:
    """Write under a temporary name, `description.json` last, and rename the folder into place; a failure
    leaves nothing, and another process finishing the same folder first is fine."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    _remove_dead_temporaries(folder.parent)
    tmp = _temporary_name(folder, "new")
    try:
        tmp.mkdir()
        for name in INDEX_NAMES:
            np.save(tmp / f"{name}.npy", getattr(indices, name))
        (tmp / "description.json").write_text(json.dumps(
            {**description, "epochs": indices.epochs, "tokens_per_epoch": indices.tokens_per_epoch}, indent=2))
        os.replace(tmp, folder)
    except OSError:
        if not (folder / "description.json").exists():  # not just another process finishing first
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
