"""Columnar inputs in `helpers.clean`: which files an `--input` names, the rows the passes read, and the
part files the last pass writes and joins.

An input may be a Parquet file, a folder of them or a quoted glob of them (`'shards/*.parquet'`, or of JSONL
files), or a dataset saved by Hugging Face `save_to_disk`; a folder or a glob stands for its files, each an
input of its own, cleaned into `OUT/<that file's name>`; a saved dataset's Arrow files are cleaned into
`OUT/<its folder's name>/`, beside a copy of its `dataset_info.json` and a `state.json` listing them, so that
`datasets.load_from_disk` opens the result. A range of a columnar input is `[start, end)` over its groups
(row groups, or an Arrow file's record batches: `helpers.corpus.ranges`). The first passes read only the
text column, and `id` where the file has one (the ids `removed.jsonl` names), a bounded number of rows at a
time. The last pass reads every column of its groups and writes their kept rows in the input's format and
schema: every other column as it was, the text replaced only where a step changed it; one output group per
input group (none for a group left empty), so the joined file is the same for any number of parts and
either engine. It holds one group's kept rows at a time (Parquet writes a row group whole), and the parts
are joined a group at a time. A null text is a bad record, named by file, row and group.
"""

from __future__ import annotations

import glob
import hashlib
import json
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from ..common.errors import UserError
from ..common.files import written_atomically
from ..corpus.columnar import (ARROW, PARQUET, SAVED_STATE, ColumnarFile, check_columns, columnar_files, is_columnar,
                               open_columnar, pyarrow_module)
from ..corpus.ranges import batches, check_input
from ..corpus.ranges import input_files as jsonl_glob_files

NULL_KIND = "null value"


# --- which files an --input names ----------------------------------------------------------------

def input_files(path: Path) -> list[Path]:
    """The files one `--input` stands for: a JSONL or Parquet file itself; a folder's Parquet files, a saved
    dataset's Arrow files, or a glob's matches (JSONL or columnar, not both), in reading order. Refused in
    one line: what cleaning cannot read or write."""
    if _is_pattern(path) and not is_columnar(path):  # a glob of JSONL files
        files = jsonl_glob_files(path)
        for file in files:
            check_input(file)  # empty
        return files
    if path.is_dir() and not is_columnar(path):
        raise UserError(f"{path}: a folder with no .parquet file in it; fix: give JSONL files, a Parquet file, a "
                        "folder of Parquet files, a saved dataset's folder or a quoted glob")
    if not is_columnar(path):
        check_input(path)  # missing or empty
        return [path]
    files = columnar_files(path)  # a DatasetDict (several splits) is refused there, naming one split's folder
    for file in files:
        check_input(file)  # empty
    return files


def saved_folder(file: Path) -> Path | None:
    """The folder written by `save_to_disk` that an Arrow file belongs to, if it does."""
    return file.parent if file.suffix == ARROW and (file.parent / SAVED_STATE).is_file() else None


def _is_pattern(path: Path) -> bool:
    return glob.has_magic(str(path)) and not path.exists()


def is_parquet(path: Path) -> bool:
    """Whether an input file (one of `input_files`) is columnar: Parquet, or Arrow (a saved dataset's)."""
    return path.suffix in (PARQUET, ARROW)


def group_word(path: Path) -> str | None:
    """What `removed.jsonl` calls a group of an input file: row_group, record_batch, or None for JSONL."""
    return {PARQUET: "row_group", ARROW: "record_batch"}.get(path.suffix)


# --- checks and reading ------------------------------------------------------------------------------

def read_columns(file: Path, text_key: str) -> tuple[str, ...]:
    """The columns the first passes read from `file`: the text, then `id` where there is one. A file without
    the text column, or with one that holds something else than strings, is refused in one line."""
    check_columns(file, (text_key,), flag="--json-key", lists=False)  # cleaning rewrites strings only
    schema = open_columnar(file).schema
    return (text_key,) + (("id",) if "id" in schema.names and text_key != "id" else ())


def null_reason(key: str) -> str:
    return f"column '{key}' is null; fix: drop the row or store text (an empty string is an empty document)"


def parquet_records(task, text_key: str, skip_bad_records: bool, bad: list | None = None,
                    counts: dict | None = None) -> Iterator[tuple[int, int, None, dict]]:
    """(row, row group, None, record) of the range's good rows, `record` holding the columns the first passes
    read. A null text raises a `UserError` naming file, row and row group, unless `skip_bad_records`: then
    it goes into `bad` (when given). `counts["bytes"]` adds up the text bytes read."""
    for batch in batches(Path(task.path), task.start, task.end, columns=task.columns):
        group = int(batch.group.rsplit(" ", 1)[1])  # "row group 3"
        texts = batch.columns[text_key]
        for index, text in enumerate(texts):
            row = batch.first_row + index
            if text is None:
                if not skip_bad_records:
                    raise UserError(f"{batch.location(index)}: {null_reason(text_key)}")
                if bad is not None:
                    bad.append((row, group, NULL_KIND, null_reason(text_key)))
                continue
            if counts is not None:
                counts["bytes"] += len(text.encode("utf-8"))
            yield row, group, None, {key: batch.columns[key][index] for key in task.columns}


