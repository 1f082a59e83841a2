"""Notebook 05's your-turn: the check on `fullest_row_that_fits` fails on the likely wrong answers (first fit, no
sort, a document that fills a row exactly treated as not fitting, the emptiest row) and passes the worked one.

The loop around the learner's decision is the notebook's own cell, run here with each answer in turn."""

from __future__ import annotations

import nbformat
import pytest

from helpers.common.paths import NOTEBOOK_DIR, RAW_DIR
from helpers.corpus.build import corpus_paths
from helpers.preprocess import preprocess
from helpers.workshop.exercises.packing import best_fit_fills, corpus_lengths, row_fills
from helpers.workshop.your_turn import check

CAPACITY, SEED = 2048, 0  # the notebook's defaults
SOLUTION = "solutions/05_solutions.ipynb"
SORT = "sorted(range(len(lengths)), key=lambda d: lengths[d], reverse=True)"


@pytest.fixture(scope="module")
def fits(tmp_path_factory) -> list[int]:
    """The documents of at most CAPACITY tokens, in the notebook's order, from notebook 02's preprocessing."""
    out = tmp_path_factory.mktemp("megatron")
    for domain, path in corpus_paths(RAW_DIR).items():
        preprocess(path, out / domain, "llama3", workers=2, append_eod=True)
    lengths = corpus_lengths(out, SEED)
    return lengths[lengths <= CAPACITY].tolist()


def notebook_loop() -> str:
    """The source of the notebook's `best_fit_decreasing`, the loop that calls the learner's function."""
    cells = nbformat.read(NOTEBOOK_DIR / "05_packing_visualization.ipynb", as_version=4).cells
    (source,) = [c.source for c in cells if c.cell_type == "code" and c.source.startswith("def best_fit_decreasing(")]
    assert SORT in source, "the loop sorts longest first"
    return source


def fills_with(choose, fits, sort=True) -> list[int]:
    """The rows' fills the check receives when the learner's `fullest_row_that_fits` is `choose`."""
    source = notebook_loop() if sort else notebook_loop().replace(SORT, "range(len(lengths))")
    namespace = {"fullest_row_that_fits": choose}
    exec(source, namespace)
    return row_fills(namespace["best_fit_decreasing"](fits, CAPACITY), fits)


def best(room, length):  # the worked answer
    fitting = [r for r in range(len(room)) if room[r] >= length]
    return min(fitting, key=lambda r: room[r]) if fitting else None


def first(room, length):
    return next((r for r in range(len(room)) if room[r] >= length), None)


def exact_fill_does_not_fit(room, length):
    fitting = [r for r in range(len(room)) if room[r] > length]
    return min(fitting, key=lambda r: room[r]) if fitting else None


def emptiest(room, length):
    fitting = [r for r in range(len(room)) if room[r] >= length]
    return max(fitting, key=lambda r: room[r]) if fitting else None


def test_the_worked_answer_passes(fits):
    assert check("fullest_row_that_fits", fills_with(best, fits), best_fit_fills(fits, CAPACITY), SOLUTION)


@pytest.mark.parametrize("choose, sort", [(first, True), (best, False), (exact_fill_does_not_fit, True),
                                          (emptiest, True)],
                         ids=["first-fit", "not-sorted-decreasing", "exact-fill-does-not-fit", "emptiest-row"])
def test_a_likely_wrong_answer_fails(fits, choose, sort, capsys):
    assert not check("fullest_row_that_fits", fills_with(choose, fits, sort), best_fit_fills(fits, CAPACITY), SOLUTION)
    assert capsys.readouterr().out.startswith("differs:")


def test_the_shipped_skeleton_says_not_yet(capsys):
    cells = nbformat.read(NOTEBOOK_DIR / "05_packing_visualization.ipynb", as_version=4).cells
    (source,) = [c.source for c in cells if "your-turn" in c.metadata.get("tags", [])]
    namespace = {}
    exec(source, namespace)
    assert namespace["fullest_row_that_fits"]([CAPACITY], 1) is None  # the check cell's test for "not written"
    assert best([CAPACITY], 1) is not None
