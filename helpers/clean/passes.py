"""The passes of `helpers.clean` over one range of one input (bytes of a JSONL file, row groups of a
Parquet file: `helpers.clean.parquet`), run in worker processes or as Ray tasks: each reads its range
again, finds the same good records in the same order, and returns small arrays (digests, counts; the
fuzzy pass writes its band keys to files, `helpers.clean.band_files`), never texts, so memory stays bounded
whatever the corpus size.
Decisions between passes (which documents go) are the driver's; a pass only applies them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from ..common.errors import UserError
from ..common.files import written_atomically
from ..corpus.records import records
from .band_files import KeyWriter
from .lsh import all_band_keys
from .shingles import distinct_shingles, signatures
from .text_keys import drop_lines, exact_digest, is_empty, line_keys, normalize_text

SIGN_BATCH_BYTES = 16 << 20  # text a worker signs (or turns into shingle sets) at a time


@dataclass(frozen=True, kw_only=True)
class CleanSettings:
    """What every pass needs to know, picklable."""

    normalize: bool = False
    exact: bool = False
    lines: bool = False
    fuzzy: bool = False
    threshold: float = 0.8
    line_min_count: int = 10
    line_min_chars: int = 30
    ngram: int = 5
    num_perm: int = 128
    bands: int | None = None  # None: chosen for the threshold (`helpers.clean.lsh.choose_bands`)
    rows: int | None = None
    seed: int = 1
    text_key: str = "text"
    skip_bad_records: bool = False
    memory_limit: int = 2 << 30  # bytes the driver may hold (`helpers.clean.band_files`)


@dataclass(frozen=True)
class RangeTask:
    """One contiguous range `[start, end)` of one input (`helpers.corpus.inputs`, named by absolute paths):
    bytes of JSONL (end None: to its end), or groups of a columnar file, whose `columns` are those the first
    passes read."""

    input_index: int
    source: Any
    start: int
    end: int | None
    index: int
    columns: tuple[str, ...] = ()  # empty for JSONL

    @property
    def parquet(self) -> bool:
        return bool(self.columns)


@dataclass
class Scan:
    """What the first pass found in one range: one entry per good record, in order."""

    lines: np.ndarray  # line numbers; for Parquet, row numbers in the file (from 0)
    places: np.ndarray  # places in the line (bare CRs); for Parquet, row group numbers
    ids: list
    raw_bytes: np.ndarray
    bytes_after_normalize: np.ndarray
    empty_after_normalize: np.ndarray
    digests: np.ndarray | None
    bad: list  # (line, place, kind, reason); for Parquet (row, row group, kind, reason)
    blank_lines: int
    input_bytes: int  # the file's bytes read; for Parquet, the UTF-8 bytes of its texts


@dataclass
class Applied:
    """What the line-removal and signature pass found: per good record of the range (removed ones 0)."""

    bytes_after_lines: np.ndarray
    lines_dropped: np.ndarray
    emptied: np.ndarray
    signature_rows: np.ndarray  # positions in the range of the documents signed (their keys are in the band files)
    line_texts: dict


def _record_id(record: dict):
    value = record.get("id")
    return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def _records(task: RangeTask, settings: CleanSettings, bad: list | None = None,
             counts: dict | None = None) -> Iterator[tuple[int, int, bytes | None, dict]]:
    """(line, place, raw line, record) of the range's good records (`helpers.corpus.records`); for a columnar
    input (row, group, None, record of the columns read). A bad record raises a `UserError` naming where it is,
    unless `skip_bad_records`: then it goes into `bad` (when given)."""
    counts = counts if counts is not None else {"bytes": 0, "blank": 0}

    def refused(number: int, place: int, kind: str, reason: str, where: str) -> None:
        if not settings.skip_bad_records:
            raise UserError(f"{where}: {reason}")
        if bad is not None:
            bad.append((number, place, kind, reason))

    for batch in task.source.batches(task.start, task.end, task.columns):
        yield from records(batch, (settings.text_key,), refused, counts, whole=True)


def _base_text(text: str, settings: CleanSettings) -> str:
    return normalize_text(text) if settings.normalize else text


def scan(task: RangeTask, settings: CleanSettings) -> Scan:
    """Pass 1: every good record's place, id, sizes before and after normalising, and exact digest."""
    bad: list = []
    counts = {"bytes": 0, "blank": 0}
    lines, places, ids, raw_bytes, normal_bytes, empty, digests = [], [], [], [], [], [], []
    for number, place, _, record in _records(task, settings, bad, counts):
        text = record[settings.text_key]
        base = _base_text(text, settings)
        lines.append(number), places.append(place), ids.append(_record_id(record))
        raw_bytes.append(len(text.encode("utf-8")))
        normal_bytes.append(len(base.encode("utf-8")) if settings.normalize else raw_bytes[-1])
        empty.append(settings.normalize and is_empty(base))
        if settings.exact:
            digests.append(exact_digest(base))
    digest_array = (np.frombuffer(b"".join(digests), np.uint8).reshape(-1, 16) if settings.exact else None)
    return Scan(lines=np.array(lines, np.int64), places=np.array(places, np.int32), ids=ids,
                raw_bytes=np.array(raw_bytes, np.int64),
                bytes_after_normalize=np.array(normal_bytes, np.int64), empty_after_normalize=np.array(empty, bool),
                digests=digest_array, bad=bad, blank_lines=counts["blank"], input_bytes=counts["bytes"])


