"""Mixing laws: a domain's held-out loss as a function of the mixture a run trained on, fitted to a swarm.

The log-linear law of Data Mixing Laws (Ye et al., 2024), as Olmix fits it: per domain i,
L_i(r) = exp(log_c_i) + exp(r · t_i), r the mixture's shares. It is fitted by minimising the summed Huber loss
(delta 0.02) of prediction minus measurement from many starts, keeping the best; Huber, because a run or two
gone astray should not drag the law. The linear law, L_i(r) = r · b_i by least squares, is the baseline it
must beat. `leave_one_out` says how well each predicts a run it was not fitted on: the question that
matters before trusting a proposed mixture (`helpers.runs.mix_proposal`).
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field
from typing import Callable, Mapping, Protocol

import numpy as np

from ..common.errors import UserError
from .huber_fit import fit_from_starts
from .swarm import Swarm

HUBER_DELTA = 0.02
LOG_C_STARTS = np.linspace(-2.0, 1.5, 10)  # Olmix's starting values of log_c
# Random starts of t per value of log_c. Olmix draws 30; on synthetic swarms of 7 to 30 runs over 5 domains, with
# noise up to 0.03 nats, one draw found the law thirty did (predictions within 3e-6 anywhere on the simplex).
DRAWS_PER_LOG_C = 1
# Neither term of the law may exceed e times the largest loss measured, anywhere on the simplex (r · t is at most
# the largest t_j there): bounds a fit to real losses stays well inside, which stop a fit to noise explaining one run
# with a term that shoots up where no run was, and then predicting absurd losses there.
CEILING = 1.0


class Law(Protocol):
    """One domain's law: its predicted loss for mixtures (a row of shares each), and the gradient in the shares."""

    def predict(self, shares: np.ndarray) -> np.ndarray: ...

    def gradient(self, shares: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True, eq=False)
class LogLinearLaw:
    """L(r) = exp(log_c) + exp(r · t); `cost` is the summed Huber loss it was fitted to."""

    log_c: float
    t: np.ndarray
    cost: float = float("nan")

    def predict(self, shares: np.ndarray) -> np.ndarray:
        return np.exp(self.log_c) + np.exp(np.asarray(shares, dtype=float) @ self.t)

    def gradient(self, shares: np.ndarray) -> np.ndarray:
        return np.exp(np.asarray(shares, dtype=float) @ self.t)[..., None] * self.t


@dataclass(frozen=True, eq=False)
class LinearLaw:
    """L(r) = r · b (the shares sum to 1, so b_j is the loss of training on domain j alone)."""

    b: np.ndarray

    def predict(self, shares: np.ndarray) -> np.ndarray:
        return np.asarray(shares, dtype=float) @ self.b

    def gradient(self, shares: np.ndarray) -> np.ndarray:
        return np.broadcast_to(self.b, np.shape(shares)).copy()


def fit_log_linear(shares: np.ndarray, losses: np.ndarray, *, own_domain: int | None = None,
                   delta: float = HUBER_DELTA, seed: int = 0) -> LogLinearLaw:
    """Fit L(r) = exp(log_c) + exp(r · t) to runs' `shares` (runs x domains) and `losses` (one per run).

    The summed Huber loss (0.5 e² below delta, delta·(|e| - delta/2) above) is minimised from every start at
    once by Levenberg-Marquardt (`helpers.runs.huber_fit`). Starts as Olmix draws them: log_c from -2 to 1.5,
    t_j from U(0, 0.1), but -U(0, 1) for `own_domain` (the domain whose loss this is: more of it, less loss).
    Every parameter stays below log(largest loss) + CEILING. The fit depends on its arguments alone, so the last
    512 are kept: fitting a swarm again (another bound or pull, a target sharing its domains) reuses them."""
    shares, losses = np.asarray(shares, dtype=float), np.asarray(losses, dtype=float)
    if not np.all(np.isfinite(losses)) or np.any(losses <= 0):
        raise UserError(f"losses {losses.tolist()[:6]}...: a held-out loss must be a number above 0 (nats a token); "
                        "fix: record each run's mean held-out loss")
    return _fitted(shares.shape, shares.tobytes(), losses.tobytes(), own_domain=own_domain, delta=float(delta),
                   seed=seed)


@functools.lru_cache(maxsize=512)
def _fitted(shape: tuple[int, int], shares: bytes, losses: bytes, own_domain: int | None, delta: float,
            seed: int) -> LogLinearLaw:
    """`fit_log_linear`'s search, on its arguments as bytes (hashable, so a repeated fit is looked up): every
    start at once (`helpers.runs.huber_fit`), the one with the least loss kept (the first of equals)."""
    shares, losses = np.frombuffer(shares).reshape(shape), np.frombuffer(losses)
    rng = np.random.default_rng(seed)
    highest = np.log(np.max(losses)) + CEILING
    starts = []
    for log_c in LOG_C_STARTS:
        for _ in range(DRAWS_PER_LOG_C):
            t = rng.uniform(0.0, 0.1, shares.shape[1])
            if own_domain is not None:
                t[own_domain] = -rng.uniform(0.0, 1.0)
            starts.append(np.minimum(np.concatenate([[log_c], t]), highest - 1e-6))
    ends, costs = fit_from_starts(np.array(starts), shares, losses, highest=highest, delta=delta)
    best = int(np.argmin(costs))
    t = ends[best, 1:].copy()
    t.flags.writeable = False  # one law may be handed out many times: nobody may change it under the others
    return LogLinearLaw(log_c=float(ends[best, 0]), t=t, cost=float(costs[best]))


