"""03's your-turn, `read_idx`: the header and the three arrays of an `.idx`, as the package's reader reads them."""

from __future__ import annotations

import os

from ...datasets.indexed import MAGIC, IndexedDataset


def expected_idx(prefix: str | os.PathLike) -> dict:
    """What `read_idx(idx_path(prefix))` must return: the five header fields (ints, magic as bytes) and the arrays."""
    dataset = IndexedDataset(prefix)
    return {"magic": MAGIC, "version": dataset.version, "dtype_code": dataset.dtype_code, "sequences": len(dataset),
            "document_index_count": dataset.document_indices.size, "sequence_lengths": dataset.sequence_lengths,
            "sequence_pointers": dataset.sequence_pointers, "document_indices": dataset.document_indices}
