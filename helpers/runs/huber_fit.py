"""The log-linear law's fit from many starts at once: Levenberg-Marquardt on the summed Huber loss, in numpy.

The law L(r) = exp(log_c) + exp(r · t) has one parameter more than there are domains, and a swarm has a few dozen
runs at most, so each step of a fit is a handful of tiny matrices. A general solver spends its time in its own
bookkeeping around them (scipy's `least_squares`: about 50 ms a start, most of a fit-mix run); here every start
of a fit takes its steps together, as one stack of arrays, in a few milliseconds.

Each step is Gauss-Newton's for the Huber loss, the residuals weighted as iteratively reweighted least squares
weights them (1 within `delta`, delta/|e| beyond, which bounds the loss from above, so a step that lowers the
bound lowers the loss), damped by Levenberg-Marquardt's rule: a step that lowers the summed loss is taken and the
damping eased, one that does not is refused and the damping raised. No parameter passes its bound: a step is
clipped there, and a parameter on its bound that the loss pulls past it is left out of the next step. A start
stops when a step it takes lowers its loss by less than `RELATIVE_GAIN` of it, when no damping finds a lower loss,
or after `MOST_STEPS`.
"""

from __future__ import annotations

import numpy as np

RELATIVE_GAIN = 1e-10
MOST_STEPS = 500
FIRST_DAMPING, EASE, RAISE, LEAST_DAMPING, MOST_DAMPING = 1e-3, 3.0, 4.0, 1e-12, 1e12


def huber_costs(parameters: np.ndarray, shares: np.ndarray, losses: np.ndarray, delta: float):
    """For each row of `parameters` (log_c, t...): exp(log_c), exp(shares · t) per run, the residuals, and the
    summed Huber loss (0.5 e² within delta, delta·(|e| - delta/2) beyond)."""
    scale = np.exp(parameters[:, :1])
    grown = np.exp(shares @ parameters[:, 1:].T).T
    residuals = scale + grown - losses
    size = np.abs(residuals)
    costs = np.where(size <= delta, 0.5 * residuals * residuals, delta * (size - 0.5 * delta)).sum(axis=1)
    return scale, grown, residuals, costs


def _steps(parameters: np.ndarray, costs_at: tuple, shares: np.ndarray, damping: np.ndarray, *, delta: float,
           highest: float) -> np.ndarray:
    """Each start's damped Gauss-Newton step on its reweighted residuals; a parameter at its bound that the
    loss pulls beyond it stays there (a clipped step would crawl along the bound)."""
    scale, grown, residuals = costs_at
    starts, runs = grown.shape
    jacobian = np.concatenate([np.broadcast_to(scale[:, None, :], (starts, runs, 1)),
                               grown[:, :, None] * shares[None]], axis=2)
    across = jacobian.transpose(0, 2, 1)
    gradient = (across @ np.clip(residuals, -delta, delta)[:, :, None])[:, :, 0]
    normal = across @ (jacobian * (delta / np.maximum(np.abs(residuals), delta))[:, :, None])
    free = ~((parameters >= highest) & (gradient < 0))
    gradient[~free] = 0.0
    normal *= free[:, :, None] & free[:, None, :]
    diagonal = np.arange(normal.shape[1])
    normal[:, diagonal, diagonal] *= 1.0 + damping[:, None]
    normal[:, diagonal, diagonal] += damping[:, None] * 1e-12
    try:
        return -np.linalg.solve(normal, gradient[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        return -(np.linalg.pinv(normal) @ gradient[:, :, None])[:, :, 0]


def fit_from_starts(starts: np.ndarray, shares: np.ndarray, losses: np.ndarray, *, highest: float,
                    delta: float) -> tuple[np.ndarray, np.ndarray]:
    """Minimise the summed Huber loss of the law from each row of `starts`, every parameter at most `highest`:
    (the parameters each start ended at, their summed Huber losses)."""
    parameters = np.array(starts, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        scale, grown, residuals, costs = huber_costs(parameters, shares, losses, delta)
        damping = np.full(len(parameters), FIRST_DAMPING)
        going = np.ones(len(parameters), dtype=bool)
        for _ in range(MOST_STEPS):
            step = _steps(parameters, (scale, grown, residuals), shares, damping, delta=delta, highest=highest)
            trial = np.minimum(parameters + step, highest)
            trial_scale, trial_grown, trial_residuals, trial_costs = huber_costs(trial, shares, losses, delta)
            lower = going & (trial_costs < costs)
            gain = (costs - trial_costs) / np.maximum(costs, np.finfo(float).tiny)
            parameters[lower], costs[lower] = trial[lower], trial_costs[lower]
            scale[lower], grown[lower] = trial_scale[lower], trial_grown[lower]
            residuals[lower] = trial_residuals[lower]
            damping = np.where(lower, np.maximum(damping / EASE, LEAST_DAMPING), damping * RAISE)
            going &= ~((lower & (gain < RELATIVE_GAIN)) | (damping > MOST_DAMPING))
            if not going.any():
                break
    return parameters, costs