def fit_linear(shares: np.ndarray, losses: np.ndarray) -> LinearLaw:
    """Fit L(r) = r · b by least squares: the baseline a mixing law must beat."""
    b, *_ = np.linalg.lstsq(np.asarray(shares, dtype=float), np.asarray(losses, dtype=float), rcond=None)
    return LinearLaw(b=b)


def _log_linear(shares: np.ndarray, losses: np.ndarray, own_domain: int, seed: int) -> Law:
    return fit_log_linear(shares, losses, own_domain=own_domain, seed=seed)


def _linear(shares: np.ndarray, losses: np.ndarray, own_domain: int, seed: int) -> Law:
    return fit_linear(shares, losses)


FITS: dict[str, Callable[[np.ndarray, np.ndarray, int, int], Law]] = {"log_linear": _log_linear, "linear": _linear}


@dataclass(frozen=True, eq=False)
class MixingLaw:
    """One law per domain whose loss every run measured; a target's loss is their weighted sum."""

    kind: str
    domains: tuple[str, ...]
    laws: dict[str, Law] = field(default_factory=dict)

    def __getitem__(self, domain: str) -> Law:
        return self.laws[domain]

    def _check(self, target: Mapping[str, float]) -> None:
        missing = [d for d in target if d not in self.laws]
        if missing:
            raise UserError(f"target {', '.join(missing)}: no {self.kind} law fitted for it (laws for "
                            f"{', '.join(self.laws) or 'no domain'}); fix: aim at domains whose losses were measured")

    def predict(self, shares: np.ndarray, target: Mapping[str, float]) -> np.ndarray:
        """The target's loss (sum of weight x that domain's law) for a mixture, or for each row of `shares`."""
        self._check(target)
        return sum(weight * self.laws[d].predict(shares) for d, weight in target.items())

    def gradient(self, shares: np.ndarray, target: Mapping[str, float]) -> np.ndarray:
        self._check(target)
        return sum(weight * self.laws[d].gradient(shares) for d, weight in target.items())


def require_runs(swarm: Swarm) -> None:
    """A law has d+1 parameters (log_c and d slopes); leave-one-out fits it on one run fewer: refuse below d+2."""
    needed = len(swarm.domains) + 2
    if len(swarm.runs) < needed:
        raise UserError(f"{swarm.source}: {len(swarm.runs)} runs, and a mixing law over {len(swarm.domains)} domains "
                        f"needs at least {needed} ({needed - 1} parameters, one run more to leave out); fix: run "
                        f"{needed - len(swarm.runs)} more mixtures (helpers.runs.swarm.draw_mixtures draws them)")


def _fit_laws(swarm: Swarm, keep: np.ndarray, domains: list[str], *, kind: str, seed: int) -> MixingLaw:
    if kind not in FITS:
        raise UserError(f"kind {kind!r}: no such mixing law; fix: choose one of {', '.join(FITS)}")
    laws = {}
    for domain in domains:
        j = swarm.domains.index(domain)
        laws[domain] = FITS[kind](swarm.shares[keep], swarm.losses[keep, j], j, seed)
    return MixingLaw(kind=kind, domains=swarm.domains, laws=laws)


def fit_mixing_law(swarm: Swarm, kind: str = "log_linear", *, seed: int = 0) -> MixingLaw:
    """A law per domain whose held-out loss every run measured (a domain with a loss missing gets none)."""
    require_runs(swarm)
    measured = [d for j, d in enumerate(swarm.domains) if np.all(np.isfinite(swarm.losses[:, j]))]
    return _fit_laws(swarm, np.ones(len(swarm.runs), dtype=bool), measured, kind=kind, seed=seed)


@dataclass(frozen=True, eq=False)
class LeaveOneOut:
    """Each run's target loss predicted by a law fitted on the other runs, next to the loss it measured."""

    kind: str
    predicted: np.ndarray
    measured: np.ndarray
    rank_correlation: float  # Spearman's: does the law order mixtures as the runs did?
    mean_abs_error: float  # nats/token


def target_losses(swarm: Swarm, target: Mapping[str, float]) -> np.ndarray:
    """Each run's measured loss on the target: the weighted sum of its held-out losses on the target's domains."""
    columns = [swarm.domains.index(d) for d in target]
    return swarm.losses[:, columns] @ np.array(list(target.values()))


def leave_one_out(swarm: Swarm, target: Mapping[str, float], kind: str = "log_linear", *,
                  seed: int = 0) -> LeaveOneOut:
    """Fit the target's laws on all runs but one and predict that one, for every run."""
    from scipy.stats import ConstantInputWarning, spearmanr

    require_runs(swarm)
    measured = target_losses(swarm, target)
    predicted = np.empty(len(swarm.runs))
    for i in range(len(swarm.runs)):
        keep = np.arange(len(swarm.runs)) != i
        predicted[i] = _fit_laws(swarm, keep, list(target), kind=kind, seed=seed).predict(swarm.shares[i], target)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantInputWarning)  # every run measured the same: no order to match
        rho = float(spearmanr(predicted, measured).statistic)
    return LeaveOneOut(kind=kind, predicted=predicted, measured=measured, rank_correlation=rho,
                       mean_abs_error=float(np.mean(np.abs(predicted - measured))))
