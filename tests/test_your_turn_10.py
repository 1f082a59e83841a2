"""Notebook 10's check of `law_by_hand` fails on the likely wrong fits and passes the worked answer (and the same
fit written another way, which differs only in the last bits).

The swarm here is synthetic, made for this test: five domains' shares drawn as notebook 10 draws them, and one
domain's loss from a known law, c + exp(t . r), with a little noise."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.runs.mixing_law import fit_log_linear
from helpers.runs.swarm import draw_mixtures
from helpers.workshop.exercises.mixing_law import law_by_hand_case, law_by_hand_expected
from helpers.workshop.your_turn import check

SHARES = np.array(draw_mixtures([9.1, 0.46, 4.8, 0.92, 0.95], 12, seed=0))
LOSSES = 1.6 + np.exp(SHARES @ np.array([0.2, -1.4, 0.1, -0.3, -0.6])) \
    + np.random.default_rng(0).normal(0, 0.01, len(SHARES))


def law_by_hand(shares, losses, floor, mixtures, mistake=None):
    """The worked solution of 10, with one learner's mistake switched on by name."""
    if mistake == "no logarithm":
        b = np.linalg.lstsq(shares, losses - floor, rcond=None)[0]
        return floor + mixtures @ b
    if mistake == "floor not subtracted":
        t = np.linalg.lstsq(shares, np.log(losses), rcond=None)[0]
        return np.exp(mixtures @ t)
    t = np.linalg.lstsq(shares, np.log(losses - floor), rcond=None)[0]
    if mistake == "floor not added back":
        return np.exp(mixtures @ t)
    if mistake == "log10 fitted, exp predicted":
        t = np.linalg.lstsq(shares, np.log10(losses - floor), rcond=None)[0]
        return floor + np.exp(mixtures @ t)
    if mistake == "the swarm's mixtures only":
        return floor + np.exp(shares @ t)
    if mistake == "normal equations":  # the same fit, another order of operations: a pass
        t = np.linalg.solve(shares.T @ shares, shares.T @ np.log(losses - floor))
    return floor + np.exp(mixtures @ t)


def case():
    floor_of_the_law = float(np.exp(fit_log_linear(SHARES, LOSSES, own_domain=1).log_c))
    floor, mixtures = law_by_hand_case(SHARES, LOSSES, floor_of_the_law)
    return floor, mixtures, law_by_hand_expected(SHARES, LOSSES, floor, mixtures)


@pytest.mark.parametrize("mistake", ["no logarithm", "floor not subtracted", "floor not added back",
                                     "log10 fitted, exp predicted", "the swarm's mixtures only"])
def test_the_check_fails_on_a_likely_wrong_fit(mistake, capsys):
    floor, mixtures, expected = case()
    yours = law_by_hand(SHARES, LOSSES, floor, mixtures, mistake)
    assert check("law_by_hand", yours, expected, solution="s", tolerance=1e-6) is False
    assert capsys.readouterr().out.startswith("differs: law_by_hand")


@pytest.mark.parametrize("mistake", [None, "normal equations"])
def test_the_check_passes_the_worked_answer(mistake, capsys):
    floor, mixtures, expected = case()
    assert check("law_by_hand", law_by_hand(SHARES, LOSSES, floor, mixtures, mistake), expected, solution="s",
                 tolerance=1e-6) is True


def test_the_case_keeps_the_floor_under_every_loss_and_predicts_corners_and_uniform():
    floor, mixtures, expected = case()
    assert floor < LOSSES.min()
    assert mixtures.shape == (len(SHARES) + 5 + 1, 5)
    assert np.allclose(mixtures[-1], 0.2) and np.array_equal(mixtures[len(SHARES):-1], np.eye(5))
    assert np.all(np.isfinite(expected))


def test_the_by_hand_fit_lands_near_the_known_law():
    floor, mixtures, expected = case()
    truth = 1.6 + np.exp(mixtures @ np.array([0.2, -1.4, 0.1, -0.3, -0.6]))
    assert np.abs(expected - truth)[:len(SHARES)].max() < 0.05
