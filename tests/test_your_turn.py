"""The check after a learner's `your-turn` cell says pass, not yet, or the first difference, and means it."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest

from helpers.workshop.diagrams.pipeline import STAGES, pipeline
from helpers.workshop.your_turn import check, first_difference

matplotlib.use("Agg")


def test_the_shipped_skeleton_is_not_yet_and_names_the_worked_answer(capsys):
    assert check("the header", None, (1, 2), solution="solutions/03_solutions.ipynb") is False
    assert capsys.readouterr().out.startswith("not yet: the header still returns None")


def test_a_right_answer_passes(capsys):
    assert check("the pointers", np.array([0, 8, 20]), np.array([0, 8, 20]), solution="s") is True
    assert capsys.readouterr().out == "pass: the pointers matches helpers\n"


@pytest.mark.parametrize("yours, expected, says", [
    (np.array([0, 8, 21]), np.array([0, 8, 20]), "[2] is 21, expected 20 (1 of 3 values differ)"),
    (np.array([0, 8]), np.array([0, 8, 20]), "shape (2,), expected (3,)"),
    ((1, 2, 4), (1, 2, 3), "[2] is 4, expected 3"),
    ({"a": 1}, {"a": 1, "b": 2}, "has keys ['a'], expected ['a', 'b']"),
    ({"a": [1, 5]}, {"a": [1, 2]}, "['a'][1] is 5, expected 2"),
    (0.5, 0.25, "is 0.5, expected 0.25"),
])
def test_a_wrong_answer_names_where_it_first_differs(yours, expected, says, capsys):
    assert check("it", yours, expected, solution="s") is False
    assert says in capsys.readouterr().out


def test_a_range_is_as_good_as_its_list():
    assert first_difference(range(2, 4), [2, 3]) is None
    assert "[1] is 4, expected 3" in first_difference(range(3, 5), [3, 3])


def test_floats_equal_to_rounding_pass():
    assert first_difference(0.1 + 0.2, 0.3) is None


def test_the_pipeline_strip_highlights_the_stage_and_refuses_an_unknown_one():
    figure = pipeline("blend")
    bold = [t.get_text() for t in figure.axes[0].texts if t.get_fontweight() == "bold"]
    assert bold == ["blend"] and len(STAGES) == 10
    with pytest.raises(ValueError, match="unknown stage"):
        pipeline("shuffle")
