"""Shared fixtures: the real corpus (built once, as `make workshop` builds it) and quiet progress bars."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TQDM_DISABLE", "1")  # inherited by notebook kernels started by nbval/papermill
os.environ.setdefault("HELPERS_HEADLESS", "1")  # explorers print their knobs instead of showing widgets


@pytest.fixture(scope="session")
def corpus_dir():
    """data/raw with the three domain files, built from the real sources when missing."""
    from helpers.corpus import build_corpus
    from helpers.paths import RAW_DIR

    build_corpus(RAW_DIR, verbose=False)
    return RAW_DIR
