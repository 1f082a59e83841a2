"""Reading a preprocessing run's input: checked, cut into contiguous ranges, and read in batches that know
where they are.

JSONL (`.jsonl`, `.json` lines, `.gz`, `.zst`) is cut into byte ranges at line ends and read as raw lines
that know the number of their first line in their file. A glob of JSONL files (`'crawl/*.jsonl.gz'`) is
read as its matches in name order, one after the other: its byte ranges are offsets into the files laid end
to end, a cut falls at a line end or between two files (never inside a compressed one, which has no byte
offsets to cut at), and no batch crosses a file, so every line is still named by its own file. Parquet and
datasets saved by Hugging Face `datasets` are cut by row groups and read as rows of their text columns
(`helpers.corpus.columnar`)."""

from __future__ import annotations

import bisect
import glob
import gzip
import io
import zlib
from pathlib import Path
from typing import Iterator

from ..common.errors import UserError
from .columnar import columnar_files, is_columnar, plan_groups, row_batches

BATCH_BYTES = 1 << 20  # raw JSONL per task sent to a worker
COMPRESSED = (".gz", ".zst")  # read to their end: no byte offset inside them can be cut at


def is_compressed(path: Path) -> bool:
    return path.suffix in COMPRESSED


def _is_jsonl_glob(path: Path) -> bool:
    return glob.has_magic(str(path)) and not path.exists() and not is_columnar(path)


def check_input(path: Path) -> None:
    """Refuse an input that is missing or empty, before anything is written."""
    if _is_jsonl_glob(path):
        if not any(file.stat().st_size for file in input_files(path)):
            raise UserError(f"{path}: every file it matches is empty, nothing to preprocess; fix: check --input")
        return
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
    """The files an input is read from, in reading order: the input itself, a glob's matches, or a
    columnar input's files."""
    if is_columnar(path):
        return columnar_files(path)
    if _is_jsonl_glob(path):
        return [Path(match) for match in sorted(glob.glob(str(path)))]
    return [path]


def known_size(path: Path) -> int | None:
    """The bytes of JSONL a run will read, where the files say so without decompressing them (else None)."""
    files = input_files(path)
    if is_columnar(path) or any(map(is_compressed, files)):
        return None
    return sum(file.stat().st_size for file in files)


def _file_offsets(path: Path) -> tuple[list[Path], list[int]]:
    """A JSONL input's files, and where each starts when they are laid end to end (the last entry: the end)."""
    files = input_files(path)
    offsets = [0]
    for file in files:
        offsets.append(offsets[-1] + file.stat().st_size)
    return files, offsets


def plan_ranges(path: Path, partitions: int) -> list[tuple[int, int | None]]:
    """Contiguous byte ranges `[start, end)` of about size/P each, every cut moved to just after the next
    newline so that no line is split; empty ranges are dropped. A compressed file has no byte offsets to cut
    at: alone, it is one range read to its end (end None); in a glob, cuts move to its end. Parquet and Arrow
    are cut by row groups (record batches) instead."""
    if is_columnar(path):
        return plan_groups(path, partitions)
    if is_compressed(path):
        return [(0, None)]
    files, offsets = _file_offsets(path)
    total = offsets[-1]
    cuts = [0]
    for part in range(1, partitions):
        target = max(total * part // partitions, cuts[-1], 1)
        index = min(bisect.bisect_right(offsets, target) - 1, len(files) - 1)
        if target == offsets[index] or is_compressed(files[index]):  # between files, or to this one's end
            cuts.append(target if target == offsets[index] else offsets[index + 1])
            continue
        with open(files[index], "rb") as handle:
            handle.seek(target - offsets[index] - 1)
            handle.readline()
            cuts.append(min(offsets[index] + handle.tell(), offsets[index + 1]))
    cuts.append(total)
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


def batches(path: Path, start: int = 0, end: int | None = None, columns: tuple[str, ...] = ("text",),
            refer: bool = False) -> Iterator:
    """Batches of the raw lines in bytes `[start, end)` of the input (end None: to its end), each with its
    file and the number its first line has there, so that messages name the line a user would look at.
    A columnar input gives `RowsBatch`es of its `columns` from groups `[start, end)` instead, or with
    `refer`, `GroupRef`s of its small groups for the worker to read (`helpers.corpus.columnar`)."""
    if is_columnar(path):
        yield from row_batches(path, start, end, columns=columns, batch_bytes=BATCH_BYTES, refer=refer)
        return
    if not _is_jsonl_glob(path):
        yield from _file_batches(path, start, end)
        return
    files, offsets = _file_offsets(path)
    for file, first, after in zip(files, offsets, offsets[1:]):
        if after <= start or (end is not None and first >= end) or after == first:
            continue
        local_end = None if end is None or end >= after else end - first
        yield from _file_batches(file, max(start - first, 0), local_end)


def _file_batches(path: Path, start: int, end: int | None) -> Iterator[tuple[str, int, list[bytes]]]:
    """The raw lines of bytes `[start, end)` of one JSONL file, in batches of about BATCH_BYTES."""
    check_input(path)
    with open(path, "rb") as handle:
        lines = _lines(handle, path)
        number = 1 + (_count_newlines(handle, start) if start else 0)
        position = start
        batch, size = [], 0
        for raw in lines:
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
    """The lines of an open input file, decompressed when its name says so; a compressed file that cannot
    be decompressed is one line naming it."""
    if path.suffix == ".zst":
        yield from _zstd_lines(handle, path)
        return
    if path.suffix != ".gz":
        yield from handle
        return
    try:
        yield from gzip.GzipFile(fileobj=handle, mode="rb")
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:
        raise UserError(_gzip_problem(path, error)) from None


def _zstandard(path: Path):
    try:
        import zstandard
    except ImportError:
        raise UserError(f"{path}: reading .zst needs zstandard; fix: pip install -e '.[zstd]' (or pip install "
                        "zstandard)") from None
    return zstandard


def _zstd_lines(handle, path: Path) -> Iterator[bytes]:
    """The lines of a Zstandard file of one or more frames, decompressed a block at a time; a file that
    ends inside a frame is refused rather than read short."""
    zstd = _zstandard(path)
    frame, rest = None, b""
    try:
        while block := handle.read(1 << 20):
            while block:
                if frame is None:
                    frame = zstd.ZstdDecompressor().decompressobj()
                data = rest + frame.decompress(block)
                end = data.rfind(b"\n") + 1
                yield from io.BytesIO(data[:end])
                rest = data[end:]
                block, frame = (frame.unused_data, None) if frame.eof else (b"", frame)
    except zstd.ZstdError as error:
        raise UserError(f"{path}: not a readable Zstandard file ({error}); fix: compress it with zstd, or, if it "
                        "is plain JSONL, rename it to end in .jsonl") from None
    if frame is not None:
        raise UserError(f"{path}: truncated Zstandard file (it ends inside a compressed frame); fix: copy or "
                        "download it again, whole")
    if rest:
        yield rest


def _gzip_problem(path: Path, error: Exception) -> str:
    """What is wrong with a `.gz` input, told apart by the error its decompression raised."""
    if isinstance(error, EOFError):
        return (f"{path}: truncated gzip file (it ends before its compressed data does); fix: copy or download "
                "it again, whole")
    if "not a gzipped file" in str(error).lower():
        return (f"{path}: not a gzip file (it ends in .gz); fix: compress it with gzip, or, if it is plain "
                "JSONL, rename it to end in .jsonl")
    return f"{path}: damaged gzip file ({error}); fix: copy or download it again"
