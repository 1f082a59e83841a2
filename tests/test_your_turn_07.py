"""Notebook 07's your-turn: the checks on `minhash_signature` and `minhash_estimate` fail on the likely wrong answers
and pass the worked ones.

Wrong signatures: the smallest hash instead of the shingle that has it, its position instead of the shingle, one
hash function for every slot, the largest hash. Wrong estimates: the two signatures compared as sets (shared values
over all values, or over the slots), the equal slots divided by the wrong count or not at all, and the exact
Jaccard of the shingle sets (not an estimate from the signatures). The checks get exactly what the notebook's check
cell hands them: the docs pair of `helpers.workshop.exercises.minhash`, 128 seeds, the reference signatures."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.common.paths import RAW_DIR
from helpers.corpus.build import corpus_paths
from helpers.corpus.jsonl import read_jsonl
from helpers.workshop.exercises import minhash
from helpers.workshop.exercises.minhash import slot_hashes
from helpers.workshop.your_turn import check

NUM_PERM = 128  # the notebook's NUM_PERM: seeds = list(range(NUM_PERM))
SOLUTION = "solutions/07_solutions.ipynb"
SEEDS = list(range(NUM_PERM))


@pytest.fixture(scope="module")
def pair() -> tuple[np.ndarray, np.ndarray]:
    return minhash.pair_shingles(read_jsonl(corpus_paths(RAW_DIR)["docs"]))


@pytest.fixture(scope="module")
def signed(pair) -> tuple[np.ndarray, np.ndarray]:
    return minhash.signature(pair[0], SEEDS), minhash.signature(pair[1], SEEDS)


def worked_signature(shingles, seeds):  # the worked answer
    return np.array([shingles[np.argmin(slot_hashes(shingles, seed))] for seed in seeds])


def worked_estimate(first, second):  # the worked answer
    return float(np.mean(np.asarray(first) == np.asarray(second)))


WRONG_SIGNATURES = {
    "the smallest hash, not its shingle": lambda s, seeds: np.array([slot_hashes(s, seed).min() for seed in seeds]),
    "the shingle's position, not the shingle": lambda s, seeds: np.array([np.argmin(slot_hashes(s, seed))
                                                                          for seed in seeds]),
    "one hash function for every slot": lambda s, seeds: np.array([s[np.argmin(slot_hashes(s, seeds[0]))]] * len(seeds)),
    "the largest hash's shingle": lambda s, seeds: np.array([s[np.argmax(slot_hashes(s, seed))] for seed in seeds]),
}


def shared(first, second):
    return set(np.asarray(first).tolist()) & set(np.asarray(second).tolist())


def every(first, second):
    return set(np.asarray(first).tolist()) | set(np.asarray(second).tolist())


WRONG_ESTIMATES = {
    "as sets: shared values over all values": lambda a, b: len(shared(a, b)) / len(every(a, b)),
    "as sets: shared values over the slots": lambda a, b: len(shared(a, b)) / len(a),
    "equal slots over all distinct values": lambda a, b: float(np.sum(a == b)) / len(every(a, b)),
    "equal slots over both signatures' slots": lambda a, b: float(np.sum(a == b)) / (len(a) + len(b)),
    "equal slots, not divided": lambda a, b: int(np.sum(a == b)),
}


@pytest.mark.parametrize("mistake", list(WRONG_SIGNATURES))
def test_the_signature_check_fails_on_a_likely_mistake(mistake, pair):
    yours = WRONG_SIGNATURES[mistake](pair[0], SEEDS)
    assert check("minhash_signature", yours, minhash.signature(pair[0], SEEDS), solution=SOLUTION) is False


@pytest.mark.parametrize("mistake", list(WRONG_ESTIMATES))
def test_the_estimate_check_fails_on_a_likely_mistake(mistake, signed):
    yours = WRONG_ESTIMATES[mistake](*signed)
    assert check("minhash_estimate", yours, minhash.estimate(*signed), solution=SOLUTION) is False


def test_the_estimate_check_fails_on_the_exact_jaccard(pair, signed):
    a, b = set(pair[0].tolist()), set(pair[1].tolist())
    assert check("minhash_estimate", len(a & b) / len(a | b), minhash.estimate(*signed), solution=SOLUTION) is False


def test_on_this_pair_counting_shared_values_is_not_counting_equal_slots(signed):
    """A shingle can win one slot in one signature and another slot in the other: sets count it, slots do not."""
    assert len(set(signed[0].tolist())) > NUM_PERM // 2
    assert len(shared(*signed)) != int(np.sum(signed[0] == signed[1]))


def test_the_worked_answers_pass(pair, signed, capsys):
    assert check("minhash_signature", worked_signature(pair[0], SEEDS), minhash.signature(pair[0], SEEDS),
                 solution=SOLUTION) is True
    assert check("minhash_estimate", worked_estimate(*signed), minhash.estimate(*signed), solution=SOLUTION) is True
    assert capsys.readouterr().out.count("pass:") == 2


def test_the_estimate_from_the_learners_own_signatures_is_near_the_exact_jaccard(pair):
    estimate = worked_estimate(worked_signature(pair[0], SEEDS), worked_signature(pair[1], SEEDS))
    a, b = set(pair[0].tolist()), set(pair[1].tolist())
    assert abs(estimate - len(a & b) / len(a | b)) < 3 * np.sqrt(0.25 / NUM_PERM)
