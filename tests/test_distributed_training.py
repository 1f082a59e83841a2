"""`helpers.training` on several processes, for real: torchrun starts 2 CPU processes (gloo) that read their
halves of each global batch from one loader. DDP, and FSDP2 with gradient accumulation, take the same
float64 steps as one process with the same global batch; each rank says once where its data comes from."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.preprocess import preprocess

LOADER_LINE = "helpers.loading.loader: real data:"
TINY = ["--steps", "6", "--global-batch-size", "8", "--seq-length", "64", "--model", "hidden_size=32",
        "--model", "intermediate_size=64", "--model", "num_hidden_layers=2", "--model", "num_attention_heads=4",
        "--train", "dtype=float64", "--train", "eval_every=0", "--no-progress"]
TOLERANCE = 1e-9


@pytest.fixture(scope="module")
def prefix(corpus_dir, tmp_path_factory) -> str:
    """The docs domain of the real corpus as byte ids (a 258-id vocabulary keeps the model tiny)."""
    out = tmp_path_factory.mktemp("distributed") / "docs"
    return preprocess(corpus_dir / "docs.jsonl", out, "bytes", append_eod=True, workers=2, progress=False).outputs["text"]


def run_training(prefix: str, csv_path: Path, processes: int, *extra: str) -> subprocess.CompletedProcess:
    launcher = ([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(processes)]
                if processes > 1 else [sys.executable])
    command = [*launcher, "-m", "helpers.training", "--data-path", prefix, *TINY, "--csv", str(csv_path), *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


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


def test_missing_data_and_a_parallel_run_without_torchrun_are_refused(prefix, tmp_path):
    for extra, words in (([], "no --data-path"), (["--data-path", prefix, "--parallel", "ddp"], "torchrun")):
        run = subprocess.run([sys.executable, "-m", "helpers.training", *extra, *TINY], capture_output=True,
                             text=True, timeout=300)
        assert run.returncode == 2 and words in run.stderr and "fix:" in run.stderr, run.stderr
        assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()[-1]) > 0
