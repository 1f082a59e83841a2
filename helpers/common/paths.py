"""Repository-relative paths, so notebooks and command lines agree on where data lives."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = REPO_ROOT / "data"
RAW_DIR = DATA_DIR / "raw"
CACHE_DIR = DATA_DIR / "cache"
TOKENIZER_DIR = DATA_DIR / "tokenizers"
RUNS_DIR = REPO_ROOT / "runs"
NOTEBOOK_DIR = REPO_ROOT / "notebooks"
