"""Break a copy of a dataset on purpose, one way at a time, to watch `helpers.check` catch it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from ..datasets.indexed import CODE_OF_DTYPE, HEADER, MAGIC, IndexedDataset, bin_path, idx_path


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


# The `.idx` header's fields, in the order of `HEADER`, and the arrays after it with their element types.
HEADER_FIELDS = ("magic", "version", "dtype code", "sequences", "document indices")
INDEX_ARRAYS = {"lengths": "<i4", "pointers": "<i8", "document indices": "<i8"}


def read_header(prefix: str | os.PathLike) -> dict:
    """The header's fields by name, read without any validation (the file may be damaged on purpose)."""
    with open(idx_path(prefix), "rb") as handle:
        return dict(zip(HEADER_FIELDS, HEADER.unpack(handle.read(HEADER.size))))


def set_header_field(prefix: str | os.PathLike, name: str, value) -> None:
    """Rewrite one header field (`HEADER_FIELDS`), leaving the rest of the `.idx` as it is."""
    fields = read_header(prefix)
    if name not in fields:
        raise ValueError(f"no header field {name!r}; the fields are {HEADER_FIELDS}")
    fields[name] = value
    with open(idx_path(prefix), "r+b") as handle:
        handle.write(HEADER.pack(*fields.values()))


def index_array_offset(prefix: str | os.PathLike, name: str) -> int:
    """Where an array of `INDEX_ARRAYS` starts in the `.idx`, by the header's sequence count."""
    count = read_header(prefix)["sequences"]
    return HEADER.size + {"lengths": 0, "pointers": 4 * count, "document indices": 12 * count}[name]


def set_index_entry(prefix: str | os.PathLike, name: str, position: int, value: int) -> None:
    """Overwrite entry `position` of one `.idx` array (`INDEX_ARRAYS`) with `value`."""
    kind = np.dtype(INDEX_ARRAYS[name])
    with open(idx_path(prefix), "r+b") as handle:
        handle.seek(index_array_offset(prefix, name) + position * kind.itemsize)
        handle.write(np.array([value], dtype=kind).tobytes())


def resize_bin(prefix: str | os.PathLike, change: int) -> None:
    """Cut `-change` bytes off the `.bin`, or add `change` zero bytes to it."""
    path = bin_path(prefix)
    with open(path, "r+b") as handle:
        handle.truncate(max(path.stat().st_size + change, 0))


def flip_bit(path: str | os.PathLike, bit: int) -> None:
    """Flip one bit of a file, counted from the start (bit 8·b + k is bit k of byte b)."""
    with open(path, "r+b") as handle:
        handle.seek(bit // 8)
        byte = handle.read(1)[0]
        handle.seek(bit // 8)
        handle.write(bytes([byte ^ (1 << bit % 8)]))
