"""`helpers.training` on several processes, for real: torchrun starts 2 CPU processes (gloo) that read their
halves of each global batch from one loader. DDP, and FSDP2 with gradient accumulation, take the same
float64 steps as one process with the same global batch; each rank says once where its data comes from.
A run stopped and resumed, on another number of processes, takes the steps of the uninterrupted run."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


LOADER_LINE = "helpers.loading.loader: real data:"
TINY = ["--steps", "6", "--global-batch-size", "8", "--seq-length", "64", "--model", "hidden_size=32",
        "--model", "intermediate_size=64", "--model", "num_hidden_layers=2", "--model", "num_attention_heads=4",
        "--train", "dtype=float64", "--train", "eval_every=0", "--no-progress", "--implementation", "fast"]
TOLERANCE = 1e-9
# One thread per process, as torchrun gives its processes: transformers' RMSNorm computes in float32 even in
# a float64 model, and a float32 sum split over two threads rounds differently from run to run.
ONE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def prefix(docs_bytes_prefix) -> str:
    return docs_bytes_prefix


def run_training(prefix: str, csv_path: Path, processes: int, *extra: str) -> subprocess.CompletedProcess:
    launcher = ([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
                 str(processes)]
                if processes > 1 else [sys.executable])
    command = [*launcher, "-m", "helpers.training", "--data-path", prefix, *TINY, "--csv", str(csv_path), *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=ONE_THREAD)


def losses(csv_path: Path) -> list[float]:
    with open(csv_path, newline="") as handle:
        return [float(row["loss"]) for row in csv.DictReader(handle)]


@pytest.fixture(scope="module")
def one_process(prefix, tmp_path_factory) -> list[float]:
    path = tmp_path_factory.mktemp("one") / "log.csv"
    run = run_training(prefix, path, 1)
    assert run.returncode == 0, run.stderr
    assert run.stderr.count(LOADER_LINE) == 1
    return losses(path)


@pytest.mark.parametrize("parallel, extra", [("ddp", []), ("fsdp", ["--micro-batch-size", "2"])])
def test_two_processes_take_the_steps_of_one_with_the_same_global_batch(prefix, one_process, tmp_path,
                                                                       parallel, extra):
    path = tmp_path / "log.csv"
    run = run_training(prefix, path, 2, "--parallel", parallel, *extra)
    assert run.returncode == 0, run.stderr
    assert run.stderr.count(LOADER_LINE) == 2, "each rank says once where its data comes from"
    assert "on 2 process(es)" in run.stdout and run.stdout.count("final loss") == 1, "rank 0 alone reports"
    curve = losses(path)
    assert len(curve) == len(one_process) == 6
    assert max(abs(a - b) for a, b in zip(curve, one_process)) <= TOLERANCE, (curve, one_process)
    assert curve[-1] < curve[0], "it learns"


def test_a_resumed_run_takes_the_steps_of_the_uninterrupted_one(prefix, one_process, tmp_path):
    """Stopped on 2 processes with FSDP2, resumed on 1: the steps of the uninterrupted run. (DDP stopped on 2 and
    resumed on 3 is the schedule's test below; 1 process resumed on 2 with DDP, notebook 08's solutions.) What a
    checkpoint refuses, another model shape, other data or the other model implementation, is checked on the same
    checkpoint."""
    checkpoints = tmp_path / "checkpoints"
    before = run_training(prefix, tmp_path / "before.csv", 2, "--parallel", "fsdp",
                          "--checkpoint-dir", str(checkpoints), "--checkpoint-every", "1", "--until-step", "3")
    assert before.returncode == 0, before.stderr
    assert sorted(p.name for p in checkpoints.iterdir()) == [f"step-{s:07d}" for s in range(1, 4)]
    after = run_training(prefix, tmp_path / "after.csv", 1, "--checkpoint-dir", str(checkpoints), "--resume")
    assert after.returncode == 0, after.stderr
    curve = losses(tmp_path / "before.csv") + losses(tmp_path / "after.csv")
    assert len(curve) == len(one_process)
    assert max(abs(a - b) for a, b in zip(curve, one_process)) <= TOLERANCE, (curve, one_process)
    other_shape = [arg.replace("hidden_size=32", "hidden_size=48") for arg in TINY]
    other_data = [arg.replace("64", "32") if arg == "64" else arg for arg in TINY]  # --seq-length 32
    other_model = [arg.replace("fast", "transformers") for arg in TINY]  # its weights are named apart
    for arguments, what in ((other_shape, "model"), (other_data, "data"), (other_model, "model implementation")):
        refused = subprocess.run([sys.executable, "-m", "helpers.training", "--data-path", prefix, *arguments,
                                  "--checkpoint-dir", str(checkpoints), "--resume"], capture_output=True, text=True,
                                 env=ONE_THREAD)
        assert refused.returncode == 2 and f"checkpoint of other {what}" in refused.stderr, refused.stderr
        assert "fix:" in refused.stderr and "Traceback" not in refused.stderr


def test_only_complete_checkpoints_are_resumed_from(tmp_path):
    """What a killed save leaves (a hidden temporary folder, or a folder without run.json) is never taken."""
    from helpers.training.checkpoints import RUN_FILE, latest_checkpoint

    for name, complete in (("step-0000002", True), (".step-0000009.tmp-123", True), ("step-0000005", False)):
        (tmp_path / name).mkdir()
        if complete:
            (tmp_path / name / RUN_FILE).write_text("{}")
    assert latest_checkpoint(tmp_path) == tmp_path / "step-0000002"
    assert latest_checkpoint(tmp_path / "absent") is None


def test_missing_data_and_a_parallel_run_without_torchrun_are_refused(prefix, tmp_path):
    for extra, words in (([], "no --data-path"), (["--data-path", prefix, "--parallel", "ddp"], "torchrun")):
        run = subprocess.run([sys.executable, "-m", "helpers.training", *extra, *TINY], capture_output=True,
                             text=True, timeout=300, env=ONE_THREAD)
        assert run.returncode == 2 and words in run.stderr and "fix:" in run.stderr, run.stderr
        assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()[-1]) > 0


def test_a_save_removes_what_killed_saves_left_and_keeps_a_live_one(tmp_path):
    """A killed run's hidden save folder goes at the next save; one whose writer still runs stays."""
    import torch

    from helpers.training.checkpoints import RUN_FILE, latest_checkpoint, save_checkpoint

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    abandoned = tmp_path / f".step-0000003.tmp-{dead.pid}"
    live = tmp_path / f".step-0000004.tmp-{os.getppid()}"
    for folder in (abandoned, live):
        folder.mkdir()
        (folder / "__0_0.distcp").write_bytes(b"half")
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.AdamW(model.parameters())
    saved = save_checkpoint(tmp_path, 5, (model, optimizer), {"data": "d", "model": {}})
    assert not abandoned.exists() and live.exists()
    assert latest_checkpoint(tmp_path) == saved and (saved / RUN_FILE).exists()
    assert json.loads((saved / RUN_FILE).read_text())["rng_states"] == ["rng"]  # no CUDA here


