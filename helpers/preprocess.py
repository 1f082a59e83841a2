"""JSONL → Megatron `.bin/.idx`, byte-identical to Megatron-LM's `tools/preprocess_data.py`, and faster.

    python -m helpers.preprocess --input data/raw/literature.jsonl --output-prefix data/megatron/literature \\
        --tokenizer llama3 --json-keys text --workers 2 --append-eod

Same flags as Megatron where Megatron has them; output `{prefix}_{key}_document.bin/.idx`, and beside it a
JSON sidecar `{prefix}_{key}_document.json` naming the tokenizer (see `helpers.sidecar`). Per document:
the ids of the text (no BOS), then the EOD id with `--append-eod`; an empty text adds a document
boundary and no sequence; a list of strings is read as Megatron's tool reads it, one sequence per
non-empty string, the EOD at the end of the last. Lines and records follow `helpers.jsonl`: a bare CR
ends a line (as in Megatron's text-mode reader), a BOM at the start of the file is skipped, a lone
surrogate is a bad record. `--format npy` and `--format shards` need `--append-eod` and refuse data whose
documents EOD cannot mark (see `helpers.formats`). Differences, all on purpose:

- special-token strings written in a text stay text (Megatron's Hugging Face path turns
  "<|end_of_text|>" into a real EOD mid-document); `--parse-special-tokens` does as Megatron does,
  and the summary counts the documents that contain such strings either way;
- a bad record stops the run with one line naming file and line, and leaves no output behind
  (`--skip-bad-records` skips, counts and reports them instead); blank lines are counted and skipped;
- speed: the main process streams batches of raw lines to worker processes that parse and encode
  them with the zoo's fastest correct encoder and send back numpy arrays (with `--workers 1` it
  encodes them itself); memory stays flat;
- `--partitions P` cuts the input into P contiguous byte ranges (each cut just after a newline) and runs
  them at the same time, each in its own process with its share of the workers; the parts are merged in
  input order, so the output is byte-identical to one pass, and line numbers and counts are the whole
  file's. Megatron's tool deals lines round-robin to its partitions instead, which reorders the documents
  unless `--keep-sequential-samples`. A `.gz` input has no byte offsets to cut at: it runs as one
  partition with all the workers, and says so;
- a failed, interrupted (Ctrl-C: exit 130) or terminated (SIGTERM: exit 143) run removes every temporary
  file, partitions and worker processes included; one killed outright (SIGKILL) cannot, so the next run
  for the same prefix removes what dead processes left (never the files of a process still running).
  Outputs move into place only when all of them are complete.
"""

from __future__ import annotations

import argparse
import ctypes
import gzip
import os
import re
import signal
import sys
import threading
import time
import traceback
from collections import Counter, deque
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, fields
from multiprocessing import get_context
from multiprocessing.connection import wait
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
from tqdm.auto import tqdm

from .errors import UserError, run_cli
from .indexed import IndexedDataset, IndexedWriter, remove_stale_temporaries
from .jsonl import BadRecord, check_json_keys, is_blank, location, numbered_lines, parse_record
from .sidecar import FORMAT, sidecar_path, tokenizer_identity, write_sidecar
from .tokenizers import load_tokenizer

BATCH_BYTES = 1 << 20  # raw JSONL per task sent to a worker
IN_FLIGHT_PER_WORKER = 4
FIRST_SKIPS = 5  # skipped records quoted in the summary
PROGRESS_SECONDS = 0.2  # how often a partitioned run's bar moves
STOP_SECONDS = 30  # how long a stopped partition gets to clean up before SIGKILL
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
PR_SET_PDEATHSIG = 1  # Linux prctl option: a signal for this process when its parent dies


@dataclass
class BatchResult:
    """What a worker sends back for one batch of lines: arrays per key, and counts."""

    ids: dict[str, np.ndarray]
    lengths: dict[str, np.ndarray]
    lines: int
    bytes: int
    blank_lines: int = 0
    skipped: Counter = field(default_factory=Counter)
    first_skips: list = field(default_factory=list)
    special_documents: int = 0
    sequence_lengths: dict[str, np.ndarray] = field(default_factory=dict)  # only where a list made several


