"""Parquet inputs: a `.parquet` file, or a folder of them read in name order, as one run's input.

Only the columns asked for are read, a bounded number of rows at a time (never a whole file), and work is
cut by row groups the way JSONL is cut by byte ranges: a range is `[start, end)` over the row groups of all
the files in order, so the parts read the rows in input order and merge into the bytes of one pass. Each
batch stays inside one row group and knows where its rows are, so a bad value names its file, row group
and row. pyarrow is imported only here, when a Parquet input is given (`pip install -e '.[parquet]'`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..common.errors import UserError

SUFFIX = ".parquet"
ROWS_PER_READ = 256  # rows decoded at a time; a batch gathers reads up to the byte budget its caller gives


@dataclass(frozen=True)
class RowsBatch:
    """Rows of one row group, as a worker gets them: the text columns by name, and where they are."""

    source: str  # the file
    row_group: int
    first_row: int  # the first row's number in its file, from 0
    columns: dict[str, list]

    def location(self, index: int) -> str:
        """Where row `index` of this batch is, as a user would look for it."""
        return f"{self.source}: row {self.first_row + index} (row group {self.row_group})"


def _pyarrow_parquet():
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise UserError("reading Parquet needs pyarrow; fix: pip install -e '.[parquet]' (or pip install pyarrow)"
                        ) from None
    return pq


def is_parquet(path: Path) -> bool:
    """Whether `path` is a Parquet input: a `.parquet` file, or a folder holding some."""
    if path.is_dir():
        return any(path.glob(f"*{SUFFIX}"))
    return path.suffix == SUFFIX


def parquet_files(path: Path) -> list[Path]:
    """The files of a Parquet input, in name order."""
    return sorted(path.glob(f"*{SUFFIX}")) if path.is_dir() else [path]


def _open(pq, file: Path):
    import pyarrow as pa

    try:
        return pq.ParquetFile(file)
    except (pa.ArrowException, OSError) as error:
        raise UserError(f"{file}: not a readable Parquet file ({error}); fix: copy or write it again, whole"
                        ) from None


def row_groups(path: Path) -> list[tuple[Path, int, int, int]]:
    """Every row group of the input, in order: (file, its index in the file, first row in the file, rows)."""
    pq = _pyarrow_parquet()
    groups = []
    for file in parquet_files(path):
        metadata = _open(pq, file).metadata
        first = 0
        for index in range(metadata.num_row_groups):
            rows = metadata.row_group(index).num_rows
            groups.append((file, index, first, rows))
            first += rows
    return groups


def check_columns(path: Path, columns: tuple[str, ...]) -> None:
    """Refuse, before anything is written, a file without one of `columns` or with one that holds no text."""
    import pyarrow as pa

    pq = _pyarrow_parquet()
    for file in parquet_files(path):
        schema = _open(pq, file).schema_arrow
        for column in columns:
            if column not in schema.names:
                raise UserError(f"{file}: no column '{column}' (columns: {', '.join(schema.names) or 'none'}); "
                                "fix: name a text column with --json-keys")
            kind = schema.field(column).type
            if pa.types.is_list(kind) or pa.types.is_large_list(kind):
                kind = kind.value_type
            if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
                raise UserError(f"{file}: column '{column}' holds {schema.field(column).type}, not strings; "
                                "fix: name a text column with --json-keys")


def plan_row_groups(path: Path, partitions: int) -> list[tuple[int, int]]:
    """Contiguous ranges `[start, end)` of the input's row groups with about rows/P rows each; empty ranges
    are dropped (a file of fewer row groups than P runs as fewer parts)."""
    rows = [group[3] for group in row_groups(path)]
    total, cuts, seen = sum(rows), [0], 0
    for index, count in enumerate(rows):
        seen += count
        if len(cuts) < partitions and seen * partitions >= total * len(cuts) and index + 1 < len(rows):
            cuts.append(index + 1)
    cuts.append(len(rows))
    return [(start, end) for start, end in zip(cuts, cuts[1:]) if end > start]


def row_batches(path: Path, start: int, end: int | None, *, columns: tuple[str, ...],
                batch_bytes: int) -> Iterator[RowsBatch]:
    """The rows of row groups `[start, end)` (end None: to the last), `columns` only, in batches of about
    `batch_bytes` of text that never cross a row group."""
    pq = _pyarrow_parquet()
    groups = row_groups(path)[start:end]
    opened: dict[Path, object] = {}
    for file, index, first, _ in groups:
        reader = opened.setdefault(file, _open(pq, file))
        gathered: dict[str, list] = {column: [] for column in columns}
        size, batch_first = 0, first
        for read in _reads(reader, file, index, columns):
            for column in columns:
                values = read.column(column).to_pylist()
                gathered[column] += values
                size += sum(_text_bytes(value) for value in values)
            if size >= batch_bytes:
                yield RowsBatch(str(file), index, batch_first, gathered)
                batch_first += len(gathered[columns[0]])
                gathered, size = {column: [] for column in columns}, 0
        if gathered[columns[0]]:
            yield RowsBatch(str(file), index, batch_first, gathered)


def _reads(reader, file: Path, index: int, columns: tuple[str, ...]) -> Iterator:
    """Row group `index` of `file`, ROWS_PER_READ rows at a time; damage found while decoding is one line."""
    import pyarrow as pa

    try:
        yield from reader.iter_batches(batch_size=ROWS_PER_READ, row_groups=[index], columns=list(columns))
    except (pa.ArrowException, OSError) as error:
        raise UserError(f"{file}: row group {index} cannot be read ({error}); fix: copy or write the file again, "
                        "whole") from None


def _text_bytes(value) -> int:
    if isinstance(value, str):
        return len(value)
    return sum(len(item) for item in value or () if item is not None)
