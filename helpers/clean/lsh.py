"""Locality-sensitive hashing over MinHash signatures: the bands and rows a threshold calls for, the
candidate pairs (documents that agree on every row of at least one band), and the groups of verified
duplicates, of which the first document (smallest index) is kept.

Two documents of Jaccard similarity s share a band with probability 1 - (1 - s**r)**b, an S-curve whose
steepest point is near (1/b)**(1/r). `choose_bands` picks b and r (b * r <= num_perm) that minimise the
area of false positives below the threshold plus false negatives above it, with equal weights. Candidates
are then verified on the whole signature (estimated Jaccard >= threshold), which removes most of the false
positives that banding lets through, as NeMo Curator's optional false-positive check does with exact
Jaccard. The banding is the one rensa's `RMinHashLSH` does (a test checks the two find the same pairs);
doing it in numpy over a signature matrix avoids building one Python object per document.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from ..common.errors import UserError
from .shingles import estimated_jaccard

GRID = np.linspace(0.0, 1.0, 1001)


def candidate_probability(similarity, bands: int, rows: int):
    """Chance that two documents of this Jaccard similarity share at least one band."""
    return 1.0 - (1.0 - np.asarray(similarity, dtype=float) ** rows) ** bands


def check_threshold(threshold: float) -> None:
    """A Jaccard threshold is strictly between 0 and 1 (`--threshold` on the command line)."""
    if not 0.0 < threshold < 1.0:
        raise UserError(f"--threshold {threshold}: must be between 0 and 1; fix: e.g. --threshold 0.8")


def choose_bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows) with bands * rows <= num_perm minimising false-positive plus false-negative area."""
    check_threshold(threshold)
    best, best_error = (1, num_perm), float("inf")
    below, above = GRID <= threshold, GRID >= threshold
    for bands in range(1, num_perm + 1):
        for rows in range(1, num_perm // bands + 1):
            probability = candidate_probability(GRID, bands, rows)
            error = np.trapezoid(probability[below], GRID[below]) + np.trapezoid(1 - probability[above], GRID[above])
            if error < best_error:
                best, best_error = (bands, rows), error
    return best


def candidate_pairs(signatures: np.ndarray, bands: int, rows: int) -> set[tuple[int, int]]:
    """Pairs (i, j), i < j, of signature rows equal on every row of at least one band. Each band's rows
    are folded into one 64-bit key and the keys sorted, so equal bands sit side by side (two different
    bands sharing a key is a false candidate, which verification removes)."""
    factors = (np.arange(1, rows + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)
    pairs: set[tuple[int, int]] = set()
    for band in range(bands):
        block = signatures[:, band * rows:(band + 1) * rows].astype(np.uint64)
        with np.errstate(over="ignore"):
            keys = (block * factors).sum(axis=1, dtype=np.uint64)
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
        sizes = np.diff(np.append(starts, len(keys)))
        for start, size in zip(starts[sizes > 1], sizes[sizes > 1]):
            pairs.update(combinations(sorted(order[start:start + size].tolist()), 2))
    return pairs


def verified_pairs(signatures: np.ndarray, pairs, threshold: float) -> list[tuple[int, int, float]]:
    """The candidate pairs whose whole-signature estimate reaches the threshold, with that estimate."""
    if not pairs:
        return []
    ordered = np.array(sorted(pairs), dtype=np.int64)
    estimates = estimated_jaccard(signatures[ordered[:, 0]], signatures[ordered[:, 1]])
    return [(int(i), int(j), float(e)) for (i, j), e in zip(ordered, estimates) if e >= threshold]


def duplicate_groups(count: int, pairs) -> np.ndarray:
    """Union-find over the pairs: for each of `count` items, the smallest index of its group."""
    parent = np.arange(count)

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for first, second, *_ in pairs:
        a, b = root(first), root(second)
        if a != b:
            parent[max(a, b)] = min(a, b)
    return np.array([root(i) for i in range(count)], dtype=np.int64)
