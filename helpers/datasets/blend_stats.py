"""What a blend does to its sources, measured: the greedy rule's state, its period, and how often
each token is read.

- `greedy_lags`: for each step of the blending index, every source's lag `w x max(i, 1) - count`
  before the pick (the rule takes the largest); when all lags are back to zero the order starts over;
- `repeat_period`: the smallest p with `index[i] == index[i - p]` all along, or None; `first_repeat`:
  from which sample on the order repeats, and its period;
- `token_reads`: how many times each token of a GPTDataset's split is read as a model input by a
  set of its samples (sample j reads tokens `j x S ... j x S + S - 1` of its shuffled stream);
- `random_window_reads`: the same count for windows that start anywhere at random, drawn with
  replacement, as loaders that call `randint(0, len(tokens) - S)` for each sample do;
- `read_summary`: mean reads, the share of tokens never read, the share read more than the mean asks.
"""

from __future__ import annotations

import math

import numpy as np

from .blending import blending_indices, normalize
from .gpt_dataset import GPTDataset


def greedy_lags(weights, samples: int) -> tuple[np.ndarray, np.ndarray]:
    """(picks, lags): the source of each of the first `samples` blend samples, and `[samples, sources]`
    lags `w x max(i, 1) - count` that the rule compared before each pick."""
    weights = np.asarray(normalize(list(weights)), dtype=np.float64)
    picks, _ = blending_indices(weights.tolist(), samples)
    picked = np.zeros((samples, weights.size), dtype=np.int64)
    picked[np.arange(samples), picks] = 1
    before = np.cumsum(picked, axis=0) - picked
    steps = np.maximum(np.arange(samples), 1).astype(np.float64)
    return picks.astype(np.int64), weights[None, :] * steps[:, None] - before


def repeat_period(index: np.ndarray, longest: int | None = None) -> int | None:
    """Smallest p (up to `longest`, default half the length) with `index[i] == index[i - p]` for every i."""
    index = np.asarray(index)
    longest = index.size // 2 if longest is None else min(longest, index.size - 1)
    for period in range(1, longest + 1):
        if np.array_equal(index[period:], index[:-period]):
            return period
    return None


def first_repeat(index: np.ndarray, longest: int | None = None) -> tuple[int, int] | None:
    """(start, period): the earliest sample from which `index` repeats with a period of at most `longest`
    (the smallest such period), seen at least twice; None when none does. The greedy blend repeats from
    0, or only later when its first picks (lags `w`, not zero) or float rounding of ties differ."""
    index = np.asarray(index)
    longest = index.size // 3 if longest is None else min(longest, index.size // 3)
    best = None
    for period in range(1, longest + 1):
        differ = np.flatnonzero(index[period:] != index[:-period])
        start = int(differ[-1]) + 1 if differ.size else 0
        if start + 2 * period <= index.size and (best is None or start < best[0]):
            best = (start, period)
    return best


def _reads_on_stream(starts: np.ndarray, seq_length: int, stream_length: int) -> np.ndarray:
    """Reads per stream position of windows `[start, start + seq_length)`, by a difference array."""
    change = np.zeros(stream_length + 1, dtype=np.int64)
    np.add.at(change, starts, 1)
    np.add.at(change, np.minimum(starts + seq_length, stream_length), -1)
    return np.cumsum(change[:-1])


def token_reads(dataset: GPTDataset, sample_ids) -> np.ndarray:
    """Per token of `dataset`'s split (in `.bin` order), how many of samples `sample_ids` read it as an
    input. Samples are addressed as `dataset[i]` addresses them (through the shuffle index)."""
    sample_ids = np.asarray(sample_ids, dtype=np.int64)
    seq_length = dataset.seq_length
    indexed = dataset.dataset
    lengths = indexed.sequence_lengths[dataset.document_index].astype(np.int64)
    entry_starts = np.concatenate([[0], np.cumsum(lengths)])
    stream = _reads_on_stream(dataset.shuffle_index[sample_ids].astype(np.int64) * seq_length, seq_length,
                              int(entry_starts[-1]))
    read = np.flatnonzero(stream)
    entry = np.searchsorted(entry_starts, read, side="right") - 1
    begin, end = dataset.split_range
    itemsize = indexed.dtype.itemsize
    split_first = int(indexed.sequence_pointers[begin]) // itemsize if end > begin else 0
    element = indexed.sequence_pointers[dataset.document_index[entry]] // itemsize + (read - entry_starts[entry])
    return np.bincount(element - split_first, weights=stream[read],
                       minlength=dataset.tokens_per_epoch).astype(np.int64)


def random_window_reads(num_tokens: int, seq_length: int, windows: int, seed: int) -> np.ndarray:
    """Per token of a `num_tokens` stream, reads by `windows` windows of `seq_length` tokens whose starts
    are drawn uniformly with replacement from `[0, num_tokens - seq_length)`."""
    starts = np.random.default_rng(seed).integers(0, num_tokens - seq_length, size=windows)
    return _reads_on_stream(starts, seq_length, num_tokens)


def read_summary(reads: np.ndarray) -> dict[str, float]:
    """Mean reads per token, the share of tokens never read, the share read more often than the mean
    rounded up (what an even order never does), and the most reads of one token."""
    reads = np.asarray(reads)
    mean = float(reads.sum()) / reads.size
    return {"mean": mean, "unread": float((reads == 0).mean()),
            "over": float((reads > math.ceil(mean - 1e-9)).mean()), "max": int(reads.max(initial=0))}
