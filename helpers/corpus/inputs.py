"""One reader of every input, for preprocessing and cleaning alike.

    source = open_input("data/raw/docs.jsonl")   # .gz, .zst, 'crawl/*.jsonl', Parquet, a saved dataset
    source.check_columns(("text",), flag="--json-keys", lists=True)
    for start, end in source.plan(4):             # contiguous ranges: bytes cut at line ends, or groups
        for batch in source.batches(start, end, ("text",)):
            for number, place, raw, record in records(batch, ("text",), bad, counts):   # helpers.corpus.records
                ...

`open_input` decides once what a path is and refuses, in one line, what cannot be read (missing, empty, a
folder without Parquet, a glob matching nothing or two kinds). It returns one of two classes with the same
methods, so a new input format is one more class:

- `JsonlInput` (`helpers.corpus.ranges`): a JSONL file, plain or compressed, or a glob of them read end to end;
- `ColumnarInput` (`helpers.corpus.columnar_input`): Parquet files, a folder or glob of them, or a dataset
  saved by Hugging Face `datasets`.

Each has: `files` (in reading order), `compressed` (a file without byte offsets to cut at), `group_word` (what a
group is called in `removed.jsonl`, None for JSONL), `each_file()` (each file an input of its own, as cleaning
treats a folder or a glob), `check_columns`, `known_size()` (bytes of JSONL, where the files say so),
`text_size(columns)` (about the bytes of text a run encodes), `range_size(start, end)`, `plan(parts)`,
`batches(start, end, columns, refer)`, and for cleaning's outputs `write_part(...)` and `join_parts(parts, joined)`
in the input's own format. An input is a few paths: it pickles to worker processes and Ray tasks.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

from ..common.errors import UserError
from .columnar import columnar_files, is_columnar
from .columnar_input import ColumnarInput
from .ranges import JsonlInput, refuse_empty


def open_input(path: str | os.PathLike) -> JsonlInput | ColumnarInput:
    """The input `path` names (see the module docstring), refused in one line when nothing can be read."""
    path = Path(path)
    if is_columnar(path):
        if path.is_file():
            refuse_empty(path)
        return ColumnarInput(path, columnar_files(path))
    if glob.has_magic(str(path)) and not path.exists():  # a glob of JSONL files (one matching nothing is columnar)
        return JsonlInput(path, [Path(match) for match in sorted(glob.glob(str(path)))])
    if path.is_dir():
        raise UserError(f"{path}: a folder with no .parquet file in it; fix: give a JSONL or Parquet file, a folder "
                        "of Parquet files, a quoted glob of either, or a folder written by datasets' save_to_disk")
    return JsonlInput(path, [path])
