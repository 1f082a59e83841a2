"""What a folder given as `--input` holds: the files a command can read, by kind, told apart by their names.

JSONL is `.jsonl` or `.json` (each also `.gz` or `.zst`), then `.parquet` and `.arrow` (an Arrow stream, as
`save_to_disk` writes). Names starting with
`.` or `_` are not data (Spark's `_SUCCESS`, checksum files, `.DS_Store`) and are passed over, as pyarrow's
datasets pass them over. Anything else, a subfolder included, is refused in one line naming it: a file that is
never read must not go unmentioned.
"""

from __future__ import annotations

from pathlib import Path

from ..common.errors import UserError
from .ranges import COMPRESSED

KINDS = {".jsonl": "JSONL", ".json": "JSONL", ".parquet": "Parquet", ".arrow": "Arrow"}
SHOWN = 3  # names an error lists before it counts the rest


def kind_of(path: Path) -> str | None:
    """"JSONL", "Parquet", "Arrow", or None (none of them), by the file's name."""
    suffixes = path.suffixes
    if suffixes and suffixes[-1] in COMPRESSED:  # only JSONL is read compressed
        suffixes = suffixes[:-1]
        return "JSONL" if suffixes and KINDS.get(suffixes[-1]) == "JSONL" else None
    return KINDS.get(suffixes[-1]) if suffixes else None


def folder_files(folder: Path) -> dict[str, list[Path]]:
    """The files of `folder` a command reads, by kind, each list in name order; what else it holds refused."""
    found: dict[str, list[Path]] = {}
    others = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith((".", "_")):
            continue
        kind = kind_of(entry) if entry.is_file() else None
        if kind is None:
            others.append(entry.name + ("/" if entry.is_dir() else ""))
        else:
            found.setdefault(kind, []).append(entry)
    if others:
        listed = ", ".join(others[:SHOWN]) + (f" and {len(others) - SHOWN} more" if len(others) > SHOWN else "")
        raise UserError(f"{folder}: holds {listed}, which no reader takes (a folder's files are read when they are "
                        f"{', '.join(KINDS)}, JSONL also .gz or .zst); fix: move "
                        f"{'it' if len(others) == 1 else 'them'} out, or name the files to read, e.g. "
                        f"'{folder}/*.jsonl'")
    if not found:
        raise UserError(f"{folder}: a folder with no .parquet file in it, nor a JSONL one; fix: give a JSONL or "
                        "Parquet file, a folder of them, a quoted glob of either, or a folder written by datasets' "
                        "save_to_disk")
    return found
