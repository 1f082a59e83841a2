"""JSONL inputs (`.jsonl`, `.json` lines, `.gz`, `.zst`, and globs of them): checked, cut into contiguous byte
ranges, and read in batches of raw lines that know where they are (`helpers.corpus.inputs` opens them).

A file is cut into byte ranges at line ends and read as raw lines that know the number of their first line in
their file. A glob of JSONL files (`'crawl/*.jsonl.gz'`) is read as its matches in name order, one after the
other: its byte ranges are offsets into the files laid end to end, a cut falls at a line end or between two
files (never inside a compressed one, which has no byte offsets to cut at), and no batch crosses a file, so
every line is still named by its own file."""

from __future__ import annotations

import bisect
import gzip
import io
import os
import zlib
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

import numpy as np

from ..common.errors import UserError
from .jsonl_parts import join_jsonl_parts, write_jsonl_part

BATCH_BYTES = 1 << 20  # raw JSONL per task sent to a worker
COMPRESSED = (".gz", ".zst")  # read to their end: no byte offset inside them can be cut at


class LineBatch(NamedTuple):
    """Raw lines of one file, and the number its first line has there (from 1)."""

    source: str
    first_line: int
    lines: list[bytes]


def is_compressed(path: Path) -> bool:
    return path.suffix in COMPRESSED


def refuse_empty(path: Path) -> None:
    """Refuse a file that is missing or empty, before anything is written."""
    if not path.is_file():
        raise UserError(f"{path}: no such file; fix: check --input")
    if path.stat().st_size == 0:
        raise UserError(f"{path}: empty file, no record in it; fix: check --input")


class JsonlInput:
    """A JSONL file, or a glob's JSONL files read one after the other; see the module docstring."""

    columnar = False
    group_word = None  # what removed.jsonl calls a group: JSONL has lines, not groups

    def __init__(self, path: Path, files: list[Path]):
        self.path, self.files = path, files
        self.glob = files != [path]
        if self.glob:
            if not any(file.stat().st_size for file in files):
                raise UserError(f"{path}: every file it matches is empty, no record in them; fix: check --input")
        else:
            refuse_empty(path)

    def absolute(self) -> "JsonlInput":
        """The same input named by absolute paths (for a worker elsewhere: a Ray task)."""
        absolute = JsonlInput.__new__(JsonlInput)
        absolute.path, absolute.files, absolute.glob = Path(os.path.abspath(self.path)), \
            [Path(os.path.abspath(file)) for file in self.files], self.glob
        return absolute

    @property
    def compressed(self) -> bool:
        """Whether a file of the input has no byte offsets to cut at."""
        return any(map(is_compressed, self.files))

    def check_columns(self, columns: tuple[str, ...], *, flag: str, lists: bool) -> None:
        """JSONL fields are checked record by record (`helpers.corpus.jsonl`)."""

    def known_size(self) -> int | None:
        """The bytes of JSONL a run will read, where the files say so without decompressing them (else None)."""
        return None if self.compressed else self._offsets()[-1]

    def text_size(self, columns: tuple[str, ...]) -> int | None:
        """About the bytes of text a run encodes: the JSONL's own (`known_size`)."""
        return self.known_size()

    def range_size(self, start: int, end: int | None) -> int:
        """Bytes in range `[start, end)` (end None: to the end), for progress bars."""
        return (end if end is not None else self._offsets()[-1]) - start

    def _offsets(self) -> list[int]:
        """Where each file starts when they are laid end to end (the last entry: the end)."""
        offsets = [0]
        for file in self.files:
            offsets.append(offsets[-1] + file.stat().st_size)
        return offsets

    def plan(self, partitions: int) -> list[tuple[int, int | None]]:
        """Contiguous byte ranges `[start, end)` of about size/P each, every cut moved to just after the next
        newline so that no line is split; empty ranges are dropped. A compressed file has no byte offsets to cut
        at: alone, it is one range read to its end (end None); in a glob, cuts move to its end."""
        if not self.glob and is_compressed(self.path):
            return [(0, None)]
        files, offsets = self.files, self._offsets()
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

    def batches(self, start: int = 0, end: int | None = None, columns: tuple[str, ...] = (),
                refer: bool = False) -> Iterator[LineBatch]:
        """Batches of the raw lines in bytes `[start, end)` of the input (end None: to its end), each with its
        file and the number its first line has there, so that messages name the line a user would look at.
        (`columns` and `refer` are for columnar inputs: a JSONL line is parsed by whoever reads the batch.)"""
        if not self.glob:
            yield from _file_batches(self.path, start, end)
            return
        offsets = self._offsets()
        for file, first, after in zip(self.files, offsets, offsets[1:]):
            if after <= start or (end is not None and first >= end) or after == first:
                continue
            local_end = None if end is None or end >= after else end - first
            yield from _file_batches(file, max(start - first, 0), local_end)

    def write_part(self, start: int, end: int | None, part: str, *, text_key: str, removed: np.ndarray,
                   rewrite: Callable[[int, str], str | None], bad, fields: dict | None = None,
                   labels: Callable[[int], dict] | None = None) -> tuple[int, int]:
        """Bytes `[start, end)`, their kept records (good records not `removed`, the text `rewrite`n, or dropped
        where that is None; with `fields`, each carrying its `labels(position)`), into the file `part`
        (`helpers.corpus.jsonl_parts`); (records, bytes) written."""
        return write_jsonl_part(self, start, end, part, text_key=text_key, removed=removed, rewrite=rewrite, bad=bad,
                                labels=labels if fields else None)

    def join_parts(self, parts: list[Path], joined: Path, fields: dict | None = None) -> None:
        """The parts written by `write_part`, in order, into one plain JSONL file."""
        join_jsonl_parts(parts, joined)


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


def _file_batches(path: Path, start: int, end: int | None) -> Iterator[LineBatch]:
    """The raw lines of bytes `[start, end)` of one JSONL file, in batches of about BATCH_BYTES."""
    refuse_empty(path)
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
                yield LineBatch(str(path), number, batch)
                number += len(batch)
                batch, size = [], 0
        if batch:
            yield LineBatch(str(path), number, batch)


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
