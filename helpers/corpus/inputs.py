"""One reader of every input, for preprocessing and cleaning alike.

    source = open_input("data/raw/docs.jsonl")   # .gz, .zst, 'crawl/*.jsonl', Parquet, a saved dataset
    source.check_columns(("text",), flag="--json-keys", lists=True)
    for start, end in source.plan(4):             # contiguous ranges: bytes cut at line ends, or groups
        for batch in source.batches(start, end, ("text",)):
            for number, place, raw, record in records(batch, ("text",), bad, counts):   # helpers.corpus.records
                ...

`open_input` decides once what a path is and refuses, in one line, what cannot be read (missing, empty, a
folder holding no file to read or one that no reader takes, a glob matching nothing, a folder or glob of two
kinds). It returns one of two classes with the same methods, so a new input format is one more class:
`JsonlInput` (`helpers.corpus.ranges`: a JSONL file, plain or compressed, or a glob or folder of them read end
to end) or `ColumnarInput` (`helpers.corpus.columnar_input`: Parquet files, a folder or glob of them, or a
dataset saved by Hugging Face `datasets`). Each has: `files` (in reading order), `compressed` (a file without
byte offsets to cut at), `group_word` (what a group is called in `removed.jsonl`, None for JSONL),
`check_columns`, `known_size()` (bytes of JSONL, where the files say so), `text_size(columns)` (about the bytes
of text a run encodes), `range_size(start, end)`, `plan(parts)`, `batches(start, end, columns, refer)`, and for
cleaning's outputs `write_part(...)` and `join_parts(parts, joined)` in the input's own format. An input is a
few paths: it pickles to worker processes and Ray tasks. `input_files` gives the files a path stands for, each
to be read as an input of its own, as cleaning reads them (there a folder may hold both kinds); what a folder
holds is `helpers.corpus.folders`'. docs/preprocessing.md says which inputs the commands take.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

from ..common.errors import UserError
from .columnar import columnar_files, is_columnar, is_saved
from .columnar_input import ColumnarInput
from .folders import folder_files
from .ranges import JsonlInput, refuse_empty


def open_input(path: str | os.PathLike) -> JsonlInput | ColumnarInput:
    """The input `path` names (see the module docstring), refused in one line when nothing can be read."""
    path = Path(path)
    if path.is_dir() and not is_saved(path):
        kinds = folder_files(path)
        if len(kinds) > 1:
            raise UserError(f"{path}: holds {' and '.join(kinds)} files, which one input cannot mix; fix: name one "
                            f"kind with a quoted glob, e.g. '{path}/*.jsonl' or '{path}/*.parquet'")
        [(kind, files)] = kinds.items()
        return JsonlInput(path, files) if kind == "JSONL" else ColumnarInput(path, files)
    if is_columnar(path):
        if path.is_file():
            refuse_empty(path)
        return ColumnarInput(path, columnar_files(path))
    if glob.has_magic(str(path)) and not path.exists():  # a glob of JSONL files (one matching nothing is columnar)
        return JsonlInput(path, [Path(match) for match in sorted(glob.glob(str(path)))])
    return JsonlInput(path, [path])


def input_files(path: str | os.PathLike) -> list[Path]:
    """The files `path` stands for, each an input of its own, in reading order: a file itself, a glob's matches,
    every file a folder holds that a reader takes (both kinds; anything else refused), a saved dataset's Arrow
    files. Nothing is opened: an empty or missing file is the caller's to refuse or pass over."""
    path = Path(path)
    if path.is_dir() and not is_saved(path):
        return sorted(file for files in folder_files(path).values() for file in files)
    if path.is_dir() or glob.has_magic(str(path)) and not path.exists():
        return open_input(path).files
    return [path]