def count_lines(task: RangeTask, settings: CleanSettings, removed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pass 2 (`--lines`): over the documents still kept, each distinct countable line's key and the number
    of documents holding it."""
    keys: list[int] = []
    for position, (_, _, _, record) in enumerate(_records(task, settings)):
        if not removed[position]:
            keys.extend(line_keys(_base_text(record[settings.text_key], settings), settings.line_min_chars))
    unique, counts = np.unique(np.array(keys, dtype=np.uint64), return_counts=True)
    return unique, counts.astype(np.int64)


def cleaned_text(text: str, settings: CleanSettings, repeated: frozenset, wanted: frozenset = frozenset(),
                 found: dict | None = None) -> tuple[str, int]:
    """A kept document's text as written out: normalised (`--normalize`), repeated lines dropped
    (`--lines`); and the number of lines dropped. Lines in `wanted` are noted in `found`."""
    base = _base_text(text, settings)
    return drop_lines(text=base, repeated=repeated, min_chars=settings.line_min_chars, wanted=wanted,
                      found=found) if settings.lines else (base, 0)


def apply_lines(task: RangeTask, settings: CleanSettings, removed: np.ndarray, repeated: frozenset,
                wanted: frozenset, keys: tuple[int, int, list[str]] | None = None) -> Applied:
    """Pass 3 (`--lines` or `--fuzzy`): each kept document's size after line removal (emptied ones are
    flagged), for `--fuzzy` its band keys (`keys`: bands, rows and this range's band files), and the text of
    the repeated lines in `wanted` (for the report)."""
    count = len(removed)
    after, dropped, emptied = np.zeros(count, np.int64), np.zeros(count, np.int64), np.zeros(count, bool)
    signed = _Signer(settings, keys) if settings.fuzzy else None
    line_texts: dict = {}
    try:
        for position, (_, _, _, record) in enumerate(_records(task, settings)):
            if removed[position]:
                continue
            text, dropped[position] = cleaned_text(text=record[settings.text_key], settings=settings,
                                                   repeated=repeated, wanted=wanted, found=line_texts)
            after[position] = len(text.encode("utf-8"))
            emptied[position] = dropped[position] > 0 and is_empty(text)
            if signed is not None and not emptied[position]:
                signed.add(position, text)
        rows = signed.result() if signed is not None else np.zeros(0, np.int64)
    finally:
        if signed is not None:
            signed.close()
    return Applied(bytes_after_lines=after, lines_dropped=dropped, emptied=emptied, signature_rows=rows,
                   line_texts=line_texts)


class _Signer:
    """Texts signed a batch at a time (SIGN_BATCH_BYTES), so a worker holds one batch of texts, not its
    range's; each batch's band keys go to the range's band files and its signatures are dropped. Rows of
    texts without a shingle are left out."""

    def __init__(self, settings: CleanSettings, keys: tuple[int, int, list[str]]):
        self.settings = settings
        self.bands, self.band_rows, paths = keys
        self.writer = KeyWriter(paths)
        self.rows: list[np.ndarray] = []
        self.pending_rows: list[int] = []
        self.pending: list[str] = []
        self.size = 0

    def add(self, row: int, text: str) -> None:
        self.pending_rows.append(row), self.pending.append(text)
        self.size += len(text)
        if self.size >= SIGN_BATCH_BYTES:
            self._sign()

    def _sign(self) -> None:
        if self.pending:
            matrix, shingles = signatures(self.pending, self.settings.ngram, self.settings.num_perm, self.settings.seed)
            self.rows.append(np.array(self.pending_rows, np.int64)[shingles > 0])
            self.writer.append(all_band_keys(matrix[shingles > 0], self.bands, self.band_rows))
        self.pending_rows, self.pending, self.size = [], [], 0

    def result(self) -> np.ndarray:
        """The rows signed, in the order of their keys in the band files."""
        self._sign()
        return np.concatenate(self.rows) if self.rows else np.zeros(0, np.int64)

    def close(self) -> None:
        self.writer.close()


def shingle_sets(task: RangeTask, settings: CleanSettings, wanted: np.ndarray, repeated: frozenset,
                 path: str) -> tuple[np.ndarray, np.ndarray]:
    """For the exact check of near-duplicate candidates: the distinct shingle hashes of the range's
    records flagged in `wanted` (their text as it is signed and written), sorted, written back to back to
    `path` (uint64, a batch at a time, under a name of this process until complete). Returns the records'
    positions in the range and the offsets that cut the file into them."""
    positions: list[int] = []
    sizes: list[np.ndarray] = []
    batch: list[str] = []
    size = 0
    with written_atomically(path, "wb") as out:
        def flush() -> None:
            flat, offsets = distinct_shingles(batch, settings.ngram)
            out.write(flat.astype(np.uint64).tobytes())
            sizes.append(np.diff(offsets))
            batch.clear()

        for position, (_, _, _, record) in enumerate(_records(task, settings)):
            if not wanted[position]:
                continue
            positions.append(position)
            batch.append(cleaned_text(record[settings.text_key], settings, repeated)[0])
            size += len(batch[-1])
            if size >= SIGN_BATCH_BYTES:
                flush()
                size = 0
        if batch:
            flush()
    counts = np.concatenate(sizes) if sizes else np.zeros(0, np.int64)
    return np.array(positions, np.int64), np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def write_part(task: RangeTask, settings: CleanSettings, removed: np.ndarray, repeated: frozenset,
               part: str) -> tuple[int, int]:
    """Last pass: the range's kept records, in order, into the part file `part`, in the input's own format
    (`write_part` of `helpers.corpus.inputs`): written under a name of this process and renamed when complete,
    so a retried task (Ray may retry one) only writes it again. Returns (records, bytes) written."""
    def refused(number: int, place: int, kind: str, reason: str, where: str) -> None:
        if not settings.skip_bad_records:
            raise UserError(f"{where}: {reason}")

    return task.source.write_part(task.start, task.end, part, text_key=settings.text_key, removed=removed,
                                  rewrite=lambda text: cleaned_text(text, settings, repeated)[0], bad=refused)
