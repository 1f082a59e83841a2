"""`python -m helpers.training --resume` with another `--global-batch-size`: `--steps` counts the batches of the run
that started, so the resumed run takes the samples the uninterrupted one would have, at its learning rates; a
global batch that cannot take them is refused in one line; a schedule's phases are named where they start."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

TINY = ["--seq-length", "32", "--model", "hidden_size=32", "--model", "intermediate_size=64", "--model",
        "num_hidden_layers=1", "--model", "num_attention_heads=4", "--train", "eval_every=0", "--no-progress",
        "--implementation", "fast"]


def train(data: list[str], csv_path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "helpers.training", *data, *TINY, "--csv", str(csv_path), *extra],
                          capture_output=True, text=True, timeout=600)


def rows(csv_path: Path) -> list[dict]:
    with open(csv_path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_a_run_resumed_with_half_the_global_batch_takes_the_uninterrupted_runs_samples(docs_bytes_prefix, tmp_path):
    data, checkpoints = ["--data-path", docs_bytes_prefix], tmp_path / "checkpoints"
    stop = ["--checkpoint-dir", str(checkpoints)]
    whole = train(data, tmp_path / "whole.csv", "--steps", "8", "--global-batch-size", "8")
    assert whole.returncode == 0, whole.stderr
    before = train(data, tmp_path / "before.csv", "--steps", "8", "--global-batch-size", "8", *stop, "--until-step",
                   "2")
    assert before.returncode == 0, before.stderr

    # 7 steps of 8 leave 40 samples after the 16 taken: no whole number of batches of 16
    refused = train(data, tmp_path / "refused.csv", "--steps", "7", "--global-batch-size", "16", *stop, "--resume")
    said = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert refused.returncode == 2 and "Traceback" not in refused.stderr and len(said) == 1, refused.stderr
    assert "leave 40 after the 16 taken, not a whole number of global batches of 16; fix:" in said[0]
    assert sorted(p.name for p in checkpoints.iterdir()) == ["step-0000002"] and not (tmp_path / "refused.csv").exists()

    after = train(data, tmp_path / "after.csv", "--steps", "8", "--global-batch-size", "4", *stop, "--resume")
    assert after.returncode == 0, after.stderr
    assert "ran out" not in after.stderr and after.stdout.startswith("12 steps on 1 process(es)"), after.stdout
    whole_rows, resumed = rows(tmp_path / "whole.csv"), rows(tmp_path / "before.csv") + rows(tmp_path / "after.csv")
    assert sum(int(r["tokens"]) for r in resumed) == sum(int(r["tokens"]) for r in whole_rows) == 64 * 32
    # every other step of 4 starts where a step of 8 starts, at that step's learning rate
    assert [r["lr"] for r in rows(tmp_path / "after.csv")[::2]] == [r["lr"] for r in whole_rows[2:]]
    run = json.loads((checkpoints / "step-0000014" / "run.json").read_text())
    assert run["loader"]["samples_consumed"] == 64


@pytest.fixture(scope="module")
def schedule(docs_bytes_prefix, corpus_dir, tmp_path_factory) -> Path:
    """Docs, then mostly literature from the schedule's step 3."""
    from helpers.preprocess import preprocess

    folder = tmp_path_factory.mktemp("resume-schedule")
    lines = (corpus_dir / "literature.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:10]
    (folder / "literature.jsonl").write_text("".join(lines), encoding="utf-8")
    literature = preprocess(folder / "literature.jsonl", folder / "literature", "bytes", append_eod=True,
                            progress=False).outputs["text"]
    path = folder / "anneal.yaml"
    path.write_text(f"datasets: [{docs_bytes_prefix}, {literature}]\nphases:\n  - {{step: 0, weights: [0.8, 0.2]}}\n"
                    "  - {step: 3, weights: [0.1, 0.9]}\n")
    return path


def test_a_resumed_schedule_names_each_phase_by_its_sample_and_this_runs_step(schedule, tmp_path):
    data, stop = ["--data-schedule", str(schedule), "--steps", "6"], ["--checkpoint-dir", str(tmp_path / "ck")]
    before = train(data, tmp_path / "before.csv", "--global-batch-size", "8", *stop, "--until-step", "2")
    assert before.returncode == 0, before.stderr
    assert "step 0: 0.8 x docs_text_document" in before.stderr and "step 3: 0.1 x" in before.stderr
    after = train(data, tmp_path / "after.csv", "--global-batch-size", "4", *stop, "--resume")
    assert after.returncode == 0, after.stderr
    opening = next(line for line in after.stderr.splitlines() if line.startswith("helpers.loading.loader:"))
    assert "sample 0 (the schedule's step 0 of 8 samples; step 0 of this run's 4): 0.8 x docs" in opening
    assert "sample 24 (the schedule's step 3 of 8 samples; step 6 of this run's 4): 0.1 x docs" in opening
    assert len(rows(tmp_path / "after.csv")) == 8  # the 48 samples after the first 16, in steps of 4


def test_train_refuses_a_loader_too_short_for_the_uninterrupted_runs_samples(docs_bytes_prefix, tmp_path):
    """In Python, where the loader is made by hand: one made as `steps x the new batch` cannot hold the run."""
    from helpers.common.errors import UserError
    from helpers.loading.loader import make_dataloader
    from helpers.training.train import CheckpointPlan, build_model, llama_config, train, train_settings

    config = llama_config("cpu-tiny", vocab_size=258, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                          num_attention_heads=4)

    def run(batch: int, samples: int, **plan):
        loader = make_dataloader([docs_bytes_prefix], seq_length=8, batch_size=batch, num_samples=samples,
                                 cache_dir=None)
        settings = train_settings("cpu-tiny", steps=4, batch_size=batch, seq_length=8, eval_every=0)
        return train(build_model(config, seed=0), loader, settings, progress=False,
                     checkpoints=CheckpointPlan(folder=tmp_path, **plan))

    run(4, 16, until_step=2)
    with pytest.raises(UserError, match=r"the loader holds 8 samples, the run's 4 steps of 4 take 16; "
                                        r"fix: make the loader with num_samples=16"):
        run(2, 8, resume=True)
    assert len(run(2, 16, resume=True).log) == 4  # the 8 samples left, in steps of 2
