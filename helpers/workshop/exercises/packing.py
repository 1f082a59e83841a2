"""Notebook 05's your-turn: the document lengths it packs, and the row fills best-fit-decreasing must give."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...corpus.build import DOMAINS
from ...datasets.indexed import IndexedDataset
from ...loading.packing import pack
from ...preprocess import output_prefix


def corpus_lengths(dataset_dir: str | Path, seed: int) -> np.ndarray:
    """Every document's length in tokens, from the three domains' `.idx` files, in a shuffled order (as in
    training)."""
    lengths = np.concatenate([IndexedDataset(output_prefix(Path(dataset_dir) / name, "text"))
                              .sequence_lengths.astype(np.int64) for name in DOMAINS])
    return lengths[np.random.default_rng(seed).permutation(lengths.size)]


def row_fills(rows, lengths) -> list[int]:
    """Tokens in each row, sorted: rows (lists of indices into `lengths`) that hold the same documents up to the
    order of equally full rows give the same list."""
    lengths = np.asarray(lengths)
    return sorted(int(lengths[row].sum()) for row in rows)


def best_fit_fills(lengths, capacity: int) -> list[int]:
    """`row_fills` of `pack(..., "best_fit_decreasing")` on documents at most `capacity` long."""
    return np.sort(pack(np.asarray(lengths), capacity, "best_fit_decreasing").row_fill()).tolist()
