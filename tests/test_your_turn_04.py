"""Notebook 04's check of `blending_order` fails on the likely wrong greedy rules and passes the worked answer."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.datasets.blending import normalize, sizes_per_dataset
from helpers.workshop.exercises.blending_order import blending_cases
from helpers.workshop.your_turn import check

WEIGHTS = normalize([0.5, 0.3, 0.2])  # notebook 04's blend.weights
SIZE = sum(sizes_per_dataset(WEIGHTS, 4000))  # len(train) at its train_samples


def blending_order(weights, size, mistake=None):
    """The worked solution of 04, with one learner's mistake switched on by name."""
    weights = np.asarray(weights, dtype=np.float64)
    counts = np.zeros(weights.size, dtype=np.int64)
    dataset_index = np.zeros(size, dtype=np.int64)
    dataset_sample_index = np.zeros(size, dtype=np.int64)
    for i in range(size):
        lags = weights * (i if mistake == "i, not max(i, 1)" else max(i, 1)) - counts
        if mistake == "largest weight, not largest lag":
            k = int(np.argmax(weights))
        elif mistake == "ties to the last":
            k = int(lags.size - 1 - np.argmax(lags[::-1]))
        elif mistake == "i + 1, not max(i, 1)":
            k = int(np.argmax(weights * (i + 1) - counts))
        elif mistake == "float32":
            k = int(np.argmax(weights.astype(np.float32) * np.float32(max(i, 1)) - counts.astype(np.float32)))
        else:
            k = int(np.argmax(lags))
        dataset_index[i] = k
        dataset_sample_index[i] = {"sample number over all sources": i,
                                   "count after adding 1": counts[k] + 1}.get(mistake, counts[k])
        counts[k] += 1
    return dataset_index, dataset_sample_index


MISTAKES = ["largest weight, not largest lag", "ties to the last", "sample number over all sources",
            "count after adding 1", "i, not max(i, 1)", "i + 1, not max(i, 1)", "float32"]


def answers(mistake=None):
    inputs, expected = blending_cases(WEIGHTS, SIZE)
    return [blending_order(w, size, mistake) for w, size in inputs], expected


@pytest.mark.parametrize("mistake", MISTAKES)
def test_the_check_fails_on_a_likely_wrong_rule(mistake, capsys):
    yours, expected = answers(mistake)
    assert check("blending_order", yours, expected, solution="s") is False
    assert capsys.readouterr().out.startswith("differs: blending_order")


def test_the_check_passes_the_worked_answer(capsys):
    yours, expected = answers()
    assert check("blending_order", yours, expected, solution="s") is True
    assert SIZE == 4000
