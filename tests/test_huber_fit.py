"""The log-linear law's many-start fit (`helpers.runs.huber_fit`): where it ends, on problems whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.runs.huber_fit import fit_from_starts, huber_costs
from helpers.runs.swarm import draw_mixtures

DELTA = 0.02
SHARES = np.array(draw_mixtures((0.5, 0.3, 0.2), 9, seed=4))
LAW = np.array([0.3, -1.2, 0.4, 0.1])  # log_c, t


def losses_of(parameters: np.ndarray, shares: np.ndarray = SHARES) -> np.ndarray:
    return np.exp(parameters[0]) + np.exp(shares @ parameters[1:])


def test_every_start_reaches_an_exact_law_and_its_loss_is_the_summed_huber_loss_there():
    losses = losses_of(LAW)
    starts = np.array([[log_c, 0.05, 0.05, -0.5] for log_c in (-2.0, -0.5, 1.0, 1.5)])
    ends, costs = fit_from_starts(starts, SHARES, losses, highest=5.0, delta=DELTA)
    np.testing.assert_allclose(ends, np.tile(LAW, (4, 1)), atol=1e-4)
    assert costs.max() < 1e-14
    assert costs == pytest.approx(huber_costs(ends, SHARES, losses, DELTA)[3], rel=1e-12)


def test_parameters_the_loss_pulls_past_their_bound_end_on_it_and_no_move_within_the_bound_lowers_the_loss():
    losses = losses_of(LAW)
    highest = 0.2  # below the law's log_c (0.3) and its last slope (0.4)
    ends, costs = fit_from_starts(np.array([[0.0, 0.05, 0.05, -0.5]]), SHARES, losses, highest=highest,
                                  delta=DELTA)
    assert ends.max() == highest and ends[0, 0] == highest
    assert costs[0] > 1e-4  # the exact law is out of reach
    for index in range(4):
        for move in (-1e-3, 1e-3):
            moved = ends.copy()
            moved[0, index] += move
            if moved[0, index] <= highest:
                assert huber_costs(moved, SHARES, losses, DELTA)[3][0] > costs[0]


def test_a_run_gone_astray_moves_the_law_less_than_under_squared_loss():
    losses = losses_of(LAW)
    astray = losses.copy()
    astray[4] += 0.5  # 25 deltas off
    start = np.array([[0.0, 0.05, 0.05, -0.5]])
    huber, _ = fit_from_starts(start, SHARES, astray, highest=5.0, delta=DELTA)
    squared, _ = fit_from_starts(start, SHARES, astray, highest=5.0, delta=1e6)  # Huber with a delta never reached
    others = np.arange(len(SHARES)) != 4
    huber_error = np.abs(losses_of(huber[0])[others] - losses[others]).max()
    squared_error = np.abs(losses_of(squared[0])[others] - losses[others]).max()
    assert huber_error < squared_error / 3
