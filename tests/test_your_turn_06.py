"""Notebook 06's your-turn check: `unigram_entropy_nats` passes only as the entropy in nats of the observed ids.

The check's inputs are built here as the notebook builds them (its parameters, its tokenized folder or the same
ids made afresh, its loader); the wrong answers are the likely slips: log base 2, an unseen id's 0 · ln 0 left as
nan, counts never turned into probabilities, probabilities over V instead of over the tokens, a mean for a sum,
and the uniform guess over the observed ids or over the vocabulary.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import nbformat
import numpy as np
import pytest

from helpers.common.paths import NOTEBOOK_DIR
from helpers.datasets.indexed import idx_path
from helpers.datasets.sidecar import data_facts
from helpers.loading.loader import make_dataloader
from helpers.preprocess import output_prefix, preprocess
from helpers.training.train import train_settings
from helpers.workshop.exercises.unigram import check_inputs, expected_entropies, scored_targets, your_entropies
from helpers.workshop.your_turn import check

NOTEBOOK = NOTEBOOK_DIR / "06_training_real_vs_synthetic.ipynb"
NAMES = ["literature", "docs", "code"]


@pytest.fixture(scope="module")
def case(corpus_dir, tmp_path_factory):
    """(inputs, expected, vocab_size) as the notebook's check cell has them with its default parameters."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    p: dict = {}
    exec(next(c for c in nb.cells if "parameters" in c.metadata.get("tags", [])).source, p)
    folder = NOTEBOOK_DIR / f"../data/megatron-06-{p['tokenizer']}"
    if not all(idx_path(output_prefix(folder / name, "text")).exists() for name in NAMES):
        folder = tmp_path_factory.mktemp("megatron-06")  # the same ids, made here as the notebook makes them
        for name in NAMES:
            preprocess(Path(corpus_dir) / f"{name}.jsonl", folder / name, p["tokenizer"], append_eod=True, workers=2,
                       progress=False)
    prefixes = [str(output_prefix(folder / name, "text")) for name in NAMES]
    settings = train_settings(p["preset"])
    S, B, steps = settings.seq_length, settings.batch_size, settings.steps
    data_path = [x for weight, prefix in zip(p["weights"], prefixes) for x in (str(weight), prefix)]
    real = make_dataloader(data_path, split=p["split"], seq_length=S, batch_size=B, num_samples=steps * B,
                           seed=p["seed"], packing=p["packing"])
    vocab_size = data_facts(prefixes[0]).vocab_size
    inputs = check_inputs(scored_targets(real))
    return inputs, expected_entropies(inputs, vocab_size), vocab_size


def _check(case, entropy) -> bool:
    inputs, expected, vocab_size = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log(0) in the answers that forget unseen ids
        return check("unigram_entropy_nats", your_entropies(entropy, inputs, vocab_size), expected,
                     solution="solutions/06_solutions.ipynb")


def _shares(ids, vocab_size):
    counts = np.bincount(ids, minlength=vocab_size)
    return counts[counts > 0] / counts.sum()


WRONG = {
    "log base 2": lambda ids, v: float(-(_shares(ids, v) * np.log2(_shares(ids, v))).sum()),
    "unseen ids left in (0 ln 0 = nan)": lambda ids, v: float(
        -((c := np.bincount(ids, minlength=v) / len(ids)) * np.log(c)).sum()),
    "counts, not probabilities": lambda ids, v: float(
        -((c := np.bincount(ids, minlength=v)[np.bincount(ids, minlength=v) > 0]) * np.log(c)).sum()),
    "probabilities over V, not over the tokens": lambda ids, v: float(
        -((c := np.bincount(ids, minlength=v)[np.bincount(ids, minlength=v) > 0] / v) * np.log(c)).sum()),
    "a mean, not a sum": lambda ids, v: float(-(_shares(ids, v) * np.log(_shares(ids, v))).mean()),
    "uniform over the observed ids": lambda ids, v: math.log(len(np.unique(ids))),
    "uniform over the vocabulary": lambda ids, v: math.log(v),
    "add-one smoothing": lambda ids, v: float(
        -((c := (np.bincount(ids, minlength=v) + 1) / (len(ids) + v)) * np.log(c)).sum()),
}


def test_the_skeleton_is_not_yet(case, capsys):
    assert _check(case, lambda ids, vocab_size: None) is False
    assert capsys.readouterr().out.startswith("not yet: unigram_entropy_nats still returns None")


@pytest.mark.parametrize("mistake", sorted(WRONG))
def test_a_likely_wrong_answer_fails(case, mistake, capsys):
    assert _check(case, WRONG[mistake]) is False
    assert capsys.readouterr().out.startswith("differs: unigram_entropy_nats:")


def test_the_short_input_catches_nan_even_where_every_id_occurs(case):
    """The first 500 targets leave most ids unseen whatever the run's length, so 0 ln 0 shows there."""
    inputs, _, vocab_size = case
    short = next(ids for name, ids in inputs.items() if name != "all training targets")
    assert (np.bincount(short, minlength=vocab_size) == 0).sum() > vocab_size // 2


def test_the_worked_solution_passes(case):
    def unigram_entropy_nats(ids, vocab_size):
        counts = np.bincount(ids, minlength=vocab_size)
        p = counts[counts > 0] / counts.sum()
        return float(-(p * np.log(p)).sum())

    assert _check(case, unigram_entropy_nats) is True
