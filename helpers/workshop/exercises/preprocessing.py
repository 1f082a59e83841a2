"""Notebook 02's exercise: what preprocessing wrote for a corpus's first documents, to compare
`tokens_and_lengths` against."""

from __future__ import annotations

import json
import os

import numpy as np

from ...datasets.indexed import IndexedDataset


def first_documents(jsonl_path: str | os.PathLike, prefix: str | os.PathLike, count: int
                    ) -> tuple[list[str], tuple[np.ndarray, np.ndarray]]:
    """The texts of the first `count` records of `jsonl_path`, and what the dataset at `prefix` (preprocessed
    from that file) holds for them: (their tokens back to back, their sequence lengths)."""
    with open(jsonl_path, encoding="utf-8") as handle:
        texts = [json.loads(next(handle))["text"] for _ in range(count)]
    written = IndexedDataset(prefix)
    lengths = written.sequence_lengths[:count]
    return texts, (np.array(written.tokens[:lengths.sum()]), np.array(lengths))
