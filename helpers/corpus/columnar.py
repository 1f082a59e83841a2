"""Columnar inputs: Parquet, and datasets saved with Hugging Face `datasets.save_to_disk` (Arrow).

What counts as one (told apart by what is on disk):
- a `.parquet` file, or a folder of them, read in name order;
- a folder written by `save_to_disk`: `state.json` lists its `.arrow` files (Arrow's streaming format);
- a glob of any of these (`'shards/*.parquet'`), its matches in name order.

Only the columns asked for are read, a bounded number of rows at a time (never a whole file). A file is cut
into groups, its Parquet row groups or the record batches of an Arrow stream, and work is cut by groups the
way JSONL is cut by byte ranges: a range is `[start, end)` over the groups of all the files in order, so the
parts read the rows in input order and merge into the bytes of one pass. Each batch stays inside one group
and knows where its rows are, so a bad value names its file, group and row.

Who decodes: a group whose text columns are small (`GROUP_TASK_BYTES`, from the Parquet footer or the Arrow
batch's buffers) can travel as a `GroupRef`, a few numbers, and be read whole by the worker that encodes it,
so decoding runs in parallel and no text crosses a pipe; a larger group is read in batches by the process
that plans the work, as JSONL lines are. pyarrow is imported only here, when such an input is given
(`pip install -e '.[parquet]'`).
"""

from __future__ import annotations

import glob
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..common.errors import UserError

PARQUET, ARROW = ".parquet", ".arrow"
SAVED_STATE = "state.json"  # what save_to_disk writes beside its .arrow files
BATCH_BYTES = 1 << 20  # text per batch of rows, as JSONL's per batch of lines
ROWS_PER_READ = 256  # rows decoded at a time; a batch gathers reads up to the byte budget its caller gives
GROUP_TASK_BYTES = 16 << 20  # text in a group that a worker may read whole (larger groups go in batches)


@dataclass(frozen=True)
class RowsBatch:
    """Rows of one group of one file, as a worker gets them: the text columns by name, and where they are."""

    source: str  # the file
    kind: str  # "row group" or "record batch"
    index: int  # the group's number in its file, from 0
    first_row: int  # the first row's number in its file, from 0
    columns: dict[str, list]

    @property
    def group(self) -> str:
        return f"{self.kind} {self.index}"

    def location(self, index: int) -> str:
        """Where row `index` of this batch is, as a user would look for it."""
        return f"{self.source}: row {self.first_row + index} ({self.group})"


@dataclass(frozen=True)
class GroupRef:
    """One group named, not read: the file, the group's index in it, its first row; `read_group` reads it."""

    source: str
    index: int
    first_row: int


def pyarrow_module():
    try:
        import pyarrow as pa
        import pyarrow.parquet  # noqa: F401  (pa.parquet from here on)
    except ImportError:
        raise UserError("reading Parquet or Arrow needs pyarrow; fix: pip install -e '.[parquet]' "
                        "(or pip install pyarrow)") from None
    return pa


def _is_glob(path: Path) -> bool:
    return glob.has_magic(str(path)) and not path.exists()


def _is_saved_dataset(path: Path) -> bool:
    return path.is_dir() and (path / SAVED_STATE).is_file()


def _is_saved_splits(path: Path) -> bool:
    return path.is_dir() and (path / "dataset_dict.json").is_file()


def is_saved(path: Path) -> bool:
    """A folder written by `save_to_disk`: one dataset, or several splits."""
    return _is_saved_dataset(path) or _is_saved_splits(path)


def is_columnar(path: Path) -> bool:
    """Whether `path` is a columnar input (see the module docstring); a glob is when it matches one, or
    nothing (then refused by `columnar_files`)."""
    if _is_glob(path):
        matches = [Path(match) for match in glob.glob(str(path))]
        return not matches or any(map(is_columnar, matches))
    if _is_saved_dataset(path) or _is_saved_splits(path):
        return True
    if path.is_dir():
        return any(path.glob(f"*{PARQUET}"))
    return path.suffix in (PARQUET, ARROW)


def columnar_files(path: Path) -> list[Path]:
    """The files of a columnar input, in reading order."""
    if _is_glob(path):
        matches = [Path(match) for match in sorted(glob.glob(str(path)))]
        if not matches:
            raise UserError(f"{path}: the pattern matches nothing; fix: check the folder and the pattern")
        others = [match.name for match in matches if not is_columnar(match)]
        if others:
            raise UserError(f"{path}: matches Parquet or saved datasets and also {', '.join(others[:3])}; fix: a "
                            "pattern that matches one kind, e.g. '*.parquet' or '*.jsonl'")
        return [file for match in matches for file in columnar_files(match)]
    if _is_saved_dataset(path):
        return _saved_files(path)
    if _is_saved_splits(path):
        raise UserError(f"{path}: a saved DatasetDict, several splits; fix: name one split's folder, "
                        f"e.g. {path / 'train'}")
    if path.is_dir():
        return sorted(path.glob(f"*{PARQUET}"))
    if not path.is_file():
        raise UserError(f"{path}: no such file; fix: check --input")
    return [path]


def _saved_files(folder: Path) -> list[Path]:
    """The `.arrow` files `save_to_disk` listed in the folder's state.json, in its order."""
    try:
        files = [folder / entry["filename"] for entry in json.loads((folder / SAVED_STATE).read_text())["_data_files"]]
    except (ValueError, KeyError, TypeError) as error:
        raise UserError(f"{folder / SAVED_STATE}: not the state of a saved dataset ({error}); fix: save it again "
                        "with datasets' save_to_disk") from None
    missing = [file.name for file in files if not file.is_file()]
    if missing:
        raise UserError(f"{folder}: {', '.join(missing)} listed in {SAVED_STATE} but missing; fix: copy the "
                        "whole folder again")
    return files


