"""Notebook 00's your-turn check: `load_tokens_strict` passes only when it refuses a missing file and a short one.

The notebook's own cell that defines `load_tokens` (the silent fallback) runs here as it runs there, so the real
file's ids the check expects are exactly the notebook's; the likely wrong answers are that very fallback, a loader
that stops on a missing file but hands back a short one's few ids, and one that forgets the EOD after each document.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
import torch

from helpers.common.paths import NOTEBOOK_DIR
from helpers.corpus.build import read_jsonl
from helpers.tokenizers.zoo import load_tokenizer
from helpers.workshop.exercises.strict_loading import expected_outcomes, outcomes
from helpers.workshop.your_turn import check

NOTEBOOK = NOTEBOOK_DIR / "00_environment_and_corpus.ipynb"
SOLUTION = "solutions/00_solutions.ipynb"


def _parameter(nb, name):
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    scope: dict = {}
    exec(cell.source, scope)
    return scope[name]


@pytest.fixture(scope="module")
def notebook(corpus_dir):
    """The names the notebook's fallback cell defines, run on the real corpus with the notebook's parameters."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "def load_tokens(" in c.source)
    scope = {"Path": Path, "torch": torch, "load_tokenizer": load_tokenizer, "read_jsonl": read_jsonl,
             "corpus_dir": str(corpus_dir), "fallback_tokens": _parameter(nb, "fallback_tokens")}
    exec(cell.source, scope)
    return scope


def _check(notebook, load):
    found = outcomes(load, notebook["real_path"], notebook["missing_path"], notebook["fallback_tokens"])
    return check("load_tokens_strict", found, expected_outcomes(notebook["real_ids"]), solution=SOLUTION)


def _strict_missing_only(notebook):
    """Replaces only the fallback's branch with an error: a short file's few ids still come back."""
    tokenizer = notebook["tokenizer"]

    def load(path, n_tokens):
        if not Path(path).exists():
            raise FileNotFoundError(path)
        ids = []
        for document in read_jsonl(path):
            ids += tokenizer.encode(document["text"]) + [tokenizer.eod_id]
            if len(ids) >= n_tokens:
                break
        return torch.tensor(ids[:n_tokens])
    return load


def _no_eod(notebook):
    """Refuses both, but reads the documents back to back with no EOD between them."""
    tokenizer = notebook["tokenizer"]

    def load(path, n_tokens):
        ids = []
        for document in read_jsonl(path):
            ids += tokenizer.encode(document["text"])
            if len(ids) >= n_tokens:
                return torch.tensor(ids[:n_tokens])
        raise ValueError("too short")
    return load


def _solution(notebook):
    tokenizer = notebook["tokenizer"]

    def load_tokens_strict(path, n_tokens):
        ids = []
        for document in read_jsonl(path):
            ids += tokenizer.encode(document["text"]) + [tokenizer.eod_id]
            if len(ids) >= n_tokens:
                return torch.tensor(ids[:n_tokens])
        raise ValueError(f"{path} holds {len(ids):,} ids, fewer than the {n_tokens:,} asked for")
    return load_tokens_strict


def test_the_skeleton_is_not_yet(notebook, capsys):
    assert _check(notebook, lambda path, n_tokens: None) is False
    assert capsys.readouterr().out.startswith("not yet: load_tokens_strict still returns None")


def test_the_silent_fallback_itself_fails(notebook, capsys):
    assert _check(notebook, notebook["load_tokens"]) is False
    assert "['missing file'] is 'returned 1,000,000 ids', expected 'an error'" in capsys.readouterr().out


def test_a_loader_that_hands_back_a_short_files_ids_fails(notebook, capsys):
    assert _check(notebook, _strict_missing_only(notebook)) is False
    assert "['file too short'] is 'returned 20 ids', expected 'an error'" in capsys.readouterr().out


def test_a_loader_that_forgets_the_eod_fails(notebook, capsys):
    assert _check(notebook, _no_eod(notebook)) is False
    assert "['real file']" in capsys.readouterr().out


def test_the_worked_solution_passes(notebook):
    assert _check(notebook, _solution(notebook)) is True
