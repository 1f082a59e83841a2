"""Notebook 07's your-turn: a MinHash signature from a document's shingles, and the estimate from two signatures.

Hash function k orders the shingles by `slot_hashes(shingles, seeds[k])`; slot k of a signature holds the shingle
that comes first. `helpers.clean` keeps that smallest hash instead (rensa), which says the same: two documents
hold the same shingle in slot k exactly when they hold the same smallest hash there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ...clean.text.shingles import shingle_set


def shingles(text: str, n: int = 5) -> np.ndarray:
    """A document's distinct shingles (runs of `n` words, each hashed to a 64-bit number), sorted, as uint64."""
    return np.array(sorted(shingle_set(text, n)), dtype=np.uint64)


PAIR = ("execmodel", "naming")   # docs: the most similar pair section 3 finds, long enough that slots rarely repeat


def pair_shingles(docs: Iterable[dict]) -> tuple[np.ndarray, np.ndarray]:
    """The shingles of the exercise's two documents, found by title among the docs domain's records."""
    texts = {r["title"]: r["text"] for r in docs}
    return shingles(texts[PAIR[0]]), shingles(texts[PAIR[1]])


def slot_hashes(shingles: np.ndarray, seed: int) -> np.ndarray:
    """One 64-bit hash per shingle under hash function `seed` (a*x + b modulo 2**64, a odd): each seed another order."""
    a, b = np.random.default_rng(seed).integers(0, 2**63, size=2, dtype=np.uint64)
    return (a | np.uint64(1)) * np.asarray(shingles, dtype=np.uint64) + b


def signature(shingles: np.ndarray, seeds: Sequence[int]) -> np.ndarray:
    """Slot k: the shingle with the smallest hash under seeds[k]."""
    shingles = np.asarray(shingles, dtype=np.uint64)
    return np.array([shingles[np.argmin(slot_hashes(shingles, seed))] for seed in seeds], dtype=np.uint64)


def estimate(first: np.ndarray, second: np.ndarray) -> float:
    """The share of slots that hold the same shingle in both signatures."""
    return float(np.mean(np.asarray(first) == np.asarray(second)))
