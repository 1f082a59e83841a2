"""The corpus as Parquet shards too, as web corpora come: one folder per domain, the JSONL records in their
order, every field a column, a few files of a few row groups each (`python -m helpers.corpus --format
parquet`). Each file is written under a hidden name and renamed when whole; the JSONL stays the source.
"""

from __future__ import annotations

import os
from itertools import islice
from pathlib import Path

from ..common.files import written_atomically
from .columnar import pyarrow_module
from .jsonl import read_jsonl

ROWS_PER_FILE = 512
ROWS_PER_GROUP = 64


def parquet_folder(jsonl_path: Path) -> Path:
    """Where the shards of `DOMAIN.jsonl` go: `parquet/DOMAIN/` beside it."""
    return jsonl_path.parent / "parquet" / jsonl_path.stem


def write_parquet_shards(jsonl_path: str | os.PathLike, rows_per_file: int = ROWS_PER_FILE,
                         rows_per_group: int = ROWS_PER_GROUP) -> list[Path]:
    """The records of `jsonl_path` as `part-NNNNN.parquet` files in `parquet_folder(jsonl_path)` (files of
    an earlier run beyond the new last one are removed); the files, in order."""
    pa = pyarrow_module()
    jsonl_path = Path(jsonl_path)
    folder = parquet_folder(jsonl_path)
    folder.mkdir(parents=True, exist_ok=True)
    records = read_jsonl(jsonl_path)
    written = []
    while chunk := list(islice(records, rows_per_file)):
        path = folder / f"part-{len(written):05d}.parquet"
        with written_atomically(path, "wb") as handle:
            pa.parquet.write_table(pa.Table.from_pylist(chunk), handle, row_group_size=rows_per_group)
        written.append(path)
    for stale in sorted(folder.glob("part-*.parquet"))[len(written):]:
        stale.unlink()
    return written