def range_bytes(path: str, start: int, end: int) -> int:
    """The size of groups `[start, end)` of a columnar file, uncompressed (for progress bars)."""
    opened = open_columnar(Path(path))
    if opened.kind == "row group":
        metadata = opened.parquet.metadata
        return sum(metadata.row_group(index).total_byte_size for index in range(start, end))
    return sum(opened.group_text_bytes(tuple(opened.schema.names))[start:end])


# --- writing -----------------------------------------------------------------------------------------

def write_parquet_part(task, text_key: str, removed: np.ndarray, rewrite: Callable[[str], str],
                       part: str) -> tuple[int, int]:
    """The range's kept rows, every column, into the file `part` in the input's format (written under a
    name of this process, renamed when complete): one row group (record batch) per input group that keeps a
    row, with the input's schema, the text column replaced by `rewrite(text)` where that differs. Returns
    (rows, text bytes) written."""
    pa = pyarrow_module()
    source = open_columnar(Path(task.path))
    kept = _KeptRows(pa, source.schema, text_key=text_key, removed=removed, rewrite=rewrite)
    with written_atomically(part, "wb") as handle, _writer(pa, handle, source) as writer:
        for group in range(task.start, task.end):
            pieces = [kept.of(read) for read in source.reads(group, tuple(source.schema.names))]
            _write_group(writer, pa.Table.from_batches(pieces, schema=source.schema))
    return kept.rows, kept.bytes


def _writer(pa, sink, source: ColumnarFile):
    """A writer of `source`'s format and schema: Parquet, or an Arrow stream as `save_to_disk` writes."""
    if source.kind == "row group":
        return pa.parquet.ParquetWriter(sink, source.schema)
    return pa.ipc.new_stream(sink, source.schema)


def _write_group(writer, table) -> None:
    """One table as one row group or record batch (none when empty), its columns in one chunk each so that
    the encoding does not depend on how the rows were read."""
    if not table.num_rows:
        return
    if hasattr(writer, "write_batch"):  # an Arrow stream
        writer.write_table(table.combine_chunks())
    else:
        writer.write_table(table.combine_chunks(), row_group_size=table.num_rows)


class _KeptRows:
    """Filters record batches read in order: drops null texts (bad records) and removed rows, rewrites texts."""

    def __init__(self, pa, schema, text_key: str, removed: np.ndarray, rewrite: Callable[[str], str]):
        self.pa, self.schema, self.text_key, self.removed, self.rewrite = pa, schema, text_key, removed, rewrite
        self.column = schema.get_field_index(text_key)
        self.position = 0  # of the next good row, in the range
        self.rows = self.bytes = 0

    def of(self, read):
        """The kept rows of `read`, the text changed where `rewrite` changes it."""
        keep, texts, changed = [], [], False
        for text in read.column(self.column).to_pylist():
            if text is None:
                keep.append(False)
                continue
            keep.append(not self.removed[self.position])
            self.position += 1
            if keep[-1]:
                new = self.rewrite(text)
                changed = changed or new != text
                texts.append(new)
                self.bytes += len(new.encode("utf-8"))
        chosen = read.filter(self.pa.array(keep, self.pa.bool_()))
        self.rows += chosen.num_rows
        if changed:
            field = self.schema.field(self.column)
            chosen = chosen.set_column(self.column, field, self.pa.array(texts, field.type))
        return chosen


def join_parquet_parts(parts: list[Path], joined: Path, source: Path) -> None:
    """The parts' groups, in order, into one file with `source`'s format and schema, a group at a time."""
    pa = pyarrow_module()
    opened = open_columnar(source)
    with open(joined, "wb") as sink, _writer(pa, sink, opened) as writer:
        for part in parts:
            for group in _part_groups(pa, part, opened):
                _write_group(writer, group)
            part.unlink()


def _part_groups(pa, part: Path, source: ColumnarFile) -> Iterator:
    """The groups of a part file (written in `source`'s format), one table at a time."""
    if source.kind == "row group":
        with pa.parquet.ParquetFile(part) as written:
            for group in range(written.num_row_groups):
                yield written.read_row_group(group, use_threads=False)
        return
    with pa.memory_map(str(part)) as stream:
        for batch in pa.ipc.open_stream(stream):
            yield pa.Table.from_batches([batch], schema=source.schema)


def saved_state(folder: Path, files: list[str], written: list[Path]) -> tuple[str, str]:
    """The `state.json` of a cleaned saved dataset, listing its `files`, with a fingerprint of their
    contents (a new one: the rows differ), and its `dataset_info.json` as the input had it."""
    state = json.loads((folder / SAVED_STATE).read_text())
    digest = hashlib.sha256(state.get("_fingerprint", "").encode())
    for path in written:
        with open(path, "rb") as handle:
            while block := handle.read(16 << 20):
                digest.update(block)
    state["_data_files"] = [{"filename": name} for name in files]
    state["_fingerprint"] = digest.hexdigest()[:16]
    info = folder / "dataset_info.json"
    return json.dumps(state, indent=2) + "\n", info.read_text() if info.is_file() else "{}\n"
