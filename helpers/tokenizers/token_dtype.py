"""The token dtype a vocabulary needs on disk: what Megatron's preprocessing picks for its size."""

from __future__ import annotations

import numpy as np

# Megatron's preprocessing picks uint16 when the vocabulary is smaller than this, else int32.
UINT16_VOCAB_LIMIT = 65500


def optimal_dtype(vocab_size: int | None) -> np.dtype:
    """The token dtype Megatron writes for a vocabulary of this size: uint16 below 65,500, else int32
    (also when the size is unknown, None, as Megatron's `DType.optimal_dtype` does)."""
    return np.dtype(np.uint16 if vocab_size is not None and vocab_size < UINT16_VOCAB_LIMIT else np.int32)
