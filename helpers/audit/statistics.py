"""The numbers each check of `helpers.audit` rests on, for one batch, with no state.

Random ids. Real text repeats itself: in any window of 128 tokens some ids come back (spaces,
punctuation, "the", indentation). Ids drawn uniformly from V values collide like birthdays: the number of
equal pairs in a window of n has mean n(n-1)/2V and about that variance. A window counts as uniform when
its equal pairs stay within that mean plus `SIGMAS` standard deviations plus `SLACK`: of a million
simulated uniform windows each for V = 258, 1,024, 8,192 and 32,000, none went past it (the most: 68
pairs against a bound of 71 for V = 258, 10 against 13 for V = 8,192). On real text it is the other way
round: over every 128-token window of the first 400 documents of each domain of the workshop corpus, for
the five tokenizers of the zoo (`benchmarks/audit_margins.py`), the fewest pairs a real window had was 1.47
times the bound or more (the trained 8k BPE: 19 pairs against 13; bytes on code: 136 against 71; Llama 3
and cl100k: 21 against under 8). Windows, not whole batches, so a row whose second half was replaced is
caught too.

Wrapped ids. A vocabulary above 65,536 kept in uint16 loses the top bit of every id from 65,536 up. Real
text uses those ids: 1.7% to 2.4% of Llama 3's and cl100k's tokens on every domain here, so 4,096 tokens
without one happen to real text with odds below 10^-29; that many tokens with none is a finding, and so is
a batch handed over as uint16 for such a vocabulary.
"""

from __future__ import annotations

import math

import numpy as np

WINDOW = 128  # tokens per window of the random-ids test
SIGMAS, SLACK = 6.0, 6.0
WRAP_LIMIT = 1 << 16
WRAP_TOKENS = 4096  # tokens without an id >= 65,536 before a large vocabulary counts as wrapped
MATCHES = 0.99  # share of label positions that must agree for a label layout to count as the one used


def uniform_bound(length: int, vocab_size: int) -> tuple[float, float]:
    """(mean equal pairs of a uniform draw of `length` ids, the most a window may have to count as one)."""
    mean = length * (length - 1) / (2 * vocab_size)
    return mean, mean + SIGMAS * math.sqrt(mean) + SLACK


def window_pairs(windows: np.ndarray) -> np.ndarray:
    """Equal pairs in each row of `windows`, all rows at once: sorted, each position counts the equal ids
    before it in its run."""
    ordered = np.sort(windows, axis=1)
    index = np.broadcast_to(np.arange(ordered.shape[1]), ordered.shape)
    starts = np.ones(ordered.shape, bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    run_start = np.maximum.accumulate(np.where(starts, index, 0), axis=1)
    return (index - run_start).sum(axis=1)


def uniform_windows(ids: np.ndarray, vocab_size: int) -> tuple[int, int, float, float, float]:
    """Over the windows of `WINDOW` tokens of each row (a row shorter than that is one window): (windows,
    windows that look uniform, the fewest equal pairs a window had, a uniform draw's mean pairs and the bound
    for a window)."""
    rows, length = ids.shape
    size = min(WINDOW, length)
    count = length // size
    pairs = window_pairs(ids[:, :count * size].reshape(rows * count, size))
    mean, bound = uniform_bound(size, vocab_size)
    return len(pairs), int((pairs <= bound).sum()), float(pairs.min()), mean, bound


def unigram_entropy(counts: np.ndarray) -> float:
    """Entropy in nats of the ids' frequencies."""
    counts = counts[counts > 0]
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def label_matches(ids: np.ndarray, labels: np.ndarray, ignore_index: int) -> dict[str, float | None]:
    """Share of the label positions (ignored ones aside) where labels equal the ids at the same place
    ("same"), one place on ("shifted") and two places on ("shifted twice"); None where none is compared."""
    shares = {}
    for name, shift in (("same", 0), ("shifted", 1), ("shifted twice", 2)):
        if ids.shape[1] <= shift:
            shares[name] = None
            continue
        y = labels[:, :labels.shape[1] - shift]
        x = ids[:, shift:]
        used = y != ignore_index
        shares[name] = float((y[used] == x[used]).mean()) if used.any() else None
    return shares


def padding_positions(ids: np.ndarray, attention_mask: np.ndarray | None, pad_id: int | None,
                      eod_id: int | None) -> np.ndarray:
    """Where a row is padding: the attention mask's zeros, else ids equal to `pad_id`; where the pad id is
    also the end-of-document id, only a run of two or more of it that ends the row."""
    if attention_mask is not None:
        return attention_mask == 0
    if pad_id is None:
        return np.zeros(ids.shape, bool)
    pads = ids == pad_id
    if pad_id != eod_id:
        return pads
    trailing = np.flip(np.cumprod(np.flip(pads, axis=1), axis=1), axis=1).astype(bool)  # the run ending a row
    return trailing & (trailing.sum(axis=1, keepdims=True) >= 2)
