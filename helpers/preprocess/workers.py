"""The worker side of preprocessing: settings every worker gets, batches of raw lines parsed and encoded
into numpy arrays (in a pool of worker processes, or in this process with one worker), and one byte
range of the input encoded into the writers in input order."""

from __future__ import annotations

import os
import re
import signal
from collections import Counter, deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Any, Callable, Iterator

import numpy as np

from ..common.errors import UserError
from ..common.stop_signals import check_signals, die_with_parent, signals_held
from ..corpus.columnar import GroupRef, RowsBatch, read_group
from ..corpus.jsonl import offering_skip
from ..corpus.ranges import LineBatch
from ..corpus.records import records as read_records
from ..corpus.records import texts_of
from ..datasets.indexed import IndexedWriter
from ..engines.local import process_context
from ..tokenizers.encoders import encode_flat, fast_tokenizer
from ..tokenizers.zoo import load_tokenizer
from .summary import FIRST_SKIPS, Summary

IN_FLIGHT_PER_WORKER = 4
PARSED_AHEAD = 64  # batches (of about 1 MB) parsed while the fast encoder works, at most
PARSED_WHILE_LOADING = 160  # and while it reads its vocabulary (Llama 3's: 0.75 s, ~110 MB parsed meanwhile)


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


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """Everything a worker needs, picklable."""

    tokenizer: str
    json_keys: tuple[str, ...]
    append_eod: bool
    parse_special: bool
    skip_bad_records: bool
    dtype: str
    fast_encoder: bool = False  # fastokens, proved exact for this vocabulary (`helpers.tokenizers.encoders`)


@dataclass(frozen=True)
class WorkerState:
    """What an encoding process holds for all its batches: the settings, and the tokenizer loaded once."""

    settings: RunSettings
    tokenizer: Any
    special_pattern: re.Pattern | None  # the special tokens' strings, longest first; None without any
    fast: Any = None  # fastokens' encoder of the vocabulary, when the run uses it
    special_prefix: str = ""  # what all special strings start with ("<|" for Llama 3): a text without it has none


_PLAIN = re.compile(r"[ !#-.0-\[\]-~]+")  # printable ASCII that JSON writes as itself (no quote, backslash, /)
_worker: WorkerState | None = None  # this process's, set by `_init_worker`


def _init_worker(settings: RunSettings) -> None:
    global _worker
    tokenizer = load_tokenizer(settings.tokenizer)  # cached: a forked worker finds the run's own
    specials = sorted(tokenizer.special_tokens, key=len, reverse=True)
    fast = fast_tokenizer(tokenizer) if settings.fast_encoder else None
    _worker = WorkerState(settings, tokenizer, re.compile("|".join(map(re.escape, specials))) if specials else None,
                          fast, special_prefix=os.path.commonprefix(specials))


def _encode_batch(task: LineBatch | RowsBatch | GroupRef) -> BatchResult:
    """Parse and encode one batch of raw lines, or of Parquet or Arrow rows, read here when the task only
    names their group (runs in a worker process); the rules for lines and records are
    `helpers.corpus.jsonl`'s, lists of strings allowed as Megatron's tool allows them."""
    return _encode_records(*_parsed(task))


def _parsed(task: LineBatch | RowsBatch | GroupRef) -> tuple[BatchResult, list[dict]]:
    """A batch's good records, and its counts so far (bad records counted or refused, special strings)."""
    settings: RunSettings = _worker.settings
    if isinstance(task, GroupRef):
        task = read_group(task, settings.json_keys)
    result = BatchResult(ids={}, lengths={}, lines=0, bytes=0)
    counts = {"bytes": 0, "blank": 0, "read": 0}

    def bad(number: int, place: int, kind: str, reason: str, where: str) -> None:
        """Stop on a bad record (the fix offers `--skip-bad-records`), or count and remember it when asked to skip
        them."""
        if not settings.skip_bad_records:
            raise UserError(offering_skip(where, reason, "each kind is counted in the summary"))
        result.skipped[kind] += 1
        if len(result.first_skips) < FIRST_SKIPS:
            result.first_skips.append(f"{where}: {reason}")

    read = [(raw, record) for _, _, raw, record in read_records(task, settings.json_keys, bad, counts, lists=True)]
    result.lines, result.bytes, result.blank_lines = counts["read"], counts["bytes"], counts["blank"]
    for raw, record in read:
        result.special_documents += _holds_special_strings(record, settings.json_keys, raw)
    return result, [record for _, record in read]


def _encode_records(result: BatchResult, records: list[dict]) -> BatchResult:
    for key in _worker.settings.json_keys:
        _encode_field(result, key, [record[key] for record in records])
    return result


def _holds_special_strings(record: dict, keys: tuple[str, ...], raw: bytes | None = None) -> bool:
    """Whether a record's texts hold a special token's string; its JSON line `raw`, where there is one, answers
    first for most lines: a prefix of plain characters (`<|`) that is not in the line's bytes can be in its
    texts only written as `\\u` escapes."""
    pattern, prefix = _worker.special_pattern, _worker.special_prefix
    if pattern is None:
        return False
    if raw is not None and _PLAIN.fullmatch(prefix) and prefix.encode() not in raw and b"\\u" not in raw:
        return False
    return any(prefix in text and pattern.search(text) for key in keys for text in texts_of(record[key]))


def _encode_document(value: str | list[str]) -> list[list[int]]:
    """A document's sequences, as Megatron's tool makes them: one per non-empty string of a list (a
    string is a list of one), and the EOD id at the end of the last one with `--append-eod`."""
    settings: RunSettings = _worker.settings
    tokenizer = _worker.tokenizer
    sequences = [ids for ids in (tokenizer.encode(text, parse_special=settings.parse_special)
                                 for text in texts_of(value)) if ids]
    if sequences and settings.append_eod:
        sequences[-1].append(tokenizer.eod_id)
    return sequences


