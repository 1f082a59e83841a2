"""Repository-relative paths, so notebooks and command lines agree on where data lives."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = REPO_ROOT / "data"
RAW_DIR = DATA_DIR / "raw"
CACHE_DIR = DATA_DIR / "cache"
TOKENIZER_DIR = DATA_DIR / "tokenizers"
RUNS_DIR = REPO_ROOT / "runs"
NOTEBOOK_DIR = REPO_ROOT / "notebooks"


def shown(path) -> str:
    """`path` as a message shows it: relative to the working directory when both lie inside this repository
    (a notebook's `../data/...`), so that printed output carries no absolute path of the machine that ran it;
    otherwise as given."""
    path = Path(path)
    try:
        resolved, here = path.resolve(), Path.cwd().resolve()
        resolved.relative_to(REPO_ROOT)
        here.relative_to(REPO_ROOT)
    except (ValueError, OSError):
        return str(path)
    return os.path.relpath(resolved, here)
