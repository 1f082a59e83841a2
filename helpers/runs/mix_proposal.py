"""The mixture a fitted mixing law proposes: the one on the simplex with the least predicted loss on a target.

A domain cannot take more of a run than its tokens allow without being repeated: with `max_epochs` passes at
most, domain j may fill at most caps_j = available_j x max_epochs / run_tokens of a run (as Olmix bounds its
proposals). With the log-linear law the target's loss, sum_i w_i (c_i + exp(t_i · x)), is convex in x, so a
local minimum found by SLSQP from a few starts is the minimum. `kl_reg` > 0 adds kl_reg x KL(x || prior),
which pulls the proposal towards the prior (the natural mixture) where the law is unsure.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ..common.errors import UserError
from .mixing_law import MixingLaw

FEASIBLE = 1e-7  # how far outside the simplex or a cap a solver's answer may land before it is not an answer
TINY = 1e-12  # the KL term's floor for a share: log(0) has no gradient
NEGLIGIBLE = 1e-6  # a share the solver leaves below this is none: a loader would read no sample of it


def epoch_caps(available_tokens: np.ndarray, run_tokens: float, max_epochs: float) -> np.ndarray:
    """Per domain, the largest share of a run of `run_tokens` that repeats it at most `max_epochs` times."""
    if run_tokens <= 0 or max_epochs <= 0:
        raise UserError(f"run tokens {run_tokens} and max epochs {max_epochs}: both must be above 0; fix: give "
                        "--run-tokens and --max-epochs above 0")
    return np.minimum(1.0, np.asarray(available_tokens, dtype=float) * max_epochs / run_tokens)


def check_caps(caps: np.ndarray, domains: tuple[str, ...]) -> None:
    """Refuse caps that leave no mixture: shares at most the caps cannot sum to 1 when the caps sum below 1."""
    if caps.sum() < 1.0 - FEASIBLE:
        limits = ", ".join(f"{name} <= {cap:.3g}" for name, cap in zip(domains, caps))
        raise UserError(f"the limits leave no mixture: the caps ({limits}) sum to {caps.sum():.3g}, below 1; "
                        "fix: raise --max-epochs or lower --run-tokens")


def _within(x: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """`x` clipped into [0, caps] and onto sum 1, moving the rounding to the domains with room left."""
    x = np.clip(x, 0.0, caps)
    for _ in range(len(x)):
        gap = 1.0 - x.sum()
        room = caps - x if gap > 0 else x
        if abs(gap) < 1e-15 or room.sum() <= 0:
            break
        x = np.clip(x + np.sign(gap) * room * min(1.0, abs(gap) / room.sum()), 0.0, caps)
    return x


def _objective(law: MixingLaw, target: Mapping[str, float], prior: np.ndarray, kl_reg: float):
    def value_and_gradient(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, gradient = float(law.predict(x, target)), law.gradient(x, target)
        if kl_reg > 0:
            safe = np.maximum(x, TINY)
            value += kl_reg * float(np.sum(safe * np.log(safe / prior)))
            gradient = gradient + kl_reg * (np.log(safe / prior) + 1.0)
        return value, gradient
    return value_and_gradient


def propose_mix(law: MixingLaw, target: Mapping[str, float], *, caps: np.ndarray | None = None,
                prior: np.ndarray | None = None, kl_reg: float = 0.0) -> np.ndarray:
    """The shares x (x >= 0, sum 1, x <= caps) that minimise the target's predicted loss
    (+ kl_reg x KL(x || prior); the prior defaults to uniform)."""
    from scipy.optimize import minimize  # here, not above: scipy takes most of a second to import

    d = len(law.domains)
    caps = np.ones(d) if caps is None else np.minimum(1.0, np.asarray(caps, dtype=float))
    check_caps(caps, law.domains)
    prior = np.full(d, 1.0 / d) if prior is None else np.maximum(np.asarray(prior, dtype=float), TINY)
    prior = prior / prior.sum()
    objective = _objective(law, target, prior, kl_reg)
    starts = [_within(np.full(d, 1.0 / d), caps), caps / caps.sum(), _within(prior, caps)]
    best, best_value = None, np.inf
    for start in starts:
        result = minimize(objective, start, jac=True, method="SLSQP", bounds=list(zip(np.zeros(d), caps)),
                          constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1.0, "jac": lambda x: np.ones(d)}],
                          options={"maxiter": 500, "ftol": 1e-12})
        x = result.x
        feasible = abs(x.sum() - 1.0) < FEASIBLE and np.all(x > -FEASIBLE) and np.all(x < caps + FEASIBLE)
        value = objective(_within(x, caps))[0] if feasible else np.inf
        if value < best_value:
            best, best_value = _within(x, caps), value
    if best is None:
        raise UserError("the solver found no mixture within the caps; fix: raise --max-epochs or lower --run-tokens")
    return _within(np.where(best < NEGLIGIBLE, 0.0, best), caps)
