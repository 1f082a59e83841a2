"""Every 2-process entry point ends cleanly under load: each runs STRESS_RUNS times (30 unless the environment
says otherwise) under torchrun beside three busy processes, and every run must exit 0.

A process group's threads can outlive the script, and a process that then finalizes its interpreter can abort
(SIGABRT) at the end of a run that succeeded (`helpers.common.process_exit`). The race needs a descheduled
thread, so it shows on a loaded machine and almost never on an idle one: hence the busy processes, and hence
many runs. It takes about an hour on 2 cores, so it stays out of `make test`:

    .venv/bin/python -m pytest -m stress -s tests/test_stress.py        # STRESS_RUNS=5 for a quick look
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from helpers.workshop.frameworks import model_flags, run_framework

pytestmark = pytest.mark.stress

RUNS = int(os.environ.get("STRESS_RUNS", "30"))
BUSY_PROCESSES = 3
TINY = ["--steps", "2", "--global-batch-size", "4", "--seq-length", "32",
        *model_flags({"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2})]
ENTRY_POINTS = {
    "ddp": ("helpers.training", ["--parallel", "ddp"]),
    "fsdp": ("helpers.training", ["--parallel", "fsdp"]),
    "audit": ("helpers.training", ["--parallel", "ddp", "--audit"]),
    "deepspeed": ("deepspeed", []),
    "megatron": ("megatron", []),
    "trainer": ("trainer", []),
}
ABORT = re.compile(r"SIGABRT|Signal 6|terminate called|Fatal Python error")


@pytest.fixture(scope="module")
def prefix(docs_bytes_prefix) -> str:
    return docs_bytes_prefix


@pytest.fixture(scope="module")
def busy():
    """Three processes that only spin, so that the ranks' threads wait for a core."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(BUSY_PROCESSES)]
    yield spinners
    for spinner in spinners:
        spinner.kill()
        spinner.wait()


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_every_run_of_a_two_process_entry_point_exits_cleanly_beside_busy_processes(entry_point, prefix, busy):
    framework, flags = ENTRY_POINTS[entry_point]
    failures = []
    for _ in range(RUNS):
        run = run_framework(framework, ["--data-path", prefix, *TINY, *flags], processes=2, timeout=600)
        if run.returncode != 0 or ABORT.search(run.stderr):
            failures.append(f"exit {run.returncode}: {run.cause}")
    assert all(spinner.poll() is None for spinner in busy), "a busy process stopped during the runs"
    print(f"\n{entry_point}: {len(failures)} of {RUNS} runs failed beside {BUSY_PROCESSES} busy processes")
    assert not failures, "\n".join(failures)
