"""Notebook 08's your-turn: the check on `rank_rows` fails on the likely wrong layouts and passes the worked one,
against the loader's own rows of the notebook's blend (notebook 08's data/megatron-08, or made from data/raw in a
temporary folder when it is missing)."""

from __future__ import annotations

import pytest

from helpers.common.paths import REPO_ROOT
from helpers.datasets.indexed import idx_path
from helpers.preprocess import output_prefix, preprocess
from helpers.workshop.exercises.ranks import answers, loader_rows
from helpers.workshop.your_turn import check

NAMES, WEIGHTS, SEQ_LENGTH = ("literature", "docs", "code"), (0.5, 0.3, 0.2), 128


@pytest.fixture(scope="module")
def expected(tmp_path_factory):
    """The check's expected rows, on notebook 08's blend of the byte-tokenized corpus."""
    data_dir, data_path = REPO_ROOT / "data" / "megatron-08", []
    if not all(idx_path(output_prefix(data_dir / name, "text")).exists() for name in NAMES):
        data_dir = tmp_path_factory.mktemp("megatron-08")
    for name, weight in zip(NAMES, WEIGHTS):
        prefix = output_prefix(data_dir / name, "text")
        if not idx_path(prefix).exists():
            preprocess(REPO_ROOT / "data" / "raw" / f"{name}.jsonl", data_dir / name, "bytes", append_eod=True,
                       workers=2, progress=False)
        data_path += [str(weight), str(prefix)]
    return loader_rows(data_path, SEQ_LENGTH)


def worked(global_batch_size, rank, world_size):  # the solution notebook's answer
    per_rank = global_batch_size // world_size
    return list(range(rank * per_rank, (rank + 1) * per_rank))


WRONG = {
    "interleaved (rows i::world_size)": lambda g, r, w: list(range(r, g, w)),
    "rank counted from 1": lambda g, r, w: list(range((r - 1) * (g // w), r * (g // w))),
    "the global batch as each rank's batch": lambda g, r, w: list(range(r * g, (r + 1) * g)),
    "every rank the first slice": lambda g, r, w: list(range(g // w)),
}


@pytest.mark.parametrize("mistake", WRONG)
def test_the_check_fails_on_a_likely_wrong_answer(expected, mistake, capsys):
    assert check("rank_rows", answers(WRONG[mistake]), expected, solution="s") is False
    assert capsys.readouterr().out.startswith("differs: rank_rows")


def test_the_check_passes_the_worked_answer_and_says_not_yet_to_the_skeleton(expected, capsys):
    assert check("rank_rows", answers(worked), expected, solution="s") is True
    assert check("rank_rows", answers(lambda g, r, w: None), expected, solution="s") is False
    assert "not yet" in capsys.readouterr().out.splitlines()[-1]