def _encode_field(result: BatchResult, key: str, values: list) -> None:
    """Encode one field of every good record of a batch into `result`: ids, document lengths, and the
    sequence lengths too when a list made a document of several sequences."""
    if _worker.fast is not None and all(isinstance(value, str) for value in values):
        _encode_field_flat(result, key, values)
        return
    documents = [_encode_document(value) for value in values]
    sequences = [ids for document in documents for ids in document]
    sequence_lengths = np.fromiter(map(len, sequences), dtype=np.int64, count=len(sequences))
    flat = np.fromiter(chain.from_iterable(sequences), dtype=np.int64, count=int(sequence_lengths.sum()))  # in C
    _check_vocabulary(flat)
    result.ids[key] = flat.astype(_worker.settings.dtype)
    result.lengths[key] = np.fromiter((sum(map(len, document)) for document in documents), dtype=np.int64,
                                      count=len(documents))
    if len(sequences) != np.count_nonzero(result.lengths[key]):
        result.sequence_lengths[key] = sequence_lengths


def _encode_field_flat(result: BatchResult, key: str, texts: list[str]) -> None:
    """`_encode_field` for documents of one string each, through the fast encoder's flat output: all ids in
    one array and the documents' offsets, no Python list per document; the EOD goes after every non-empty
    document, as the per-document path puts it."""
    ids, offsets = encode_flat(_worker.fast, texts)
    lengths = np.diff(offsets)
    if _worker.settings.append_eod:
        filled = lengths > 0
        ids = np.insert(ids, offsets[1:][filled], np.uint32(_worker.tokenizer.eod_id))
        lengths = lengths + filled
    _check_vocabulary(ids)
    result.ids[key] = ids.astype(_worker.settings.dtype, copy=False)
    result.lengths[key] = lengths


def _check_vocabulary(ids: np.ndarray) -> None:
    """Refuse ids the tokenizer's own vocabulary does not have: cast to the dtype, they would wrap around."""
    vocab_size = _worker.tokenizer.vocab_size
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        bad = int(ids.min()) if ids.min() < 0 else int(ids.max())
        raise UserError(f"tokenizer {_worker.settings.tokenizer} produced id {bad}, outside its vocabulary of "
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


def _start_worker(settings: RunSettings, parent_pid: int) -> None:
    """A pool worker: Ctrl-C and SIGTERM are for its parent to handle (which then stops the pool), and it
    dies with its parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent(parent_pid, signal.SIGKILL)
    _init_worker(settings)


def _encoded(settings: RunSettings, tasks: Iterator, workers: int) -> Iterator[BatchResult]:
    """The batches encoded, in order: in this process with one worker (no copies to and fro) or with the
    fast encoder (which has threads of its own), else in a pool of `workers` processes."""
    if settings.fast_encoder:
        yield from _encoded_beside_parsing(settings, tasks)
        return
    if workers == 1:
        _init_worker(settings)
        yield from map(_encode_batch, tasks)
        return
    pool = None
    try:
        with signals_held():
            pool = process_context().Pool(workers, initializer=_start_worker, initargs=(settings, os.getpid()))
        yield from _bounded_map(pool, _encode_batch, tasks, workers * IN_FLIGHT_PER_WORKER)
    finally:
        if pool is not None:
            pool.terminate()


def _encoded_beside_parsing(settings: RunSettings, tasks: Iterator) -> Iterator[BatchResult]:
    """The fast encoder's way, in this process: this thread parses batch k+1 while a second one hands batch
    k to fastokens, whose own threads encode it without the interpreter lock; the vocabulary loads on that
    second thread while the first batches are parsed."""
    _init_worker(replace(settings, fast_encoder=False))

    def load_fast() -> None:
        global _worker
        _worker = replace(_worker, settings=settings, fast=fast_tokenizer(_worker.tokenizer))

    with ThreadPoolExecutor(1, thread_name_prefix="fast-encoder") as encoder:
        loading = encoder.submit(load_fast)
        pending = deque([loading])
        for task in tasks:
            pending.append(encoder.submit(_encode_records, *_parsed(task)))
            ahead = PARSED_AHEAD if loading.done() else PARSED_WHILE_LOADING
            while len(pending) > ahead or (pending and pending[0].done()):
                done = pending.popleft().result()
                if done is not None:
                    yield done
        while pending:
            done = pending.popleft().result()
            if done is not None:
                yield done


def _count_batch(summary: Summary, result: BatchResult, first_key: str) -> None:
    """Add one encoded batch to the counts of its range (documents are counted on the first key)."""
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


def encode_range(settings: RunSettings, source, byte_range: tuple[int, int | None],
                 writers: dict[str, IndexedWriter], *, workers: int, report: Callable[[Summary], None]) -> Summary:
    """Encode one range of the input `source` (`helpers.corpus.inputs`) into `writers`, calling `report` after
    each batch; its counts."""
    summary = Summary(outputs={key: str(writer.prefix) for key, writer in writers.items()}, dtype=settings.dtype)
    tasks = source.batches(*byte_range, columns=settings.json_keys, refer=True)
    with closing(_encoded(settings, tasks, workers)) as results:
        for result in results:
            for key, writer in writers.items():
                writer.add_documents(result.ids[key], result.lengths[key], result.sequence_lengths.get(key))
            _count_batch(summary, result, settings.json_keys[0])
            report(summary)
            check_signals()
    summary.bytes_written = summary.tokens * np.dtype(settings.dtype).itemsize
    return summary