@dataclass
class RunSettings:
    """Everything a worker needs, picklable."""

    tokenizer: str
    json_keys: tuple[str, ...]
    append_eod: bool
    parse_special: bool
    skip_bad_records: bool
    dtype: str


_worker: dict = {}


def _init_worker(settings: RunSettings) -> None:
    tokenizer = load_tokenizer(settings.tokenizer)
    specials = sorted(tokenizer.special_tokens, key=len, reverse=True)
    _worker.update(settings=settings, tokenizer=tokenizer,
                   special_pattern=re.compile("|".join(map(re.escape, specials))) if specials else None)


def _encode_batch(task: tuple[str, int, list[bytes]]) -> BatchResult:
    """Parse and encode one batch of raw lines (runs in a worker process); the rules for lines and
    records are `helpers.jsonl`'s, lists of strings allowed as Megatron's tool allows them."""
    source, first_line, lines = task
    settings: RunSettings = _worker["settings"]
    result = BatchResult(ids={}, lengths={}, lines=len(lines), bytes=sum(map(len, lines)))
    records: list[dict] = []
    for number, place, line in numbered_lines(lines, first_line):
        if is_blank(line):
            result.blank_lines += 1
            continue
        try:
            record = parse_record(line, settings.json_keys, allow_lists=True)
        except BadRecord as bad:
            where = f"{location(source, number, place)}: {bad.reason}"
            if not settings.skip_bad_records:
                raise UserError(where) from None
            result.skipped[bad.kind] += 1
            if len(result.first_skips) < 5:
                result.first_skips.append(where)
            continue
        records.append(record)
        result.special_documents += _holds_special_strings(record, settings.json_keys)
    for key in settings.json_keys:
        _encode_field(result, key, [record[key] for record in records])
    return result


def _holds_special_strings(record: dict, keys: tuple[str, ...]) -> bool:
    pattern = _worker["special_pattern"]
    if pattern is None:
        return False
    return any(pattern.search(text) for key in keys for text in _texts(record[key]))


