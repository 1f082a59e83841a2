"""Cleaned parts of a columnar input, in its own format: each range's kept rows written as a part file (every
column as it was, the text replaced only where a step changed it, and the columns of the labels a step gave
(added at the end, or replacing a column of that name); one output group per input group that keeps a
row, none for a group left empty), then the parts joined a group at a time, so the joined file is the same for
any number of parts and either engine. A part holds one group's kept rows at a time (Parquet writes a row group
whole)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from ..common.files import written_atomically
from .columnar import ColumnarFile, open_columnar, pyarrow_module


def write_columnar_part(file: Path, start: int, end: int, part: str, *, text_key: str, removed: np.ndarray,
                        rewrite: Callable[[int, str], str | None], fields: dict[str, str] | None = None,
                        labels: Callable[[int], dict] | None = None) -> tuple[int, int]:
    """The kept rows of groups `[start, end)` of `file`, every column, into the file `part` in the input's
    format (written under a name of this process, renamed when complete): one row group (record batch) per
    input group that keeps a row, with the input's schema, the text column replaced by `rewrite(position, text)`
    where that differs (a row it gives None is dropped), and a column per label of `fields` (name: "string" or
    "float") holding `labels(position)`'s. Returns (rows, text bytes) written."""
    pa = pyarrow_module()
    source = open_columnar(Path(file))
    schema = output_schema(pa, source.schema, fields or {})
    kept = _KeptRows(pa, source.schema, text_key=text_key, removed=removed, rewrite=rewrite)
    with written_atomically(part, "wb") as handle, _writer(pa, handle, source, schema) as writer:
        for group in range(start, end):
            pieces = [kept.of(read) for read in source.reads(group, tuple(source.schema.names))]
            table = pa.Table.from_batches(pieces, schema=source.schema)
            if fields:
                table = _labelled(pa, table, schema=schema, fields=fields,
                                  labels=[labels(position) for position in kept.positions])
            _write_group(writer, table)
            kept.positions.clear()
    return kept.rows, kept.bytes


def output_schema(pa, schema, fields: dict[str, str]):
    """`schema` with a column per label of `fields` (a string or a 64-bit float), a column of the same name
    replaced; a saved dataset's features (in the schema's metadata) name them too."""
    for name, kind in fields.items():
        field = pa.field(name, pa.string() if kind == "string" else pa.float64())
        index = schema.get_field_index(name)
        schema = schema.set(index, field) if index >= 0 else schema.append(field)
    metadata = dict(schema.metadata or {})
    if fields and b"huggingface" in metadata:
        described = json.loads(metadata[b"huggingface"])
        described.setdefault("info", {})["features"] = with_label_features(described["info"].get("features", {}),
                                                                           fields)
        metadata[b"huggingface"] = json.dumps(described).encode()
        schema = schema.with_metadata(metadata)
    return schema


def with_label_features(features: dict, fields: dict[str, str]) -> dict:
    """A saved dataset's features (as `dataset_info.json` lists them) with those of the label columns."""
    return {**features, **{name: {"dtype": "string" if kind == "string" else "float64", "_type": "Value"}
                           for name, kind in fields.items()}}


def _labelled(pa, table, schema, fields: dict[str, str], labels: list[dict]):
    """`table` (the kept rows) with the label columns of `fields` set from each row's `labels`."""
    for name in fields:
        column = pa.array([row.get(name) for row in labels], schema.field(name).type)
        index = table.schema.get_field_index(name)
        table = (table.set_column(index, schema.field(name), column) if index >= 0
                 else table.append_column(schema.field(name), column))
    return table


def _writer(pa, sink, source: ColumnarFile, schema):
    """A writer of `source`'s format with `schema`: Parquet, or an Arrow stream as `save_to_disk` writes."""
    if source.kind == "row group":
        return pa.parquet.ParquetWriter(sink, schema)
    return pa.ipc.new_stream(sink, schema)


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
    """Filters record batches read in order: drops null texts (bad records), removed rows and rows `rewrite`
    drops (None), rewrites texts."""

    def __init__(self, pa, schema, text_key: str, removed: np.ndarray, rewrite: Callable[[int, str], str | None]):
        self.pa, self.schema, self.text_key, self.removed, self.rewrite = pa, schema, text_key, removed, rewrite
        self.column = schema.get_field_index(text_key)
        self.position = 0  # of the next good row, in the range
        self.positions: list[int] = []  # of the rows kept since they were last taken
        self.rows = self.bytes = 0

    def of(self, read):
        """The kept rows of `read`, the text changed where `rewrite` changes it."""
        keep, texts, changed = [], [], False
        for text in read.column(self.column).to_pylist():
            if text is None:
                keep.append(False)
                continue
            position = self.position
            self.position += 1
            new = None if self.removed[position] else self.rewrite(position, text)
            keep.append(new is not None)
            if new is not None:
                self.positions.append(position)
                changed = changed or new != text
                texts.append(new)
                self.bytes += len(new.encode("utf-8"))
        chosen = read.filter(self.pa.array(keep, self.pa.bool_()))
        self.rows += chosen.num_rows
        if changed:
            field = self.schema.field(self.column)
            chosen = chosen.set_column(self.column, field, self.pa.array(texts, field.type))
        return chosen


def join_columnar_parts(parts: list[Path], joined: Path, source: Path, fields: dict[str, str] | None = None) -> None:
    """The parts' groups, in order, into one file with `source`'s format and schema (and the label columns of
    `fields`), a group at a time."""
    pa = pyarrow_module()
    opened = open_columnar(source)
    schema = output_schema(pa, opened.schema, fields or {})
    with open(joined, "wb") as sink, _writer(pa, sink, opened, schema) as writer:
        for part in parts:
            for group in _part_groups(pa, part, opened, schema):
                _write_group(writer, group)
            part.unlink()


def _part_groups(pa, part: Path, source: ColumnarFile, schema) -> Iterator:
    """The groups of a part file (written in `source`'s format with `schema`), one table at a time."""
    if source.kind == "row group":
        with pa.parquet.ParquetFile(part) as written:
            for group in range(written.num_row_groups):
                yield written.read_row_group(group, use_threads=False)
        return
    with pa.memory_map(str(part)) as stream:
        for batch in pa.ipc.open_stream(stream):
            yield pa.Table.from_batches([batch], schema=schema)
