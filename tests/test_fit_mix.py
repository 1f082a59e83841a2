"""A swarm read from a `helpers.runs` summary or Olmix's CSV files, its mixtures drawn, and the command
`python -m helpers.runs fit-mix` end to end and against each kind of bad input.

The summaries here are fake: written by the test in the shape `helpers.runs` writes (entries under
"notebooks" with status, run, parameters and the metrics a swarm's notebook records), with held-out losses
computed from a known log-linear law instead of training anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers.common.errors import UserError
from helpers.common.paths import REPO_ROOT
from helpers.runs.olmix_csv import read_olmix_csvs, write_olmix_csvs
from helpers.runs.swarm import draw_mixtures, parse_target, read_swarm, swarm_from_runs

DOMAINS = ("literature", "docs", "man-pages")
AVAILABLE = (3_000_000, 1_000_000, 100_000)  # man-pages is small: 4 epochs of it fill at most 0.4 of a run
RUN_TOKENS = 1_000_000
LOG_C = np.array([0.5, 0.7, 0.6])
SLOPES = np.array([[-1.3, 0.2, 0.1], [0.1, -1.2, 0.2], [0.1, 0.3, -1.5]])


def fake_summary(folder: Path, runs: int = 7, *, failed: tuple[int, ...] = (), without: str | None = None) -> Path:
    """A fake `helpers.runs` summary.json of a swarm: run numbers in `failed` ended in an error, and the metric
    named `without` is left out of every run."""
    entries = []
    for number, weights in enumerate(draw_mixtures(np.array(AVAILABLE), runs, seed=2), start=1):
        tokens = np.round(np.array(weights) * RUN_TOKENS).astype(int)
        shares = tokens / tokens.sum()
        losses = np.exp(LOG_C) + np.exp(SLOPES @ shares) + np.random.default_rng(number).normal(0, 0.002, 3)
        metrics = {**{f"tokens.{d}": int(v) for d, v in zip(DOMAINS, tokens)},
                   **{f"held_out_loss.{d}": float(v) for d, v in zip(DOMAINS, losses)},
                   **{f"available_tokens.{d}": v for d, v in zip(DOMAINS, AVAILABLE)}}
        metrics.pop(without, None)
        entry = {"name": "swarm", "status": "ok", "run": number, "output": f"{folder}/{number}/swarm.ipynb",
                 "parameters": {"weights": weights}, "metrics": metrics, "relative_output": f"{number}/swarm.ipynb"}
        if number in failed:
            entry.update(status="error", metrics={}, error="RuntimeError: CUDA out of memory\nsecond line")
        entries.append(entry)
    path = folder / "summary.json"
    path.write_text(json.dumps({"title": "swarm", "notebooks": entries}), encoding="utf-8")
    return path


def olmix_rules(ratios: Path, metrics: Path) -> tuple[list[str], list[str], pd.DataFrame]:
    """Olmix's rules for its two CSV files, written again here as a checker: the id column is `run` (or
    `run_id`) in both; every column but `run`, `run_id`, `name`, `index` and `Unnamed...` is data; each row of
    ratios sums to 1 within 0.01; the files join on the id. Returns the domains, the metrics and the join."""
    shares, measured = pd.read_csv(ratios), pd.read_csv(metrics)
    ids = [next(c for c in ("run", "run_id") if c in frame.columns) for frame in (shares, measured)]
    data = [[c for c in frame.columns if c not in {"run", "run_id", "name", "index"} and not c.startswith("Unnamed")]
            for frame in (shares, measured)]
    assert np.allclose(shares[data[0]].sum(axis=1), 1.0, atol=0.01)
    joined = shares.rename(columns={ids[0]: "id"}).merge(measured.rename(columns={ids[1]: "id"}), on="id",
                                                         suffixes=("", " metric"))
    return data[0], data[1], joined


def test_a_summary_reads_as_its_realised_shares_losses_and_available_tokens(tmp_path):
    swarm = read_swarm(fake_summary(tmp_path, runs=6))
    assert swarm.domains == DOMAINS and swarm.runs == ("1", "2", "3", "4", "5", "6")
    np.testing.assert_allclose(swarm.shares.sum(axis=1), 1.0)
    np.testing.assert_allclose(swarm.natural, np.array(AVAILABLE) / sum(AVAILABLE))
    np.testing.assert_allclose(swarm.shares[0], swarm.natural, atol=1e-4)  # the first mixture is the natural one
    assert swarm.tokens_per_run == pytest.approx(RUN_TOKENS, abs=2)
    assert np.all(np.isfinite(swarm.losses)) and swarm.skipped == ()
    skipping = read_swarm(fake_summary(tmp_path, runs=6, failed=(2, 5)), skip_failed=True)
    assert skipping.runs == ("1", "3", "4", "6") and skipping.skipped == ("2", "5")


def test_runs_made_in_process_give_the_same_swarm_as_arrays_or_mappings():
    tokens = [{"a": 30, "b": 10}, {"a": 5, "b": 15}]
    losses = [{"a": 2.0, "b": 3.0}, {"a": 2.5}]
    swarm = swarm_from_runs(("a", "b"), tokens, losses, available_tokens={"a": 100, "b": 300})
    np.testing.assert_allclose(swarm.shares, [[0.75, 0.25], [0.25, 0.75]])
    assert np.isnan(swarm.losses[1, 1]) and swarm.tokens_per_run == 30
    np.testing.assert_allclose(swarm.natural, [0.25, 0.75])
    again = swarm_from_runs(("a", "b"), np.array([[30, 10], [5, 15]]), swarm.losses, runs=["x", "y"])
    np.testing.assert_allclose(again.shares, swarm.shares)
    assert again.runs == ("x", "y") and again.natural is None


def test_drawn_mixtures_start_natural_then_uniform_sum_to_one_and_explore_a_small_domain():
    natural = [0.9, 0.09, 0.01]
    mixtures = draw_mixtures(natural, 40, seed=3)
    assert len(mixtures) == 40 and mixtures[0] == natural and mixtures[1] == pytest.approx([1 / 3] * 3, abs=1e-4)
    assert all(abs(sum(row) - 1.0) < 1e-9 and min(row) >= 0 for row in mixtures)
    assert all(row == [round(v, 4) for v in row] for row in mixtures)
    assert sum(row[2] > 0.1 for row in mixtures[2:]) >= 5  # ten times its natural share, in several draws
    assert mixtures == draw_mixtures(natural, 40, seed=3) != draw_mixtures(natural, 40, seed=4)


def test_a_target_is_parsed_into_normalised_weights_of_known_domains():
    assert parse_target("docs", DOMAINS) == {"docs": 1.0}
    assert parse_target("docs=1,man-pages=3", DOMAINS) == {"docs": 0.25, "man-pages": 0.75}
    assert parse_target({"literature": 2, "docs": 2}, DOMAINS) == {"literature": 0.5, "docs": 0.5}
    with pytest.raises(UserError, match=r"--target code: the swarm has no domain 'code'; it has literature, docs, "
                                        r"man-pages; fix"):
        parse_target("code", DOMAINS)
    with pytest.raises(UserError, match="fix: write e.g. docs=0.5"):
        parse_target("docs=half", DOMAINS)


def test_the_olmix_csvs_round_trip_and_load_by_olmix_rules(tmp_path):
    swarm = read_swarm(fake_summary(tmp_path, runs=6))
    swarm.losses[3, 0] = np.nan  # a metric not measured: an empty cell
    ratios, metrics = write_olmix_csvs(swarm, tmp_path / "olmix")
    domains, metric_columns, joined = olmix_rules(ratios, metrics)
    assert domains == metric_columns == list(DOMAINS) and len(joined) == 6
    back = read_olmix_csvs(ratios, metrics, available_tokens=dict(zip(DOMAINS, AVAILABLE)))
    assert back.domains == swarm.domains and back.runs == swarm.runs
    np.testing.assert_array_equal(back.shares, swarm.shares)
    np.testing.assert_array_equal(back.losses, swarm.losses)
    np.testing.assert_array_equal(back.available_tokens, swarm.available_tokens)


def test_csvs_written_elsewhere_load_with_run_id_an_index_and_rows_in_another_order(tmp_path):
    ratios, metrics = tmp_path / "ratios.csv", tmp_path / "metrics.csv"
    ratios.write_text(",run_id,name,index,a,b\n0,r1,first,0,0.5,0.5\n1,r2,second,1,0.2,0.801\n")
    metrics.write_text("run,name,b,a,other\nr2,second,3.1,2.9,7\nr1,first,3.0,2.8,8\n")
    swarm = read_olmix_csvs(ratios, metrics)
    assert swarm.domains == ("a", "b") and swarm.runs == ("r1", "r2")
    np.testing.assert_allclose(swarm.losses, [[2.8, 3.0], [2.9, 3.1]])
    np.testing.assert_allclose(swarm.shares[1], [0.2 / 1.001, 0.801 / 1.001])


def fit_mix_command(*args: str | Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "helpers.runs", "fit-mix", *map(str, args)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def mixture_row(stdout: str, name: str) -> list[float]:
    line = next(line for line in stdout.splitlines() if line.startswith(f"{name} "))
    return [float(v) for v in line.split()[1:]]


def test_the_command_fits_a_summary_proposes_within_the_caps_and_writes_olmix_csvs(tmp_path):
    summary = fake_summary(tmp_path, runs=8, failed=(3,))
    done = fit_mix_command(summary, "--target", "docs=0.5,man-pages=0.5", "--skip-failed", "--csv", tmp_path / "csv")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"swarm: {summary}: 7 runs over 3 domains" in out and "skipped 1 failed run(s): 3" in out
    assert "target: docs=0.5,man-pages=0.5" in out and "log-linear" in out and "rank correlation" in out
    assert "at most 4 epochs of each domain" in out and "man-pages <= 0.400" in out
    proposal, natural, uniform = (mixture_row(out, name) for name in ("proposal", "natural", "uniform"))
    assert sum(proposal[:3]) == pytest.approx(1.0, abs=2e-3) and proposal[2] <= 0.4
    assert proposal[2] == pytest.approx(0.4, abs=1e-3)  # the law wants man-pages; the cap stops it
    assert proposal[3] < min(natural[3], uniform[3])  # the log-linear law's predicted target loss
    domains, metrics, joined = olmix_rules(tmp_path / "csv" / "ratios.csv", tmp_path / "csv" / "metrics.csv")
    assert domains == metrics == list(DOMAINS) and list(joined["id"]) == [1, 2, 4, 5, 6, 7, 8]
    again = fit_mix_command("--ratios", tmp_path / "csv" / "ratios.csv", "--metrics", tmp_path / "csv" / "metrics.csv",
                            "--target", "docs", "--available-tokens", "literature=3e6,docs=1e6,man-pages=1e5",
                            "--run-tokens", "2000000", "--max-epochs", "2")
    assert again.returncode == 0, again.stderr
    assert "man-pages <= 0.100" in again.stdout and mixture_row(again.stdout, "proposal")[1] > 0.9


def one_line_error(done: subprocess.CompletedProcess, *says: str) -> None:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    for said in (*says, "fix:"):
        assert said in lines[0], lines[0]


def write_csvs(folder: Path, ratios: str, metrics: str) -> tuple[Path, Path]:
    (folder / "ratios.csv").write_text(ratios)
    (folder / "metrics.csv").write_text(metrics)
    return folder / "ratios.csv", folder / "metrics.csv"


CSV_RATIOS = "run,docs,code\n" + "".join(f"{i},{i / 10:.1f},{1 - i / 10:.1f}\n" for i in range(1, 6))
CSV_METRICS = "run,docs,code\n" + "".join(f"{i},{3 - i / 10:.1f},{2 + i / 10:.1f}\n" for i in range(1, 6))


@pytest.mark.parametrize("case", ["failed run", "no target metric", "no target column", "unknown domain",
                                  "too few runs", "missing file", "not json", "ratios off", "epochs without tokens",
                                  "epochs without run tokens", "caps below one"])
def test_each_bad_input_is_one_line_naming_it_and_the_fix(tmp_path, case):
    missing = tmp_path / "nowhere" / "summary.json"
    if case == "failed run":
        one_line_error(fit_mix_command(fake_summary(tmp_path, failed=(3, 5)), "--target", "docs"),
                       "summary.json: 2 of 7 runs failed, the first run 3 with RuntimeError: CUDA out of memory",
                       "--skip-failed to fit the other 5")
    elif case == "no target metric":
        one_line_error(fit_mix_command(fake_summary(tmp_path, without="held_out_loss.docs"), "--target", "docs"),
                       "summary.json", "held_out_loss.docs")
    elif case == "no target column":
        ratios, metrics = write_csvs(tmp_path, CSV_RATIOS, CSV_METRICS.replace("run,docs,", "run,other,"))
        one_line_error(fit_mix_command("--ratios", ratios, "--metrics", metrics, "--target", "docs"),
                       "metrics.csv", "'docs'")
    elif case == "unknown domain":
        one_line_error(fit_mix_command(fake_summary(tmp_path), "--target", "docs=0.5,code=0.5"),
                       "--target docs=0.5,code=0.5", "no domain 'code'", "literature, docs, man-pages")
    elif case == "too few runs":
        one_line_error(fit_mix_command(fake_summary(tmp_path, runs=4), "--target", "docs"),
                       "summary.json: 4 runs", "needs at least 5")
    elif case == "missing file":
        one_line_error(fit_mix_command(missing, "--target", "docs"), f"{missing}: no such file")
    elif case == "not json":
        (tmp_path / "summary.json").write_text("{not json")
        one_line_error(fit_mix_command(tmp_path / "summary.json", "--target", "docs"), "summary.json: cannot be read")
    elif case == "ratios off":
        ratios, metrics = write_csvs(tmp_path, CSV_RATIOS.replace("3,0.3,0.7", "3,0.5,0.7"), CSV_METRICS)
        one_line_error(fit_mix_command("--ratios", ratios, "--metrics", metrics, "--target", "docs"),
                       "ratios.csv: the shares of run 3 sum to 1.2")
    elif case == "epochs without tokens":
        ratios, metrics = write_csvs(tmp_path, CSV_RATIOS, CSV_METRICS)
        one_line_error(fit_mix_command("--ratios", ratios, "--metrics", metrics, "--target", "docs", "--max-epochs",
                                       "2"), "--max-epochs 2", "--available-tokens")
    elif case == "epochs without run tokens":
        ratios, metrics = write_csvs(tmp_path, CSV_RATIOS, CSV_METRICS)
        one_line_error(fit_mix_command("--ratios", ratios, "--metrics", metrics, "--target", "docs",
                                       "--available-tokens", "docs=1e6,code=1e6"), "metrics.csv", "--run-tokens")
    else:
        one_line_error(fit_mix_command(fake_summary(tmp_path), "--target", "docs", "--max-epochs", "0.1"),
                       "the limits leave no mixture", "--max-epochs")