def _texts(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else value


def _encode_document(value: str | list[str]) -> list[list[int]]:
    """A document's sequences, as Megatron's tool makes them: one per non-empty string of a list (a
    string is a list of one), and the EOD id at the end of the last one with `--append-eod`."""
    settings: RunSettings = _worker["settings"]
    tokenizer = _worker["tokenizer"]
    sequences = [ids for ids in (tokenizer.encode(text, parse_special=settings.parse_special)
                                 for text in _texts(value)) if ids]
    if sequences and settings.append_eod:
        sequences[-1].append(tokenizer.eod_id)
    return sequences


def _encode_field(result: BatchResult, key: str, values: list) -> None:
    """Encode one field of every good record of a batch into `result`: ids, document lengths, and the
    sequence lengths too when a list made a document of several sequences."""
    documents = [_encode_document(value) for value in values]
    sequences = [ids for document in documents for ids in document]
    sequence_lengths = np.fromiter(map(len, sequences), dtype=np.int64, count=len(sequences))
    flat = np.fromiter((i for ids in sequences for i in ids), dtype=np.int64, count=int(sequence_lengths.sum()))
    _check_vocabulary(flat)
    result.ids[key] = flat.astype(_worker["settings"].dtype)
    result.lengths[key] = np.fromiter((sum(map(len, document)) for document in documents), dtype=np.int64,
                                      count=len(documents))
    if len(sequences) != np.count_nonzero(result.lengths[key]):
        result.sequence_lengths[key] = sequence_lengths


def _check_vocabulary(ids: np.ndarray) -> None:
    """Refuse ids the tokenizer's own vocabulary does not have: cast to the dtype, they would wrap around."""
    vocab_size = _worker["tokenizer"].vocab_size
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        bad = int(ids.min()) if ids.min() < 0 else int(ids.max())
        raise UserError(f"tokenizer {_worker['settings'].tokenizer} produced id {bad}, outside its vocabulary of "
                        f"{vocab_size} ids; fix: repair the tokenizer (its vocabulary size must exceed every id it "
                        "produces), e.g. export it again")


def _bounded_map(pool, function, tasks: Iterator, limit: int) -> Iterator:
    """Results in task order with at most `limit` tasks in flight, so memory stays flat."""
    pending: deque = deque()
    for task in tasks:
        pending.append(pool.apply_async(function, (task,)))
        if len(pending) >= limit:
            yield pending.popleft().get()
    while pending:
        yield pending.popleft().get()


def _check_input(path: Path) -> None:
    if not path.is_file():
        raise UserError(f"{path}: no such file; fix: check --input")
    if path.stat().st_size == 0:
        raise UserError(f"{path}: empty file, nothing to preprocess; fix: check --input")


def _open_input(path: Path):
    _check_input(path)
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def _plan_ranges(path: Path, partitions: int) -> list[tuple[int, int | None]]:
    """Contiguous byte ranges `[start, end)` of about size/P each, every cut moved to just after the next
    newline so that no line is split; empty ranges are dropped. A `.gz` file has no byte offsets to cut
    at: it is one range, read to its end (end None)."""
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


def _batches(path: Path, start: int = 0, end: int | None = None) -> Iterator[tuple[str, int, list[bytes]]]:
    """Batches of the raw lines in bytes `[start, end)` of the input (end None: to its end), each with the
    number its first line has in the whole file, so that messages name the line a user would look at."""
    with _open_input(path) as handle:
        number = 1 + _count_newlines(handle, start)
        position = start
        batch, size = [], 0
        for raw in handle:
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


@dataclass
class Summary:
    """Totals of one preprocessing run, printed at the end and returned to callers."""

    outputs: dict[str, str]
    documents: int = 0
    empty_documents: int = 0
    tokens: int = 0
    dtype: str = ""
    bytes_read: int = 0
    bytes_written: int = 0
    blank_lines: int = 0
    special_documents: int = 0
    skipped: dict = field(default_factory=dict)
    first_skipped: list = field(default_factory=list)
    seconds: float = 0.0

    def lines(self) -> list[str]:
        rate = self.bytes_read / 1e6 / max(self.seconds, 1e-9)
        out = [f"documents       {self.documents:,} ({self.empty_documents:,} empty: a boundary, no tokens)",
               f"tokens          {self.tokens:,} ({self.tokens / max(self.seconds, 1e-9):,.0f}/s, {rate:.2f} MB/s)",
               f"dtype           {self.dtype}",
               f"bytes written   {self.bytes_written:,}",
               f"special-token strings in text: {self.special_documents:,} documents"]
        if self.blank_lines:
            out.append(f"blank lines     {self.blank_lines:,} skipped")
        for kind, count in self.skipped.items():
            out.append(f"skipped         {count:,} records: {kind}")
        out += [f"  e.g. {where}" for where in self.first_skipped]
        out += [f"output          {p}" for p in self.outputs.values()]
        return out


def output_prefix(prefix: str | os.PathLike, key: str) -> Path:
    """Megatron's naming: `{prefix}_{key}_document`."""
    return Path(f"{prefix}_{key}_document")


def preprocess(input_path: str | os.PathLike, prefix: str | os.PathLike, tokenizer: str,
               json_keys: tuple[str, ...] = ("text",), workers: int = 1, append_eod: bool = False,
               parse_special_tokens: bool = False, skip_bad_records: bool = False, partitions: int = 1,
               log_interval: int = 0, progress: bool = True) -> Summary:
    """Tokenize a JSONL file into one Megatron indexed dataset per key; see the module docstring."""
    input_path = Path(input_path)
    json_keys = check_json_keys(json_keys)
    if workers < 1 or partitions < 1:
        raise UserError("--workers and --partitions must be at least 1")
    if partitions > workers:
        raise UserError(f"--partitions {partitions} needs at least {partitions} workers (one per partition), "
                        f"not {workers}; fix: raise --workers or lower --partitions")
    _check_input(input_path)
    made_by = load_tokenizer(tokenizer)
    settings = RunSettings(tokenizer, tuple(json_keys), append_eod, parse_special_tokens, skip_bad_records,
                           made_by.megatron_dtype.name)
    prefixes = {key: output_prefix(prefix, key) for key in json_keys}
    for final in prefixes.values():
        remove_stale_temporaries(final)
    ranges = _plan_ranges(input_path, partitions)
    if partitions > 1 and input_path.suffix == ".gz":
        print(f"note: {input_path} is compressed, so it cannot be cut into byte ranges; it runs as one "
              f"partition with all {workers} workers", file=sys.stderr)

    def describe(key: str, written: Path) -> dict:
        return sidecar_content(written, made_by, key, input_path, append_eod, parse_special_tokens)

    start = time.perf_counter()
    meter = None
    try:
        meter = _Progress(input_path, progress, log_interval)
        if len(ranges) == 1:
            summary = _write_datasets(prefixes, settings.dtype, describe, lambda writers: _require_documents(
                _encode_range(settings, input_path, ranges[0], writers, workers, meter.report), input_path))
        else:
            summary = _preprocess_partitions(settings, input_path, ranges, prefixes, workers, meter, describe)
    finally:
        if meter is not None:
            meter.close()
    summary.seconds = time.perf_counter() - start
    return summary


def sidecar_content(prefix: str | os.PathLike, tokenizer, key: str, input_path: Path, append_eod: bool,
                    parse_special_tokens: bool) -> dict:
    """What the sidecar of a finished output says: tokenizer, flags, input, and counts read from its `.idx`."""
    written = IndexedDataset(prefix)
    return {"format": FORMAT, "tokenizer": tokenizer_identity(tokenizer), "dtype": written.dtype.name,
            "append_eod": append_eod, "parse_special_tokens": parse_special_tokens, "json_key": key,
            "inputs": [{"path": str(input_path), "bytes": input_path.stat().st_size}],
            "documents": written.document_count, "sequences": len(written), "tokens": written.num_tokens,
            "created_by": "helpers.preprocess"}


def _forget_sidecars(prefixes) -> None:
    """Remove old sidecars before new data takes their place: a crash then leaves none, never a stale one."""
    for prefix in prefixes:
        sidecar_path(prefix).unlink(missing_ok=True)


class Terminated(BaseException):
    """SIGTERM, raised like KeyboardInterrupt so that every cleanup on the way out runs."""


_signals_received: list[int] = []
_holding = 0  # inside `_signals_held`: a signal is remembered, and raised when the block ends


def _on_signal(signum, frame) -> None:
    """SIGINT raises KeyboardInterrupt, SIGTERM `Terminated`; a second signal is ignored, so that it cannot
    cut the cleanup short. The signal is also remembered for `_check_signals`."""
    if _signals_received:
        return
    _signals_received.append(signum)
    if not _holding:
        _raise_for(signum)


def _forked_child_signals() -> None:
    """In a child a run forks (always inside `_signals_held`): a fresh start, SIGTERM at its default (kill)
    and Ctrl-C ignored until the child sets up its own handling, then the held signals let through. An
    inherited handler would run the parent's cleanup in the child, or swallow the parent's SIGTERM."""
    global _holding
    if not _holding:
        return
    _signals_received.clear()
    _holding = 0
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked_child_signals)


