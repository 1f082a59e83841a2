"""Near copies of known similarity, to measure what near-duplicate removal catches.

    from helpers.workshop.explore.near_duplicates import word_pieces, plant_copies, write_records
    originals = word_pieces(texts, words=200, limit=300)     # real text, cut into documents of 200 words
    copies = plant_copies(originals, most_changed=9, seed=0)  # (copy, its exact Jaccard with the original)

A copy is its original with 1 to `most_changed` words replaced by words found nowhere else, at random
places; its similarity is measured, not assumed (the exact Jaccard of word 5-grams, as `helpers.clean`
counts them). Used by notebook 07, its solutions and `benchmarks/near_duplicates.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ...clean.text.shingles import exact_jaccard


def word_pieces(texts: Iterable[str], words: int, limit: int, seed: int | None = None) -> list[str]:
    """Consecutive runs of `words` words (joined by one space) from `texts`, at most `limit` of them: the
    first ones in order, or with `seed`, a random choice of all of them."""
    pieces = []
    for text in texts:
        split = text.split()
        pieces += [" ".join(split[i:i + words]) for i in range(0, len(split) - words + 1, words)]
        if seed is None and len(pieces) >= limit:
            break
    if seed is None:
        return pieces[:limit]
    return [pieces[i] for i in np.random.default_rng(seed).permutation(len(pieces))[:limit]]


def plant_copies(originals: Sequence[str], most_changed: int, seed: int,
                 least_changed: int = 1) -> list[tuple[str, float]]:
    """For each original, a copy with `least_changed` to `most_changed` words replaced, and the exact
    Jaccard of the two."""
    rng = np.random.default_rng(seed)
    out = []
    for number, text in enumerate(originals):
        words = text.split()
        for position in rng.choice(len(words), rng.integers(least_changed, most_changed + 1), replace=False):
            words[position] = f"planted{number}x{position}x{rng.integers(10**6)}"
        copy = " ".join(words)
        out.append((copy, exact_jaccard(text, copy)))
    return out


def write_records(path: Path, records: Iterable[tuple[str, str]]) -> Path:
    """(id, text) pairs as JSONL records."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": key, "text": text}) + "\n" for key, text in records), encoding="utf-8")
    return path
