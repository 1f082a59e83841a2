"""Megatron's indexed dataset format (`.bin` + `.idx`): dtype codes and the dtype choice.

The `.idx` stores a one-byte dtype code; these are megatron-core's codes (4 is int32, 8 uint16).
"""

from __future__ import annotations

import numpy as np

DTYPE_CODES: dict[int, type] = {
    1: np.uint8,
    2: np.int8,
    3: np.int16,
    4: np.int32,
    5: np.int64,
    6: np.float64,
    7: np.float32,
    8: np.uint16,
}
CODE_OF_DTYPE = {np.dtype(t): code for code, t in DTYPE_CODES.items()}

# Megatron's preprocessing picks uint16 when the vocabulary is smaller than this, else int32.
UINT16_VOCAB_LIMIT = 65500


def optimal_dtype(vocab_size: int) -> np.dtype:
    """The token dtype Megatron writes for a vocabulary of this size: uint16 below 65,500, else int32."""
    return np.dtype(np.uint16 if vocab_size < UINT16_VOCAB_LIMIT else np.int32)