def _raise_for(signum: int) -> None:
    raise KeyboardInterrupt() if signum == signal.SIGINT else Terminated()


def _check_signals() -> None:
    """Raise again for a signal already received: a handler that runs inside a finalizer or an at-fork hook
    (Python runs one at every fork) has its exception printed and dropped, and the run would go on."""
    if _signals_received:
        _raise_for(_signals_received[0])


def _context():
    return get_context("fork" if sys.platform == "linux" else "spawn")


def _die_with_parent(parent_pid: int, signum: int) -> None:
    """Have Linux send `signum` to this process when its parent dies: a parent killed by SIGKILL cannot stop
    its children, which would otherwise run on (or wait forever) as orphans."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signum))
        except (OSError, AttributeError):
            return
    if os.getppid() != parent_pid:  # the parent died before the request was made
        os.kill(os.getpid(), signum)


def _start_worker(settings: RunSettings, parent_pid: int) -> None:
    """A pool worker: Ctrl-C and SIGTERM are for its parent to handle (which then stops the pool), and it
    dies with its parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent(parent_pid, signal.SIGKILL)
    _init_worker(settings)


def _encoded(settings: RunSettings, tasks: Iterator, workers: int) -> Iterator[BatchResult]:
    """The batches encoded, in order: in this process with one worker (no copies to and fro), else in a
    pool of `workers` processes."""
    if workers == 1:
        _init_worker(settings)
        yield from map(_encode_batch, tasks)
        return
    pool = None
    try:
        with _signals_held():
            pool = _context().Pool(workers, initializer=_start_worker, initargs=(settings, os.getpid()))
        yield from _bounded_map(pool, _encode_batch, tasks, workers * IN_FLIGHT_PER_WORKER)
    finally:
        if pool is not None:
            pool.terminate()


