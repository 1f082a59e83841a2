"""A columnar input as one object: Parquet files, a folder or glob of them, or a saved dataset's Arrow files,
checked, cut into ranges of groups, read in batches of rows, and its cleaned parts written and joined in its own
format (`helpers.corpus.inputs` opens it; the files and groups are `helpers.corpus.columnar`'s)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from ..common.errors import UserError
from . import columnar
from .columnar import (
    ARROW,
    BATCH_BYTES,
    ColumnarFile,
    GroupRef,
    RowsBatch,
    group_batches,
    open_columnar,
    pyarrow_module,
)
from .columnar_parts import join_columnar_parts, write_columnar_part


class ColumnarInput:
    """A Parquet file, a folder or glob of them, or a saved dataset's Arrow files (`helpers.corpus.inputs`
    opens it): checked, cut into ranges of groups, read in batches of rows; see the module docstring."""

    columnar = True
    compressed = False

    def __init__(self, path: Path, files: list[Path]):
        self.path, self.files = path, files

    def absolute(self) -> "ColumnarInput":
        """The same input named by absolute paths (for a worker elsewhere: a Ray task)."""
        return ColumnarInput(Path(os.path.abspath(self.path)), [Path(os.path.abspath(file)) for file in self.files])

    @property
    def group_word(self) -> str:
        """What `removed.jsonl` calls a group of the input: row_group, or record_batch for Arrow."""
        return "record_batch" if self.files and self.files[0].suffix == ARROW else "row_group"

    def known_size(self) -> None:
        """Unknown in bytes of JSONL: a run counts the bytes of its texts."""
        return None

    def text_size(self, columns: tuple[str, ...]) -> int:
        """The bytes of text a run encodes: `columns` decoded, from each file's footer or buffers."""
        return sum(sum(open_columnar(file).group_text_bytes(columns)) for file in self.files)

    def range_size(self, start: int, end: int) -> int:
        """The size of groups `[start, end)` of a one-file input, uncompressed (for progress bars)."""
        opened = open_columnar(self.files[0])
        if opened.kind == "row group":
            metadata = opened.parquet.metadata
            return sum(metadata.row_group(index).total_byte_size for index in range(start, end))
        return sum(opened.group_text_bytes(tuple(opened.schema.names))[start:end])

    def groups(self) -> list[tuple[ColumnarFile, int, int, int]]:
        """Every group of the input, in order: (file, its index in the file, first row in the file, rows)."""
        found = []
        for file in self.files:
            opened = open_columnar(file)
            first = 0
            for index, rows in enumerate(opened.group_rows()):
                found.append((opened, index, first, rows))
                first += rows
        return found

    def check_columns(self, columns: tuple[str, ...], *, flag: str = "--json-keys", lists: bool = True) -> None:
        """Refuse, before anything is written, a file without one of `columns` or with one that holds no text
        (strings, or with `lists` lists of strings); the fix names the command's `flag`."""
        pa = pyarrow_module()
        for file in self.files:
            schema = open_columnar(file).schema
            for column in columns:
                if column not in schema.names:
                    raise UserError(f"{file}: no column '{column}' (columns: {', '.join(schema.names) or 'none'}); "
                                    f"fix: name a text column with {flag}")
                kind = schema.field(column).type
                if lists and (pa.types.is_list(kind) or pa.types.is_large_list(kind)):
                    kind = kind.value_type
                if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
                    raise UserError(f"{file}: column '{column}' holds {schema.field(column).type}, not strings; "
                                    f"fix: name a text column with {flag}")

    def plan(self, partitions: int) -> list[tuple[int, int]]:
        """Contiguous ranges `[start, end)` of the input's groups with about rows/P rows each; empty ranges are
        dropped (an input of fewer groups than P runs as fewer parts)."""
        rows = [group[3] for group in self.groups()]
        total, cuts, seen = sum(rows), [0], 0
        for index, count in enumerate(rows):
            seen += count
            if len(cuts) < partitions and seen * partitions >= total * len(cuts) and index + 1 < len(rows):
                cuts.append(index + 1)
        cuts.append(len(rows))
        return [(start, end) for start, end in zip(cuts, cuts[1:]) if end > start]

    def batches(self, start: int = 0, end: int | None = None, columns: tuple[str, ...] = ("text",),
                refer: bool = False, batch_bytes: int = BATCH_BYTES) -> Iterator[RowsBatch | GroupRef]:
        """The rows of groups `[start, end)` (end None: to the last), `columns` only, in batches of about
        `batch_bytes` of text that never cross a group. With `refer`, a group of at most GROUP_TASK_BYTES comes
        as a `GroupRef` for the process that encodes it to read (`read_group`)."""
        sizes: dict[Path, list[int]] = {}
        for opened, index, first, _ in self.groups()[start:end]:
            if refer:
                if opened.file not in sizes:
                    sizes[opened.file] = opened.group_text_bytes(columns)
                if sizes[opened.file][index] <= columnar.GROUP_TASK_BYTES:
                    yield GroupRef(str(opened.file), index, first)
                    continue
            yield from group_batches(opened, index, first=first, columns=columns, batch_bytes=batch_bytes)

    def write_part(self, start: int, end: int, part: str, *, text_key: str, removed: np.ndarray,
                   rewrite: Callable[[int, str], str | None], bad=None, fields: dict | None = None,
                   labels: Callable[[int], dict] | None = None) -> tuple[int, int]:
        """Groups `[start, end)` of a one-file input, their kept rows (good records not `removed`, the text
        `rewrite(position, text)`n, or dropped where that is None), every column, and the columns `fields` holding
        each row's `labels(position)`, into the file `part` in the input's format; (rows, text bytes) written."""
        return write_columnar_part(self.files[0], start, end, part, text_key=text_key, removed=removed,
                                   rewrite=rewrite, fields=fields or {}, labels=labels)

    def join_parts(self, parts: list[Path], joined: Path, fields: dict | None = None) -> None:
        """The parts written by `write_part` (with the same `fields`), in order, into one file of the input's
        format."""
        join_columnar_parts(parts, joined, self.files[0], fields=fields or {})
