"""The mixing laws (`helpers.runs.mixing_law`) and the mixture they propose (`helpers.runs.mix_proposal`).

Every swarm here is synthetic: shares drawn by `draw_mixtures`, held-out losses computed from a log-linear law
whose parameters the test chose (plus a little Gaussian noise), or pure noise. So the right answer is known.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from helpers.common.errors import UserError
from helpers.runs.mix_proposal import epoch_caps, propose_mix
from helpers.runs.mixing_law import (HUBER_DELTA, LogLinearLaw, MixingLaw, fit_linear, fit_log_linear,
                                     fit_mixing_law, leave_one_out, target_losses)
from helpers.runs.swarm import draw_mixtures, swarm_from_runs

DOMAINS = ("prose", "code", "manuals")
NATURAL = (0.6, 0.3, 0.1)
LOG_C = np.array([0.4, 0.2, 0.6])
SLOPES = np.array([[-1.4, 0.25, 0.10],  # row i: t of domain i's loss; more of a domain, less loss on it
                   [0.15, -1.1, 0.20],
                   [0.10, 0.30, -1.6]])


def synthetic_swarm(runs: int, noise: float, seed: int = 0):
    """A synthetic swarm: `runs` mixtures, losses from the known law above plus Gaussian noise of `noise` nats."""
    shares = np.array(draw_mixtures(NATURAL, runs, seed=seed))
    rng = np.random.default_rng(seed + 100)
    losses = np.exp(LOG_C) + np.exp(shares @ SLOPES.T) + rng.normal(0.0, noise, (runs, len(DOMAINS)))
    return swarm_from_runs(DOMAINS, tokens=shares * 1_000_000, losses=losses)


def huber_sum(parameters: np.ndarray, shares: np.ndarray, losses: np.ndarray) -> float:
    """The summed Huber loss of the law's predictions, written out as torch's huber_loss defines it."""
    error = np.exp(parameters[0]) + np.exp(shares @ parameters[1:]) - losses
    small = np.abs(error) < HUBER_DELTA
    return float(np.sum(np.where(small, 0.5 * error ** 2, HUBER_DELTA * (np.abs(error) - 0.5 * HUBER_DELTA))))


def huber_gradient(parameters: np.ndarray, shares: np.ndarray, losses: np.ndarray) -> np.ndarray:
    scale = np.exp(shares @ parameters[1:])
    slope = np.clip(np.exp(parameters[0]) + scale - losses, -HUBER_DELTA, HUBER_DELTA)
    return np.concatenate([[np.sum(slope) * np.exp(parameters[0])], (slope * scale) @ shares])


def test_the_log_linear_fit_recovers_a_known_law():
    swarm = synthetic_swarm(runs=24, noise=0.002)
    for i, domain in enumerate(DOMAINS):
        law = fit_log_linear(swarm.shares, swarm.losses[:, i], own_domain=i)
        assert law.log_c == pytest.approx(LOG_C[i], abs=0.05), domain
        np.testing.assert_allclose(law.t, SLOPES[i], atol=0.05, err_msg=domain)


def test_the_fit_is_the_minimum_another_optimiser_finds_from_many_starts():
    """Reference: the summed Huber loss in plain numpy, minimised by BFGS from 40 starts of its own."""
    swarm = synthetic_swarm(runs=8, noise=0.01, seed=3)
    shares, losses = swarm.shares, swarm.losses[:, 2]
    law = fit_log_linear(shares, losses, own_domain=2)
    assert law.cost == pytest.approx(huber_sum(np.concatenate([[law.log_c], law.t]), shares, losses), rel=1e-12)
    rng = np.random.default_rng(7)
    results = [minimize(huber_sum, np.concatenate([[rng.uniform(-2, 1.5)], rng.uniform(-1.5, 0.5, 3)]),
                        args=(shares, losses), jac=huber_gradient, method="BFGS", options={"gtol": 1e-12})
               for _ in range(40)]
    reference = min(results, key=lambda r: r.fun)
    assert law.cost <= reference.fun + 1e-10
    np.testing.assert_allclose(np.concatenate([[law.log_c], law.t]), reference.x, atol=2e-3)
    grid = np.array(draw_mixtures(NATURAL, 50, seed=11))
    np.testing.assert_allclose(law.predict(grid), np.exp(reference.x[0]) + np.exp(grid @ reference.x[1:]), atol=1e-4)


def test_a_repeated_fit_is_the_kept_law_and_another_seed_or_domain_fits_again():
    swarm = synthetic_swarm(runs=8, noise=0.01, seed=5)
    law = fit_log_linear(swarm.shares, swarm.losses[:, 0], own_domain=0)
    assert fit_log_linear(swarm.shares.copy(), swarm.losses[:, 0].copy(), own_domain=0) is law
    assert fit_log_linear(swarm.shares, swarm.losses[:, 0], own_domain=0, seed=1) is not law
    assert fit_log_linear(swarm.shares, swarm.losses[:, 0], own_domain=1) is not law
    assert fit_log_linear(swarm.shares[:-1], swarm.losses[:-1, 0], own_domain=0) is not law
    with pytest.raises(ValueError, match="read-only"):
        law.t[0] = 0.0


def test_the_linear_baseline_recovers_a_linear_law_and_loses_to_the_log_linear_one():
    swarm = synthetic_swarm(runs=12, noise=0.0)
    b = np.array([2.5, 3.0, 3.5])
    np.testing.assert_allclose(fit_linear(swarm.shares, swarm.shares @ b).b, b, atol=1e-10)
    laws = {kind: fit_mixing_law(swarm, kind) for kind in ("log_linear", "linear")}
    errors = {kind: np.abs(law.predict(swarm.shares, {"code": 1.0}) - swarm.losses[:, 1]).max()
              for kind, law in laws.items()}
    assert errors["log_linear"] < 1e-4 < 0.01 < errors["linear"]


@pytest.fixture(scope="module")
def known_swarm():
    return synthetic_swarm(runs=8, noise=0.002, seed=1)


def test_leave_one_out_on_a_known_law_orders_the_runs_as_they_measured(known_swarm):
    target = {"prose": 1.0}
    check = leave_one_out(known_swarm, target, "log_linear")
    np.testing.assert_allclose(check.measured, target_losses(known_swarm, target))
    assert check.rank_correlation > 0.95
    assert check.mean_abs_error < 0.005
    keep = np.arange(8) != 4  # the prediction for run 5 comes from a fit that never saw it
    alone = fit_log_linear(known_swarm.shares[keep], known_swarm.losses[keep, 0], own_domain=0)
    assert check.predicted[4] == pytest.approx(float(alone.predict(known_swarm.shares[4])), abs=1e-9)
    assert leave_one_out(known_swarm, target, "linear").mean_abs_error > 2 * check.mean_abs_error


def test_leave_one_out_on_noise_finds_no_order():
    """Losses that do not depend on the mixture: a law ranks no run it was not fitted on (a fit that saw the run it
    predicts would). On noise leave-one-out leans negative (each run's prediction is pulled away from it, about
    -0.2 on average with three domains, not shrinking with more runs), so this averages ten swarms."""
    correlations = []
    for seed in range(10):
        shares = np.array(draw_mixtures(NATURAL, 30, seed=seed))
        noise = 3.0 + np.random.default_rng(seed).normal(0.0, 0.05, (30, 3))
        swarm = swarm_from_runs(DOMAINS, tokens=shares * 1000, losses=noise)
        correlations.append(leave_one_out(swarm, {"code": 1.0}, "linear").rank_correlation)
    assert -0.6 < np.mean(correlations) < 0.1


def test_a_log_linear_law_fitted_to_noise_predicts_no_absurd_loss():
    """Unbounded, this fit to noise explained a run or two with a term that shoots up where no run was, and
    predicted the run left out at 1e12 nats; bounded, no term exceeds e times the largest loss anywhere."""
    shares = np.array(draw_mixtures((0.5, 0.3, 0.2), 14, seed=4))
    losses = (3.0 + np.random.default_rng(4).normal(0.0, 0.05, (14, 3)))[:, 0]
    keep = np.arange(14) != 2
    law = fit_log_linear(shares[keep], losses[keep], own_domain=0)
    corners = law.predict(np.eye(3))
    assert np.all(corners < 2 * np.exp(1.0) * losses.max())
    assert abs(float(law.predict(shares[2])) - losses[2]) < 1.0  # poor, as a fit to noise is; not absurd


def test_fewer_runs_than_a_law_and_one_left_out_need_are_refused():
    swarm = synthetic_swarm(runs=4, noise=0.0)
    with pytest.raises(UserError, match=r"4 runs, .* needs at least 5 .*fix: run 1 more"):
        fit_mixing_law(swarm)


def known_law() -> MixingLaw:
    return MixingLaw(kind="log_linear", domains=DOMAINS,
                     laws={d: LogLinearLaw(log_c=LOG_C[i], t=SLOPES[i]) for i, d in enumerate(DOMAINS)})


@pytest.mark.parametrize("domain", DOMAINS)
def test_without_caps_a_one_domain_target_gets_that_domain_alone(domain):
    proposal = propose_mix(known_law(), {domain: 1.0})
    np.testing.assert_allclose(proposal, np.eye(3)[DOMAINS.index(domain)], atol=1e-6)


def test_a_capped_small_domain_is_never_proposed_above_its_cap():
    caps = epoch_caps(np.array([6e6, 3e6, 1e5]), run_tokens=2_000_000, max_epochs=4)
    np.testing.assert_allclose(caps, [1.0, 1.0, 0.2])
    for target in ({"manuals": 1.0}, {"manuals": 0.7, "code": 0.3}, {"prose": 0.2, "manuals": 0.8}):
        proposal = propose_mix(known_law(), target, caps=caps)
        assert proposal[2] <= caps[2] + 1e-12 and proposal.sum() == pytest.approx(1.0, abs=1e-12)
        assert proposal[2] == pytest.approx(caps[2], abs=1e-6)  # the law wants more of it: the cap binds
        grid = np.array(draw_mixtures(NATURAL, 2000, seed=5, concentration=1.0))
        inside = grid[np.all(grid <= caps + 1e-12, axis=1)]
        best = known_law().predict(proposal, target)
        assert np.all(known_law().predict(inside, target) >= best - 1e-9)  # no mixture within the caps does better


def test_caps_that_sum_below_one_are_refused():
    caps = epoch_caps(np.array([1e5, 2e5, 1e5]), run_tokens=2_000_000, max_epochs=2)
    with pytest.raises(UserError, match=r"the limits leave no mixture: .*sum to 0\.4.*fix: raise --max-epochs"):
        propose_mix(known_law(), {"code": 1.0}, caps=caps)


def test_a_strong_pull_to_the_prior_keeps_the_proposal_near_it():
    prior = np.array(NATURAL)
    proposal = propose_mix(known_law(), {"manuals": 1.0}, prior=prior, kl_reg=1000.0)
    np.testing.assert_allclose(proposal, prior, atol=0.01)
    assert proposal[2] > prior[2]  # still pulled a little towards the target's domain