def _count_batch(summary: Summary, result: BatchResult, first_key: str) -> None:
    lengths = result.lengths[first_key]
    summary.documents += int(lengths.size)
    summary.empty_documents += int((lengths == 0).sum())
    summary.tokens += sum(int(ids.size) for ids in result.ids.values())
    summary.bytes_read += result.bytes
    summary.blank_lines += result.blank_lines
    summary.special_documents += result.special_documents
    for kind, count in result.skipped.items():
        summary.skipped[kind] = summary.skipped.get(kind, 0) + count
    summary.first_skipped.extend(result.first_skips[: max(0, FIRST_SKIPS - len(summary.first_skipped))])


def _encode_range(settings: RunSettings, path: Path, byte_range: tuple[int, int | None],
                  writers: dict[str, IndexedWriter], workers: int, report: Callable[[Summary], None]) -> Summary:
    """Encode one byte range of the input into `writers`, calling `report` after each batch; its counts."""
    summary = Summary(outputs={key: str(writer.prefix) for key, writer in writers.items()}, dtype=settings.dtype)
    with closing(_encoded(settings, _batches(path, *byte_range), workers)) as results:
        for result in results:
            for key, writer in writers.items():
                writer.add_documents(result.ids[key], result.lengths[key], result.sequence_lengths.get(key))
            _count_batch(summary, result, settings.json_keys[0])
            report(summary)
            _check_signals()
    summary.bytes_written = summary.tokens * np.dtype(settings.dtype).itemsize
    return summary


def _require_documents(summary: Summary, path: Path) -> Summary:
    if summary.documents == 0:
        raise UserError(f"{path}: no document in it (only blank or skipped lines); fix: check --input")
    return summary


@contextmanager
def _signals_held():
    """Hold Ctrl-C and SIGTERM back until the block ends: while outputs move into place, so that a run
    makes all of its outputs or none; and while forking, where Python's at-fork hooks would drop the
    exception (and the run would go on), and where a child must not get a signal before it has set up."""
    global _holding
    mask = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS) if mask else None
    _holding += 1
    try:
        yield
    finally:
        _holding -= 1
        if mask:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    _check_signals()


def _remove_dataset(prefix: str | os.PathLike) -> None:
    for path in (Path(f"{prefix}.bin"), Path(f"{prefix}.idx"), sidecar_path(prefix)):
        path.unlink(missing_ok=True)


def _commit(writers: dict[str, IndexedWriter], describe: Callable[[str, Path], dict] | None) -> None:
    """Move every key's dataset into place, then write its sidecar (`describe`, when given, says what it
    holds); a failure part way removes the outputs already moved."""
    _check_signals()
    with _signals_held():
        moved: list[Path] = []
        try:
            _forget_sidecars(writer.prefix for writer in writers.values())
            for writer in writers.values():
                moved.append(writer.finalize())
            for key, written in zip(writers, moved):
                if describe is not None:
                    write_sidecar(written, describe(key, written))
        except BaseException:
            for written in moved:
                _remove_dataset(written)
            raise


def _write_datasets(prefixes: dict[str, Path], dtype: str, describe, fill: Callable[[dict], Summary]) -> Summary:
    """One writer per key, created inside the `try`; `fill(writers)` adds the documents, then all are
    committed. On any failure (Ctrl-C and SIGTERM included) every temporary file is removed."""
    writers: dict[str, IndexedWriter] = {}
    try:
        for key, prefix in prefixes.items():
            writers[key] = IndexedWriter(prefix, dtype)
        summary = fill(writers)
        _commit(writers, describe)
    except BaseException:
        for writer in writers.values():
            writer.abort()
        raise
    return summary