class ColumnarFile:
    """One open file: its schema, its groups' row counts, and the rows of one group."""

    def __init__(self, pa, file: Path):
        self.pa, self.file = pa, file
        try:
            if file.suffix == ARROW:
                self.stream = pa.memory_map(str(file))
                self.schema = pa.ipc.open_stream(self.stream).schema
                self.kind = "record batch"
            else:
                self.parquet = pa.parquet.ParquetFile(file)
                self.schema = self.parquet.schema_arrow
                self.kind = "row group"
        except (pa.ArrowException, OSError) as error:
            raise UserError(f"{file}: not a readable {file.suffix[1:].capitalize()} file ({error}); fix: copy or "
                            "write it again, whole") from None

    def group_rows(self) -> list[int]:
        """Rows in each group, in order (an Arrow stream is walked without decoding its columns)."""
        if self.kind == "row group":
            metadata = self.parquet.metadata
            return [metadata.row_group(index).num_rows for index in range(metadata.num_row_groups)]
        with self._damage_named("its record batches"):
            self.stream.seek(0)
            return [batch.num_rows for batch in self.pa.ipc.open_stream(self.stream)]

    def group_text_bytes(self, columns: tuple[str, ...]) -> list[int]:
        """Bytes of `columns` in each group, decoded: from the footer (Parquet) or the batches' buffers
        (Arrow, memory-mapped: nothing is copied)."""
        if self.kind == "row group":
            metadata = self.parquet.metadata
            return [sum(group.column(c).total_uncompressed_size for c in range(group.num_columns)
                        if group.column(c).path_in_schema.split(".")[0] in columns)
                    for group in map(metadata.row_group, range(metadata.num_row_groups))]
        with self._damage_named("its record batches"):
            self.stream.seek(0)
            return [batch.select(list(columns)).get_total_buffer_size()
                    for batch in self.pa.ipc.open_stream(self.stream)]

    def reads(self, index: int, columns: tuple[str, ...]) -> Iterator:
        """Group `index`, `columns` only, ROWS_PER_READ rows at a time, on this thread (the workers are the
        parallelism: Arrow's own threads would only contend with them for the cores)."""
        with self._damage_named(f"{self.kind} {index}"):
            if self.kind == "row group":
                yield from self.parquet.iter_batches(batch_size=ROWS_PER_READ, row_groups=[index], use_threads=False,
                                                     columns=list(columns))
                return
            self.stream.seek(0)
            for number, batch in enumerate(self.pa.ipc.open_stream(self.stream)):
                if number == index:
                    chosen = batch.select(list(columns))
                    for offset in range(0, chosen.num_rows, ROWS_PER_READ):
                        yield chosen.slice(offset, ROWS_PER_READ)
                    return

    @contextmanager
    def _damage_named(self, what: str):
        """Damage found while decoding: one line naming the file and the part that failed."""
        try:
            yield
        except (self.pa.ArrowException, OSError) as error:
            raise UserError(f"{self.file}: {what} cannot be read ({error}); fix: copy or write the file again, "
                            "whole") from None


_opened_here: dict[tuple, ColumnarFile] = {}  # this process's open files (see `open_columnar`)


def open_columnar(file: Path) -> ColumnarFile:
    """`file` opened once per process for all who read it (checks, planning, the groups a worker reads),
    so its footer is read once; a forked process opens its own, and a file written again is opened again."""
    stat = file.stat()
    key = (os.getpid(), str(file), stat.st_mtime_ns, stat.st_size)
    if key not in _opened_here:
        if len(_opened_here) >= 64:
            _opened_here.clear()
        _opened_here[key] = ColumnarFile(pyarrow_module(), file)
    return _opened_here[key]


def group_batches(opened: ColumnarFile, index: int, first: int, columns: tuple[str, ...],
                   batch_bytes: int) -> Iterator[RowsBatch]:
    """One group's rows in batches of about `batch_bytes` of text."""
    gathered: dict[str, list] = {column: [] for column in columns}
    size, batch_first = 0, first
    for read in opened.reads(index, columns):
        for column in columns:
            values = read.column(column).to_pylist()
            gathered[column] += values
            size += sum(_text_bytes(value) for value in values)
        if size >= batch_bytes:
            yield RowsBatch(source=str(opened.file), kind=opened.kind, index=index, first_row=batch_first, columns=gathered)
            batch_first += len(gathered[columns[0]])
            gathered, size = {column: [] for column in columns}, 0
    if gathered[columns[0]]:
        yield RowsBatch(source=str(opened.file), kind=opened.kind, index=index, first_row=batch_first, columns=gathered)


def read_group(ref: GroupRef, columns: tuple[str, ...]) -> RowsBatch:
    """A referred group read whole, `columns` only, by the process that encodes it."""
    opened = open_columnar(Path(ref.source))
    return next(group_batches(opened, ref.index, first=ref.first_row, columns=columns, batch_bytes=1 << 62),
                RowsBatch(source=ref.source, kind=opened.kind, index=ref.index, first_row=ref.first_row,
                          columns={c: [] for c in columns}))


def _text_bytes(value) -> int:
    if isinstance(value, str):
        return len(value)
    return sum(len(item) for item in value or () if item is not None)