def test_a_checkpoint_restores_the_random_state_that_dropout_draws_from(tmp_path):
    """After a resume, dropout draws the masks the uninterrupted run would have drawn: the state itself comes
    back, not only the weights (a loader that shuffles with numpy draws nothing from torch)."""
    import torch

    from helpers.training.checkpoints import load_checkpoint, save_checkpoint

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5)).train()
    optimizer = torch.optim.AdamW(model.parameters())
    identity = {"data": "the same data", "model": "the same shape", "implementation": "Sequential"}
    path = save_checkpoint(tmp_path, 1, (model, optimizer), dict(identity))
    saved = torch.get_rng_state()
    uninterrupted = model(torch.ones(4, 8))  # the next step's dropout masks
    torch.manual_seed(1234)  # a new process starts from another state
    load_checkpoint(path, model, optimizer, identity)
    assert torch.equal(torch.get_rng_state(), saved)
    assert torch.equal(model(torch.ones(4, 8)), uninterrupted)


def test_a_schedule_stopped_on_2_processes_resumes_on_3_with_the_uninterrupted_curve(prefix, corpus_dir, tmp_path):
    """Annealing in miniature: docs first, then mostly literature from step 3; stopped at step 2 on 2 processes,
    resumed on 3 (a global batch of 6 splits both ways), the float64 curve is the uninterrupted one's, and the
    ledger of the last checkpoint names what each dataset gave and the ranks' stints."""
    from helpers.audit.ledger import ledger, read_state
    from helpers.preprocess import preprocess

    lines = (corpus_dir / "literature.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:10]
    (tmp_path / "literature.jsonl").write_text("".join(lines), encoding="utf-8")
    literature = preprocess(tmp_path / "literature.jsonl", tmp_path / "literature", "bytes", append_eod=True,
                            progress=False).outputs["text"]
    schedule = tmp_path / "anneal.yaml"
    schedule.write_text(f"datasets: [{prefix}, {literature}]\nphases:\n  - {{step: 0, weights: [0.8, 0.2]}}\n"
                        "  - {step: 3, weights: [0.1, 0.9]}\n")
    six = [arg if arg != "8" else "6" for arg in TINY]  # --global-batch-size 6

    def run(processes: int, csv_name: str, *extra: str) -> subprocess.CompletedProcess:
        launcher = ([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
                     str(processes)] if processes > 1 else [sys.executable])
        done = subprocess.run([*launcher, "-m", "helpers.training", "--data-schedule", str(schedule), *six,
                               "--csv", str(tmp_path / csv_name), *extra], capture_output=True, text=True,
                              timeout=600, env=ONE_THREAD)
        assert done.returncode == 0, done.stderr[-3000:]
        return done

    checkpoints = ["--checkpoint-dir", str(tmp_path / "checkpoints")]
    run(1, "whole.csv")
    run(2, "before.csv", "--parallel", "ddp", *checkpoints, "--checkpoint-every", "1", "--until-step", "2")
    run(3, "after.csv", "--parallel", "ddp", *checkpoints, "--resume")
    whole, pieces = losses(tmp_path / "whole.csv"), losses(tmp_path / "before.csv") + losses(tmp_path / "after.csv")
    assert len(whole) == len(pieces) == 6
    assert max(abs(a - b) for a, b in zip(whole, pieces)) <= TOLERANCE, (whole, pieces)
    state, source = read_state(tmp_path / "checkpoints")  # what `python -m helpers.audit ledger DIR` reads
    assert source.parent.name == "step-0000006"
    book = ledger(state)
    # 3 steps of 6 samples at 0.8/0.2, then 3 at 0.1/0.9: the greedy rule keeps each within a sample of its share
    assert all(abs(d["samples"] - d["asked_samples"]) <= len(book["segments"]) for d in book["datasets"])
    assert book["ranks"]["disjoint"] and len(book["segments"]) == 2
    assert sum(d["samples"] for d in book["datasets"]) == 36
    assert [(s["world_size"], s["batch_size"], s["to"]) for s in book["ranks"]["stints"]] == [(2, 3, 12), (3, 2, 36)]
