"""The band stage of `--fuzzy` in memory bounded by a setting: band keys on disk, buckets a slice at a time.

Workers never send signatures back. As each batch of texts is signed, a worker folds every band of every
signature into one 64-bit key (`lsh.band_keys`) and appends it to that band's file for its range (8 bytes
a document a band; the 520-byte signature is dropped). The driver reads one band at a time, range after
range, with plain reads (no memory map, so nothing of the files stays resident):

- when a band's keys, their sort order and the sorted copy fit the memory budget, it sorts them at once;
- otherwise it cuts the keys by their top bits into 2^k slices that each fit, and reads the band once per
  slice, keeping only the keys of that slice. Equal keys fall in one slice, and slices come in ascending
  order of their top bits, so the buckets come out in the same order as from one sort: the groups found do
  not depend on the budget (a test runs both ways).

`--memory-limit` is the whole driver's budget. Besides the band stage the driver holds, per document, the
run's table and the union-find (`DRIVER_BYTES_PER_DOCUMENT`, an estimate from the arrays it keeps: about 100
bytes of table, 60 for the fuzzy stage); what is left is the band stage's. A limit that leaves no room for one slice is refused in one line, before anything is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np

from ...common.errors import UserError
from ..text.lsh import sorted_buckets

KEY_BYTES = 8
# held per key while a slice is sorted: key and row (twice while the chunks are joined), the sort order, the
# sorted copy, and the starts and sizes of the runs of equal keys (measured: about 67 bytes at 4M keys)
SORT_BYTES_PER_KEY = 9 * KEY_BYTES
READ_CHUNK_KEYS = 1 << 20  # keys read at a time when a band is sliced (8 MiB)
DRIVER_BYTES_PER_DOCUMENT = 160  # the run's table (about 100 bytes a record) and the fuzzy stage's arrays
MIN_BAND_BUDGET = 32 << 20  # the least the band stage works in: a read chunk and a slice beside it
MIN_MEMORY_LIMIT = 64 << 20  # below this, one batch of signing (16 MB of text) does not fit
SIZE_UNITS = {"": 1, "B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}


def parse_size(text: str, flag: str = "--memory-limit") -> int:
    """Bytes from `2GB`, `512MB`, `1.5GB` or a plain number of bytes (units of 1024); a UserError naming
    `flag` otherwise."""
    cleaned = text.strip().upper().replace("IB", "B").replace(" ", "")
    number = cleaned.rstrip("KMGTB")
    unit = cleaned[len(number):]
    try:
        value = float(number) * SIZE_UNITS[unit]
    except (KeyError, ValueError):
        raise UserError(f"{flag} {text!r} is not a size; fix: write it as 2GB, 512MB or a number of bytes") from None
    if value < MIN_MEMORY_LIMIT:
        raise UserError(f"{flag} {text} is too small: one batch of signing needs {MIN_MEMORY_LIMIT >> 20}MB; "
                        f"fix: {flag} {MIN_MEMORY_LIMIT >> 20}MB or more")
    return int(value)


def band_budget(memory_limit: int, documents: int, flag: str = "--memory-limit") -> int:
    """The bytes the band stage may hold when the driver holds `documents` records under `memory_limit`;
    a UserError naming `flag` and the limit that would do when that leaves less than one slice's room."""
    budget = memory_limit - documents * DRIVER_BYTES_PER_DOCUMENT
    if budget < MIN_BAND_BUDGET:
        needed = documents * DRIVER_BYTES_PER_DOCUMENT + MIN_BAND_BUDGET
        raise UserError(f"{flag} {memory_limit >> 20}MB is too small for the {documents:,} documents of this "
                        f"run (the driver holds about {DRIVER_BYTES_PER_DOCUMENT} bytes of each); "
                        f"fix: {flag} {-(-needed >> 20)}MB or more")
    return budget


def band_paths(base: Path, bands: int) -> list[str]:
    """The files of one range's keys, one per band, named after `base` (a temporary name of the driver's)."""
    return [str(base.with_name(base.name.replace(".tmp-", f".band{band}.tmp-"))) for band in range(bands)]


class KeyWriter:
    """A worker's band files for its range: each batch's keys appended band by band."""

    def __init__(self, paths: list[str]):
        self.handles = [open(path, "wb") for path in paths]

    def append(self, keys: np.ndarray) -> None:
        """`keys`: `[bands, documents]` uint64, the batch's keys of each band."""
        for handle, band in zip(self.handles, keys):
            handle.write(np.ascontiguousarray(band, dtype=np.uint64).tobytes())

    def close(self) -> None:
        for handle in self.handles:
            handle.close()


class BandKeys:
    """Every range's band files, read band by band in row order (range after range)."""

    def __init__(self, files: list[list[str]], counts: list[int]):
        self.files, self.counts = files, counts  # per range: its band files; its documents signed
        self.total = int(sum(counts))

    def remove(self) -> None:
        """Delete the band files (once the groups are found)."""
        for paths in self.files:
            for path in paths:
                Path(path).unlink(missing_ok=True)

    def chunks(self, band: int) -> Iterator[tuple[int, np.ndarray]]:
        """The band's keys a chunk at a time, with the row of the chunk's first key."""
        row = 0
        for paths, count in zip(self.files, self.counts):
            with open(paths[band], "rb") as handle:
                for start in range(0, count, READ_CHUNK_KEYS):
                    keys = np.fromfile(handle, dtype=np.uint64, count=min(READ_CHUNK_KEYS, count - start))
                    yield row + start, keys
            row += count

    def slices(self, budget: int) -> int:
        """How many slices (a power of two) a band is cut into to fit `budget` bytes."""
        slices = 1
        while self.total * SORT_BYTES_PER_KEY / slices + READ_CHUNK_KEYS * 2 * KEY_BYTES > budget and slices < 1 << 16:
            slices *= 2
        return slices

    def buckets(self, bands: int, budget: int) -> Iterator[np.ndarray]:
        """Each bucket of two or more rows equal on a band, band after band, in ascending key order within a
        band, as sorted row numbers: what `lsh.band_buckets` gives over the whole matrix, within `budget`."""
        slices = self.slices(budget)
        shift = np.uint64(64 - int(slices).bit_length() + 1)
        for band in range(bands):
            for piece in range(slices):
                keys, rows = self._slice(band, piece, shift if slices > 1 else None)
                yield from sorted_buckets(keys, rows)

    def _slice(self, band: int, piece: int, shift) -> tuple[np.ndarray, np.ndarray]:
        """The keys of `band` whose top bits are `piece` (all of them when `shift` is None), and their rows."""
        keys, rows = [], []
        for first, chunk in self.chunks(band):
            where = np.arange(first, first + len(chunk), dtype=np.int64)
            if shift is not None:
                mine = (chunk >> shift) == np.uint64(piece)
                chunk, where = chunk[mine], where[mine]
            keys.append(chunk)
            rows.append(where)
        if not keys:
            return np.zeros(0, np.uint64), np.zeros(0, np.int64)
        return np.concatenate(keys), np.concatenate(rows)
