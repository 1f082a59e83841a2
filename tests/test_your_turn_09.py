"""Notebook 09's your-turn check passes the worked answer and fails the likely wrong ones, on the notebook's batch."""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import numpy as np
import pytest

from helpers.audit.statistics import pooled_pairs
from helpers.common.paths import DATA_DIR, NOTEBOOK_DIR, RAW_DIR
from helpers.datasets.indexed import idx_path
from helpers.loading.loader import make_dataloader
from helpers.preprocess import output_prefix, preprocess
from helpers.workshop.exercises.equal_pairs import batch_windows, expected_pairs
from helpers.workshop.your_turn import check

NOTEBOOK = NOTEBOOK_DIR / "09_is_my_batch_real.ipynb"


def parameters() -> dict:
    """The notebook's parameters cell, value by value."""
    cell = next(c for c in nbformat.read(NOTEBOOK, as_version=4).cells if "parameters" in c.metadata.get("tags", []))
    return {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(cell.source).body}


@pytest.fixture(scope="module")
def windows(tmp_path_factory) -> np.ndarray:
    """The first batch's windows, read as the notebook reads them: the literature domain in its first tokenizer,
    from the notebook's data folder when it made it, else made here."""
    p = parameters()
    name = p["tokenizers"][0]
    prefix = output_prefix(DATA_DIR / "audit-09" / f"{name}-literature", "text")
    if not idx_path(prefix).exists():
        made = tmp_path_factory.mktemp("audit-09") / f"{name}-literature"
        preprocess(RAW_DIR / "literature.jsonl", made, name, append_eod=True, workers=2, progress=False)
        prefix = output_prefix(made, "text")
    loader = make_dataloader([str(Path(prefix).resolve())], split="98,2,0", seq_length=p["seq_length"],
                             batch_size=p["batch_size"], num_samples=max(p["audit_steps"], p["train_steps"])
                             * p["batch_size"], seed=p["seed"], cache_dir=None)
    return batch_windows(loader.batch_at(0)["input_ids"])


def counts(window) -> np.ndarray:
    return np.unique(window, return_counts=True)[1]


def worked(window) -> int:
    """The solution notebook's answer."""
    c = counts(window)
    return int((c * (c - 1) // 2).sum())


WRONG = {
    "adjacent equal ids only": lambda w: int((w[1:] == w[:-1]).sum()),
    "the last position left out": lambda w: worked(w[:-1]),
    "the first position left out": lambda w: worked(w[1:]),
    "each position paired with itself too (i <= j)": lambda w: int((counts(w) * (counts(w) + 1) // 2).sum()),
    "ordered pairs (i != j)": lambda w: int((counts(w) * (counts(w) - 1)).sum()),
    "repeats, not pairs": lambda w: int((counts(w) - 1).sum()),
}


def test_the_worked_answer_passes(windows):
    assert check("equal pairs in each window", [worked(w) for w in windows], expected_pairs(windows), solution="s")


@pytest.mark.parametrize("mistake", WRONG)
def test_a_likely_wrong_answer_fails(windows, mistake):
    assert not check("equal pairs in each window", [WRONG[mistake](w) for w in windows], expected_pairs(windows),
                     solution="s")


def test_the_whole_batch_counted_at_once_fails(windows):
    pooled = pooled_pairs(windows)[1]
    adjacent = int((windows.ravel()[1:] == windows.ravel()[:-1]).sum())
    for answer in (pooled, [pooled], [pooled] * len(windows), adjacent, [adjacent] * len(windows)):
        assert not check("equal pairs in each window", answer, expected_pairs(windows), solution="s")
