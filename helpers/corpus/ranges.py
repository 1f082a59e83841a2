"""Reading a preprocessing run's input: checked, cut into contiguous ranges, and read in batches that know
where they are. JSONL is cut into byte ranges at line ends and read as raw lines that know the number of
their first line in the whole file; Parquet (a file or a folder of them) is cut by row groups and read as
rows of its text columns, as are datasets saved by Hugging Face `datasets` (`helpers.corpus.columnar`)."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import Iterator

from ..common.errors import UserError
from .columnar import columnar_files, is_columnar, plan_groups, row_batches

BATCH_BYTES = 1 << 20  # raw JSONL per task sent to a worker


def check_input(path: Path) -> None:
    """Refuse an input that is missing or empty, before anything is written."""
    if is_columnar(path) and not path.is_file():  # a folder or a glob: its files are checked when listed
        return
    if path.is_dir():
        raise UserError(f"{path}: a folder with no .parquet file in it; fix: give a JSONL or Parquet file, a folder "
                        "of Parquet files or one written by datasets' save_to_disk")
    if not path.is_file():
        raise UserError(f"{path}: no such file; fix: check --input")
    if path.stat().st_size == 0:
        raise UserError(f"{path}: empty file, nothing to preprocess; fix: check --input")


def input_files(path: Path) -> list[Path]:
    """The files an input is read from: the input itself, or a columnar input's files in reading order."""
    return columnar_files(path) if is_columnar(path) else [path]


def _open_input(path: Path):
    check_input(path)
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def plan_ranges(path: Path, partitions: int) -> list[tuple[int, int | None]]:
    """Contiguous byte ranges `[start, end)` of about size/P each, every cut moved to just after the next
    newline so that no line is split; empty ranges are dropped. A `.gz` file has no byte offsets to cut
    at: it is one range, read to its end (end None). Parquet and Arrow are cut by row groups (record batches) instead."""
    if is_columnar(path):
        return plan_groups(path, partitions)
    if path.suffix == ".gz":
        return [(0, None)]
    size = path.stat().st_size
    cuts = [0]
    with open(path, "rb") as handle:
        for part in range(1, partitions):
            handle.seek(max(size * part // partitions, cuts[-1], 1) - 1)
            handle.readline()
            cuts.append(min(handle.tell(), size))
    cuts.append(size)
    return [(start, end) for start, end in zip(cuts, cuts[1:]) if end > start]


def _count_newlines(handle, length: int) -> int:
    """Newlines in the next `length` bytes of a binary file, read in blocks (memory stays flat)."""
    count = 0
    while length > 0:
        block = handle.read(min(length, 16 << 20))
        if not block:
            break
        count += block.count(b"\n")
        length -= len(block)
    return count


def batches(path: Path, start: int = 0, end: int | None = None, columns: tuple[str, ...] = ("text",)) -> Iterator:
    """Batches of the raw lines in bytes `[start, end)` of the input (end None: to its end), each with the
    number its first line has in the whole file, so that messages name the line a user would look at.
    A columnar input gives `RowsBatch`es of its `columns` from groups `[start, end)` instead."""
    if is_columnar(path):
        yield from row_batches(path, start, end, columns=columns, batch_bytes=BATCH_BYTES)
        return
    with _open_input(path) as handle:
        number = 1 + _count_newlines(handle, start)
        position = start
        batch, size = [], 0
        for raw in _lines(handle, path):
            if end is not None and position >= end:
                break
            position += len(raw)
            batch.append(raw)
            size += len(raw)
            if size >= BATCH_BYTES:
                yield str(path), number, batch
                number += len(batch)
                batch, size = [], 0
        if batch:
            yield str(path), number, batch


def _lines(handle, path: Path) -> Iterator[bytes]:
    """The lines of an open input; a `.gz` that cannot be decompressed is one line naming it."""
    try:
        yield from handle
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:
        raise UserError(_gzip_problem(path, error)) from None


def _gzip_problem(path: Path, error: Exception) -> str:
    """What is wrong with a `.gz` input, told apart by the error its decompression raised."""
    if isinstance(error, EOFError):
        return (f"{path}: truncated gzip file (it ends before its compressed data does); fix: copy or download "
                "it again, whole")
    if "not a gzipped file" in str(error).lower():
        return (f"{path}: not a gzip file (it ends in .gz); fix: compress it with gzip, or, if it is plain "
                "JSONL, rename it to end in .jsonl")
    return f"{path}: damaged gzip file ({error}); fix: copy or download it again"
