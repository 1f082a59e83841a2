"""10's your-turn, `law_by_hand`: one domain's log-linear law, fitted with a logarithm and least squares.

With the floor c known, L = c + exp(r . t) becomes log(L - c) = r . t: a linear regression of log(L - c) on the
shares. The check runs the learner's function on the swarm and compares its predictions with the same regression
done here; the notebook then sets them beside the law fitted by Huber loss."""

from __future__ import annotations

import numpy as np

FLOOR_MARGIN = 0.98  # the floor stays below every measured loss, so that log(L - c) exists


def law_by_hand_case(shares: np.ndarray, losses: np.ndarray, fitted_floor: float) -> tuple[float, np.ndarray]:
    """The exercise's floor c (the fitted law's, kept under the smallest loss) and the mixtures to predict: the
    swarm's own, then each domain alone, then uniform."""
    shares = np.asarray(shares, dtype=float)
    floor = float(min(fitted_floor, FLOOR_MARGIN * np.min(losses)))
    domains = shares.shape[1]
    mixtures = np.vstack([shares, np.eye(domains), np.full((1, domains), 1.0 / domains)])
    return floor, mixtures


def law_by_hand_expected(shares: np.ndarray, losses: np.ndarray, floor: float, mixtures: np.ndarray) -> np.ndarray:
    """What `law_by_hand` returns when right: t by least squares on log(L - c), then c + exp(mixture . t)."""
    t, *_ = np.linalg.lstsq(np.asarray(shares, dtype=float), np.log(np.asarray(losses) - floor), rcond=None)
    return floor + np.exp(mixtures @ t)
