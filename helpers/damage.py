"""Break a copy of a dataset on purpose, one way at a time, to watch `helpers.check` catch it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from .indexed import CODE_OF_DTYPE, MAGIC, IndexedDataset, bin_path, idx_path


def copy_dataset(prefix: str | os.PathLike, new_prefix: str | os.PathLike) -> Path:
    """Copy a `.bin/.idx` pair under a new prefix."""
    Path(new_prefix).parent.mkdir(parents=True, exist_ok=True)
    for path in (bin_path, idx_path):
        shutil.copyfile(path(prefix), path(new_prefix))
    return Path(new_prefix)


def truncate_bin(prefix: str | os.PathLike, keep_fraction: float = 0.9) -> None:
    """Cut the end off the `.bin`, as an interrupted copy would."""
    path = bin_path(prefix)
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        handle.truncate(int(size * keep_fraction))


def set_dtype_code(prefix: str | os.PathLike, dtype) -> None:
    """Rewrite the header's dtype code only (the data stays as written)."""
    offset = len(MAGIC) + 8  # the code sits after the magic and the u64 version
    with open(idx_path(prefix), "r+b") as handle:
        handle.seek(offset)
        handle.write(bytes([CODE_OF_DTYPE[np.dtype(dtype)]]))


def write_token(prefix: str | os.PathLike, position: int, value: int) -> None:
    """Overwrite the token at a flat position of the `.bin` with another value."""
    dtype = IndexedDataset(prefix).dtype
    with open(bin_path(prefix), "r+b") as handle:
        handle.seek(position * dtype.itemsize)
        handle.write(np.array([value], dtype=dtype).tobytes())
