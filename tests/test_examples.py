"""The framework examples under `examples/` run as a user runs them (the distributed ones on 2 processes
under torchrun): on real data their loss falls below what random tokens give on the same steps, random
tokens come only by name and say so, missing data is one line and exit 2 in every one; and every framework
learns from the same global batches and, from the same weights with the same optimizer, draws the same
loss curve as `helpers.training` does."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys

import pytest
import torch

from helpers.common.paths import REPO_ROOT
from helpers.loading.loader import make_dataloader
from helpers.preprocess import preprocess
from helpers.training.framework_runs import global_batch_digest

# Each example and the number of processes it runs on here.
EXAMPLES = {"trainer.py": 1, "deepspeed_zero.py": 2, "megatron_gpt.py": 2}
STEPS, GLOBAL_BATCH, SEQ = 20, 8, 64
SHAPE = ["--model", "hidden_size=64", "--model", "intermediate_size=128", "--model", "num_hidden_layers=2",
         "--model", "num_attention_heads=4"]
TINY = ["--steps", str(STEPS), "--global-batch-size", str(GLOBAL_BATCH), "--seq-length", str(SEQ), *SHAPE]
# helpers.training with the examples' optimizer: constant rate, no weight decay, no clipping, no evaluation
SAME_OPTIMIZER = ["--train", "lr=3e-3", "--train", "min_lr=3e-3", "--train", "warmup_steps=0", "--train",
                  "weight_decay=0", "--train", "grad_clip=0", "--train", "eval_every=0"]
FINAL_LOSS = re.compile(r"loss [0-9.]+ -> ([0-9.]+)")
SAME_CURVE = 1e-4  # float32 on CPU: the frameworks sum in different orders


@pytest.fixture(scope="module")
def prefix(corpus_dir, tmp_path_factory) -> str:
    """The docs domain of the real corpus as byte ids (a 258-id vocabulary keeps the model tiny)."""
    made = preprocess(corpus_dir / "docs.jsonl", tmp_path_factory.mktemp("examples") / "docs", "bytes",
                      append_eod=True, workers=2, progress=False)
    return made.outputs["text"]


def launch(command: list[str], processes: int) -> subprocess.CompletedProcess:
    """`command` (a script or `-m module` and its flags) on 1 process, or on several under torchrun."""
    launcher = [sys.executable]
    if processes > 1:
        launcher += ["-m", "torch.distributed.run", "--nproc-per-node", str(processes)]
    return subprocess.run(launcher + command, capture_output=True, text=True, timeout=600, cwd=REPO_ROOT,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})


def run_example(name: str, *arguments: str, processes: int = 1) -> subprocess.CompletedProcess:
    return launch([str(REPO_ROOT / "examples" / name), *arguments], processes)


def read_log(path) -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def real_runs(prefix, tmp_path_factory) -> dict[str, list[dict]]:
    """Each example's per-step log on the real data, and `helpers.training`'s on 2 processes with DDP."""
    folder = tmp_path_factory.mktemp("example-logs")
    logs = {}
    for name, processes in EXAMPLES.items():
        run = run_example(name, "--data-path", prefix, *TINY, "--csv", str(folder / f"{name}.csv"),
                          processes=processes)
        assert run.returncode == 0 and "real data:" in run.stderr, run.stderr[-3000:]
        logs[name] = read_log(folder / f"{name}.csv")
        assert float(FINAL_LOSS.search(run.stdout)[1]) == pytest.approx(float(logs[name][-1]["loss"]), abs=1e-4)
    ours = launch(["-m", "helpers.training", "--data-path", prefix, "--parallel", "ddp", "--split", "100,0,0",
                   "--steps", str(STEPS), "--global-batch-size", str(GLOBAL_BATCH), "--seq-length", str(SEQ), *SHAPE,
                   *SAME_OPTIMIZER, "--no-progress", "--csv", str(folder / "helpers.csv")], processes=2)
    assert ours.returncode == 0, ours.stderr[-3000:]
    logs["helpers.training"] = read_log(folder / "helpers.csv")
    return logs


@pytest.mark.parametrize("name", EXAMPLES)
def test_real_data_beats_random_tokens_on_the_same_steps(name, real_runs):
    synthetic = run_example(name, "--synthetic", "--vocab-size", "258", *TINY, processes=EXAMPLES[name])
    assert synthetic.returncode == 0, synthetic.stderr[-3000:]
    assert "SYNTHETIC DATA, asked for by name" in synthetic.stderr
    random_loss = float(FINAL_LOSS.search(synthetic.stdout)[1])
    assert float(real_runs[name][-1]["loss"]) < random_loss - 1.0, (real_runs[name][-1], random_loss)


def test_every_framework_learns_from_the_loaders_global_batches(real_runs, prefix):
    loader = make_dataloader([prefix], split="100,0,0", seq_length=SEQ, batch_size=GLOBAL_BATCH,
                             num_samples=STEPS * GLOBAL_BATCH, seed=0, cache_dir=None)
    expected = [global_batch_digest(batch["input_ids"]) for batch in loader]
    assert len(set(expected)) == STEPS  # the batches differ from step to step, so equal digests mean something
    for name in EXAMPLES:
        assert [row["batch_digest"] for row in real_runs[name]] == expected, name


def test_every_framework_draws_the_same_loss_curve(real_runs):
    reference = [float(row["loss"]) for row in real_runs["helpers.training"]]
    assert len(reference) == STEPS and reference[-1] < reference[0] - 1.0
    for name in EXAMPLES:
        curve = [float(row["loss"]) for row in real_runs[name]]
        assert curve == pytest.approx(reference, abs=SAME_CURVE), name


@pytest.mark.parametrize("stage", [1, 3])
def test_every_zero_stage_takes_the_same_steps(stage, real_runs, prefix, tmp_path):
    run = run_example("deepspeed_zero.py", "--zero-stage", str(stage), "--data-path", prefix, *TINY,
                      "--csv", str(tmp_path / "zero.csv"), processes=2)
    assert run.returncode == 0, run.stderr[-3000:]
    stage_two = [float(row["loss"]) for row in real_runs["deepspeed_zero.py"]]
    assert [float(row["loss"]) for row in read_log(tmp_path / "zero.csv")] == pytest.approx(stage_two, abs=SAME_CURVE)


@pytest.mark.parametrize("name", EXAMPLES)
def test_missing_data_is_one_line_and_exit_2(name, tmp_path):
    for arguments in ([], ["--data-path", str(tmp_path / "absent_text_document")]):
        run = run_example(name, *arguments, *TINY)
        assert run.returncode == 2 and "fix:" in run.stderr and "Traceback" not in run.stderr, run.stderr
        assert len(run.stderr.strip().splitlines()) == 1, run.stderr


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_megatron_runs_its_own_attention_and_rotary_on_a_gpu(prefix):
    """On CUDA the example builds megatron-core's local spec as it ships; it learns as on the CPU."""
    run = run_example("megatron_gpt.py", "--data-path", prefix, *TINY, "--device", "cuda")
    assert run.returncode == 0, run.stderr[-3000:]
    assert float(FINAL_LOSS.search(run.stdout)[1]) < 4.5