class _Progress:
    """The one progress bar of a run over the whole input (or, with `progress` off, a log line every
    `log_interval` documents)."""

    def __init__(self, path: Path, progress: bool, log_interval: int):
        total = None if path.suffix == ".gz" else path.stat().st_size
        self.bar = tqdm(total=total, unit="B", unit_scale=True, desc=path.name, disable=not progress)
        self.progress, self.log_interval, self.next_log = progress, log_interval, log_interval
        self.start = time.perf_counter()
        self.bytes = 0

    def report(self, summary: Summary) -> None:
        """Move to the totals in `summary` (of the whole input so far)."""
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        self.bar.update(summary.bytes_read - self.bytes)
        self.bytes = summary.bytes_read
        self.bar.set_postfix(docs_s=f"{summary.documents / elapsed:,.0f}", tok_s=f"{summary.tokens / elapsed:,.0f}",
                             refresh=False)
        if self.log_interval and not self.progress and summary.documents >= self.next_log:
            print(f"processed {summary.documents:,} documents ({summary.documents / elapsed:,.0f} docs/s, "
                  f"{summary.bytes_read / 1e6 / elapsed:.2f} MB/s)", file=sys.stderr)
            self.next_log = (summary.documents // self.log_interval + 1) * self.log_interval

    def close(self) -> None:
        self.bar.close()


def _part_prefix(final: Path, index: int) -> Path:
    """A partition's output: hidden, and named after the run's process, so that a re-run after a SIGKILL
    removes it (see `remove_stale_temporaries`)."""
    return final.with_name(f".{final.name}.part{index}.tmp-{os.getpid()}")


def _workers_per_partition(workers: int, partitions: int) -> list[int]:
    return [workers // partitions + (index < workers % partitions) for index in range(partitions)]


def _preprocess_partitions(settings: RunSettings, path: Path, ranges: list, prefixes: dict[str, Path],
                           workers: int, meter: _Progress, describe) -> Summary:
    """Run every byte range at the same time into part files, then merge them in order into the outputs:
    the same documents in the same order as one pass. Part files are removed, whatever happens."""
    parts = [{key: _part_prefix(final, index) for key, final in prefixes.items()} for index in range(len(ranges))]
    try:
        counts = _run_partitions(settings, path, ranges, parts, _workers_per_partition(workers, len(ranges)),
                                 meter)
        summary = _require_documents(_combine(counts, prefixes, settings.dtype), path)

        def append_parts(writers: dict[str, IndexedWriter]) -> Summary:
            for key, writer in writers.items():
                for part in parts:
                    writer.append_dataset(part[key])
            return summary

        return _write_datasets(prefixes, settings.dtype, describe, append_parts)
    finally:
        for part in parts:
            for part_prefix in part.values():
                _remove_dataset(part_prefix)
                remove_stale_temporaries(part_prefix)


def _combine(parts: list[Summary], prefixes: dict[str, Path], dtype: str) -> Summary:
    """The counts of the parts of one input, in input order, as one run's."""
    total = Summary(outputs={key: str(prefix) for key, prefix in prefixes.items()}, dtype=dtype)
    for part in parts:
        for name in (f.name for f in fields(Summary) if f.name not in ("outputs", "dtype", "seconds")):
            mine, theirs = getattr(total, name), getattr(part, name)
            if isinstance(mine, dict):
                for kind, count in theirs.items():
                    mine[kind] = mine.get(kind, 0) + count
            elif isinstance(mine, list):
                mine.extend(theirs[: max(0, FIRST_SKIPS - len(mine))])
            else:
                setattr(total, name, mine + theirs)
    return total


def _run_partitions(settings: RunSettings, path: Path, ranges: list, parts: list[dict], shares: list[int],
                    meter: _Progress) -> list[Summary]:
    """One process per byte range, each with its share of the workers, all at the same time; the bar moves
    with their shared counters. Returns their counts in range order; any that still run when this ends
    (an error, Ctrl-C, SIGTERM) are stopped, and remove their own files."""
    context = _context()
    counters = context.Array("q", 3 * len(ranges), lock=False)  # bytes, documents, tokens per partition
    processes, receivers = [], []
    try:
        for index, byte_range in enumerate(ranges):
            receiver, sender = context.Pipe(duplex=False)
            process = context.Process(target=_partition_main, name=f"partition-{index}", args=(
                settings, path, byte_range, parts[index], shares[index], counters, index, sender, os.getpid()))
            receivers.append(receiver)
            with _signals_held():
                process.start()
                processes.append(process)
            sender.close()
        return _collect(processes, receivers, counters, meter)
    finally:
        _stop(processes)
        for receiver in receivers:
            receiver.close()


def _collect(processes: list, receivers: list, counters, meter: _Progress) -> list[Summary]:
    """Wait for every partition's counts. When one fails, those after it are stopped and those before it
    finish: the error raised is the earliest partition's, the one a single pass would have met first."""
    results: dict[int, Summary] = {}
    errors: dict[int, BaseException] = {}
    waiting = dict(enumerate(receivers))
    while waiting:
        for receiver in wait(list(waiting.values()), timeout=PROGRESS_SECONDS):
            index = receivers.index(receiver)
            if index not in waiting:  # stopped above, after an earlier partition failed
                continue
            del waiting[index]
            try:
                status, payload = receiver.recv()
            except EOFError:
                status, payload = "vanished", None
            if status == "done":
                results[index] = payload
                continue
            errors[index] = _partition_error(status, payload, processes[index], index, len(processes))
            for later in [i for i in waiting if i > index]:
                processes[later].terminate()
                del waiting[later]
        meter.report(Summary(outputs={}, bytes_read=sum(counters[0::3]), documents=sum(counters[1::3]),
                             tokens=sum(counters[2::3])))
        _check_signals()
    if errors:
        raise errors[min(errors)]
    return [results[index] for index in range(len(receivers))]


def _partition_error(status: str, text: str | None, process, index: int, count: int) -> BaseException:
    """The exception a partition's message stands for (messages carry text only: they always pickle)."""
    if status == "user error":
        return UserError(text)
    if status == "terminated":
        return Terminated()
    if status == "crashed":
        return RuntimeError(text)
    process.join(timeout=STOP_SECONDS)
    return UserError(f"partition {index + 1} of {count} ended without a result (exit code {process.exitcode}, "
                     "negative: killed by that signal); fix: check free memory, then re-run")


def _stop(processes: list) -> None:
    """SIGTERM to partitions still running (each then removes its files and its pool), and wait for all."""
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=STOP_SECONDS)
        if process.is_alive():
            process.kill()
            process.join()


def _partition_main(settings: RunSettings, path: Path, byte_range: tuple[int, int], prefixes: dict[str, Path],
                    workers: int, counters, index: int, sender, parent_pid: int) -> None:
    """One partition, in its own process: its range into finished part files; sends back its counts, or
    the error that stopped it. Ctrl-C is the parent's to handle; SIGTERM (from the parent) cleans up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_signal)
    try:
        _die_with_parent(parent_pid, signal.SIGTERM)

        def report(summary: Summary) -> None:
            counters[3 * index:3 * index + 3] = [summary.bytes_read, summary.documents, summary.tokens]

        summary = _write_datasets(prefixes, settings.dtype, None, lambda writers: _encode_range(
            settings, path, byte_range, writers, workers, report))
        message = ("done", summary)
    except UserError as error:
        message = ("user error", str(error))
    except Terminated:
        message = ("terminated", None)
    except BaseException:
        message = ("crashed", f"partition {index + 1} failed:\n{traceback.format_exc()}")
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # done: being stopped now would only lose the message
    try:
        sender.send(message)
    except OSError:  # the parent is gone: nobody will merge the parts
        for prefix in prefixes.values():
            _remove_dataset(prefix)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.preprocess", description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, type=Path, help="JSONL file (.gz allowed)")
    parser.add_argument("--output-prefix", required=True, help="writes {prefix}_{key}_document.bin/.idx")
    parser.add_argument("--tokenizer", required=True, help="zoo name (llama3, mistral, ...) or a Hugging Face folder")
    parser.add_argument("--json-keys", nargs="+", default=["text"], help="fields to tokenize (one output each)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--partitions", type=int, default=1,
                        help="cut the input into this many contiguous byte ranges (at line ends), run at the same "
                             "time with the workers shared among them; the output is byte-identical to one pass. "
                             "(Megatron's tool deals lines round-robin, which reorders documents unless "
                             "--keep-sequential-samples.) A .gz input runs as one partition")
    parser.add_argument("--append-eod", action="store_true", help="append the EOD id to each non-empty document")
    parser.add_argument("--parse-special-tokens", action="store_true",
                        help="turn special-token strings in the text into their ids (what Megatron does)")
    parser.add_argument("--skip-bad-records", action="store_true", help="skip bad lines, counting each kind")
    parser.add_argument("--log-interval", type=int, default=1000, help="documents between log lines (no progress bar)")
    parser.add_argument("--no-progress", action="store_true", help="log lines instead of a progress bar")
    parser.add_argument("--format", choices=["megatron", "npy", "shards"], default="megatron",
                        help="megatron .bin/.idx (default), one flat .npy, or fixed-size shards with train/val")
    parser.add_argument("--tokens-per-shard", type=int, default=10_000_000, help="with --format shards")
    parser.add_argument("--val-fraction", type=float, default=0.05, help="share of shards in val/ (--format shards)")
    parser.add_argument("--shard-dtype", default=None, help="shard dtype, e.g. uint32 (default: Megatron's choice)")
    args = parser.parse_args(argv)
    if args.format != "megatron" and not args.append_eod:
        raise UserError(f"--format {args.format} needs --append-eod: a flat token stream tells documents apart only "
                        "by EOD; fix: add --append-eod, or keep --format megatron")
    target = args.output_prefix
    if args.format != "megatron":
        target = f"{args.output_prefix}.indexed-tmp-{os.getpid()}"
    summary = preprocess(args.input, target, args.tokenizer, tuple(args.json_keys), args.workers,
                         args.append_eod, args.parse_special_tokens, args.skip_bad_records, args.partitions,
                         args.log_interval, progress=not args.no_progress)
    if args.format != "megatron":
        summary.outputs = convert_outputs(summary.outputs, args.output_prefix, args.format, args.tokenizer,
                                          args.tokens_per_shard, args.val_fraction, args.shard_dtype, args.input)
    for line in summary.lines():
        print(line)
    return 0


def convert_outputs(outputs: dict[str, str], prefix: str, layout: str, tokenizer: str, tokens_per_shard: int,
                    val_fraction: float, shard_dtype: str | None,
                    source: str | os.PathLike | None = None) -> dict[str, str]:
    """Turn each key's indexed output into `{prefix}_{key}.npy` or `{prefix}_{key}_shards/`, then remove it.
    Every output is checked before any is written: a layout that would lose documents is refused, in a
    line naming `source` (the input the data was made from, which the sidecars name too)."""
    from .formats import indexed_to_npy, indexed_to_shards, require_boundaries

    eod_id = load_tokenizer(tokenizer).eod_id
    converted = {}
    try:
        for key, indexed in outputs.items():
            require_boundaries(IndexedDataset(indexed), eod_id, f"--format {layout}", f"{source or indexed} ('{key}')")
        for key, indexed in outputs.items():
            if layout == "npy":
                converted[key] = str(indexed_to_npy(indexed, f"{prefix}_{key}.npy", eod_id, source))
            else:
                converted[key] = str(indexed_to_shards(indexed, f"{prefix}_{key}_shards", tokens_per_shard,
                                                       val_fraction, shard_dtype, eod_id, source))
    finally:
        for indexed in outputs.values():
            for path in (Path(f"{indexed}.bin"), Path(f"{indexed}.idx"), sidecar_path(indexed)):
                path.unlink(missing_ok=True)
    return converted


def _run_command_line() -> None:
    """`python -m helpers.preprocess`: SIGTERM unwinds like Ctrl-C, so every temporary file is removed,
    then the run ends with one line and exit code 143 (128 + SIGTERM, as a shell reports it)."""
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    try:
        run_cli(main)
    except Terminated:
        print("terminated", file=sys.stderr)
        sys.exit(143)


if __name__ == "__main__":
    _run_command_line()
