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
  them with the zoo's fastest correct encoder and send back numpy arrays; memory stays flat.
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Iterator

import numpy as np
from tqdm.auto import tqdm

from .errors import UserError, run_cli
from .indexed import IndexedDataset, IndexedWriter, merge
from .jsonl import BadRecord, check_json_keys, is_blank, location, numbered_lines, parse_record
from .sidecar import FORMAT, sidecar_path, tokenizer_identity, write_sidecar
from .tokenizers import load_tokenizer

BATCH_BYTES = 1 << 20  # raw JSONL per task sent to a worker
IN_FLIGHT_PER_WORKER = 4


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


def _batches(path: Path, partition: int = 0, partitions: int = 1) -> Iterator[tuple[str, int, list[bytes]]]:
    """Batches of raw lines with the number of their first line; with partitions, every P-th line."""
    with _open_input(path) as handle:
        batch, size, first = [], 0, None
        for number, raw in enumerate(handle, start=1):
            if (number - 1) % partitions != partition:
                continue
            if first is None:
                first = number
            batch.append(raw)
            size += len(raw)
            if size >= BATCH_BYTES:
                yield str(path), first, batch
                batch, size, first = [], 0, None
        if batch:
            yield str(path), first, batch


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
    if partitions > 1:
        summary = _preprocess_partitions(input_path, prefix, tokenizer, json_keys, workers, append_eod,
                                         parse_special_tokens, skip_bad_records, partitions, progress)
    else:
        summary = _preprocess_one(input_path, prefix, tokenizer, json_keys, workers, append_eod,
                                  parse_special_tokens, skip_bad_records, 0, 1, log_interval, progress)
    made_by = load_tokenizer(tokenizer)
    for key, written in summary.outputs.items():  # only now: the .bin/.idx are in place
        write_sidecar(written, sidecar_content(written, made_by, key, input_path, append_eod, parse_special_tokens))
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


def _preprocess_one(input_path: Path, prefix, tokenizer_name: str, json_keys, workers: int, append_eod: bool,
                    parse_special: bool, skip_bad: bool, partition: int, partitions: int, log_interval: int,
                    progress: bool) -> Summary:
    _check_input(input_path)
    tokenizer = load_tokenizer(tokenizer_name)
    dtype = tokenizer.megatron_dtype
    settings = RunSettings(tokenizer_name, tuple(json_keys), append_eod, parse_special, skip_bad, dtype.name)
    prefixes = {key: output_prefix(prefix, key) for key in json_keys}
    summary = Summary(outputs={k: str(p) for k, p in prefixes.items()}, dtype=dtype.name)
    writers = {key: IndexedWriter(p, dtype) for key, p in prefixes.items()}
    bar = tqdm(total=None if input_path.suffix == ".gz" else input_path.stat().st_size, unit="B", unit_scale=True,
               desc=input_path.name, disable=not progress)
    start = time.perf_counter()
    first_skips: list[str] = []
    skipped: Counter = Counter()
    try:
        context = get_context("fork" if sys.platform == "linux" else "spawn")
        next_log = log_interval
        with context.Pool(workers, initializer=_init_worker, initargs=(settings,)) as pool:
            tasks = _batches(input_path, partition, partitions)
            for result in _bounded_map(pool, _encode_batch, tasks, workers * IN_FLIGHT_PER_WORKER):
                for key, writer in writers.items():
                    writer.add_documents(result.ids[key], result.lengths[key], result.sequence_lengths.get(key))
                summary.empty_documents += int((result.lengths[json_keys[0]] == 0).sum())
                summary.documents = writers[json_keys[0]].documents
                summary.tokens = sum(w.tokens for w in writers.values())
                summary.blank_lines += result.blank_lines
                summary.special_documents += result.special_documents
                summary.bytes_read += result.bytes
                skipped.update(result.skipped)
                first_skips.extend(result.first_skips[: max(0, 5 - len(first_skips))])
                elapsed = time.perf_counter() - start
                bar.update(result.bytes)
                bar.set_postfix(docs_s=f"{summary.documents / elapsed:,.0f}",
                                tok_s=f"{summary.tokens / elapsed:,.0f}", refresh=False)
                if log_interval and not progress and summary.documents >= next_log:
                    print(f"processed {summary.documents:,} documents ({summary.documents / elapsed:,.0f} docs/s, "
                          f"{summary.bytes_read / 1e6 / elapsed:.2f} MB/s)", file=sys.stderr)
                    next_log = (summary.documents // log_interval + 1) * log_interval
        if summary.documents == 0:
            raise UserError(f"{input_path}: no document in it (only blank or skipped lines); fix: check --input")
        _forget_sidecars(prefixes.values())
        for writer in writers.values():
            writer.finalize()
    except BaseException:
        for writer in writers.values():
            writer.abort()
        raise
    finally:
        bar.close()
    summary.seconds = time.perf_counter() - start
    summary.skipped = dict(skipped)
    summary.bytes_written = sum(w.tokens for w in writers.values()) * dtype.itemsize
    summary.first_skipped = first_skips
    return summary


def _preprocess_partitions(input_path: Path, prefix, tokenizer, json_keys, workers, append_eod, parse_special,
                           skip_bad, partitions, progress) -> Summary:
    """Megatron's `--partitions`: line i goes to partition i mod P; partitions are merged in order."""
    if workers % partitions:
        raise UserError(f"--workers {workers} is not a multiple of --partitions {partitions}; fix: make it one")
    parts = []
    total = None
    try:
        for p in range(partitions):
            part = _preprocess_one(input_path, f"{prefix}_{p}", tokenizer, json_keys, workers // partitions,
                                   append_eod, parse_special, skip_bad, p, partitions, 0, progress)
            parts.append(part)
        total = Summary(outputs={k: str(output_prefix(prefix, k)) for k in json_keys}, dtype=parts[0].dtype)
        _forget_sidecars(output_prefix(prefix, key) for key in json_keys)
        for key in json_keys:
            merge([output_prefix(f"{prefix}_{p}", key) for p in range(partitions)], output_prefix(prefix, key))
        for part in parts:
            for name in ("documents", "empty_documents", "tokens", "bytes_read", "bytes_written", "blank_lines",
                         "special_documents", "seconds"):
                setattr(total, name, getattr(total, name) + getattr(part, name))
    finally:
        for p in range(partitions):
            for key in json_keys:
                for suffix in (".bin", ".idx"):
                    Path(f"{output_prefix(f'{prefix}_{p}', key)}{suffix}").unlink(missing_ok=True)
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.preprocess", description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, type=Path, help="JSONL file (.gz allowed)")
    parser.add_argument("--output-prefix", required=True, help="writes {prefix}_{key}_document.bin/.idx")
    parser.add_argument("--tokenizer", required=True, help="zoo name (llama3, mistral, ...) or a Hugging Face folder")
    parser.add_argument("--json-keys", nargs="+", default=["text"], help="fields to tokenize (one output each)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--partitions", type=int, default=1, help="split lines round-robin, as Megatron does")
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


if __name__ == "__main__":
    run_cli(main)
