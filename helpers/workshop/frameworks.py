"""Each training framework of notebook 08 run as its user runs it: a command line, on one process or on
several under torchrun, its per-step log read back. The notebook and the tests launch them through here.

    run = run_framework("deepspeed", ["--data-path", *blend, "--steps", "40"], processes=2, csv=log_path)
    run.log          # step, loss (and batch_digest) per step, as the framework wrote them
    run.stderr_line  # the last line it printed on stderr: its one-line refusal when it refused
    print(excerpt("examples/trainer.py", "TrainingArguments(", "Trainer(model="))  # the lines that wire it

`helpers.training` is given the examples' optimizer (Adam at a constant rate, no weight decay, no
clipping, no evaluation) and their train split, so that on the same batches from the same weights every
framework takes the same steps.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..common.errors import UserError
from ..common.paths import REPO_ROOT

EXAMPLES_DIR = REPO_ROOT / "examples"
# framework -> the command after `python` (a script, or -m and a module)
FRAMEWORKS: dict[str, list[str]] = {
    "helpers.training": ["-m", "helpers.training", "--split", "100,0,0", "--no-progress",
                         "--train", "lr=3e-3", "--train", "min_lr=3e-3", "--train", "warmup_steps=0",
                         "--train", "weight_decay=0", "--train", "grad_clip=0", "--train", "eval_every=0"],
    "trainer": [str(EXAMPLES_DIR / "trainer.py")],
    "deepspeed": [str(EXAMPLES_DIR / "deepspeed_zero.py")],
    "megatron": [str(EXAMPLES_DIR / "megatron_gpt.py")],
}

# framework -> (the module it needs, how to install it)
PACKAGES: dict[str, tuple[str, str]] = {
    "helpers.training": ("torch", "pip install -e ."),
    "trainer": ("transformers", "pip install -e ."),
    "deepspeed": ("deepspeed", "pip install -e '.[deepspeed]'"),
    "megatron": ("megatron.core", "pip install -e ."),
}


def not_installed(framework: str) -> str | None:
    """One line saying `framework`'s package is missing and how to install it (a notebook skips it), or None."""
    module, install = PACKAGES[framework]
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package of a dotted name is missing
        found = False
    return None if found else f"{framework}: {module} is not installed, so it is skipped; fix: {install}"


@dataclass(frozen=True)
class FrameworkRun:
    """What one launch gave: its exit code, wall time, output and per-step log (None when it wrote none)."""

    framework: str
    processes: int
    returncode: int
    seconds: float
    stdout: str
    stderr: str
    log: pd.DataFrame | None

    @property
    def stderr_line(self) -> str:
        lines = self.stderr.strip().splitlines()
        return lines[-1] if lines else ""

    @property
    def cause(self) -> str:
        """The line that says why it failed: the last error a process printed (not torchrun's summary)."""
        errors = [line.strip() for line in self.stderr.splitlines()
                  if re.search(r"\w+(Error|Exception)\b|^error:|^terminate called|Signal \d+ \(", line.strip())
                  and "elastic" not in line
                  and "ChildFailedError" not in line]
        return errors[-1] if errors else self.stderr_line

    def check(self) -> FrameworkRun:
        """Itself when it succeeded; else a UserError with the line that says why."""
        if self.returncode != 0:
            raise UserError(f"{self.framework} on {self.processes} process(es) exited {self.returncode}: "
                            f"{self.cause}")
        return self


def excerpt(path: str | Path, first: str, last: str | None = None) -> str:
    """The lines of `path` (relative to the repository) from the first that contains `first` to the next that
    contains `last` (only that line when `last` is None), dedented under a `path, lines a-b:` header: a lesson
    quotes the script it runs, read from the file, so the quote cannot drift from the code."""
    lines = (REPO_ROOT / path).read_text().splitlines()
    start = next((k for k, line in enumerate(lines) if first in line), None)
    if start is None:
        raise UserError(f"{path} has no line with {first!r}; fix: quote a line the file still has")
    end = start if last is None else next((k for k in range(start, len(lines)) if last in lines[k]), None)
    if end is None:
        raise UserError(f"{path} has no line with {last!r} after line {start + 1}; fix: quote a line the file has")
    return f"{path}, lines {start + 1}-{end + 1}:\n" + textwrap.indent(
        textwrap.dedent("\n".join(lines[start:end + 1])), "    ")


def model_flags(overrides: dict) -> list[str]:
    """`{"hidden_size": 64}` as `--model hidden_size=64`, the flag every framework takes."""
    return [part for key, value in overrides.items() for part in ("--model", f"{key}={value}")]


def launcher(processes: int) -> list[str]:
    """This Python, or torchrun on a free port (`--standalone`) starting `processes` of it."""
    if processes == 1:
        return [sys.executable]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(processes)]


def launch(command: list[str], processes: int = 1, timeout: float = 900) -> tuple[subprocess.CompletedProcess, float]:
    """`command` (what follows `python`) on `processes` processes; the finished process and its wall time in
    seconds. One thread per process, as torchrun sets by default: a float32 sum split over several threads
    (transformers' RMSNorm computes in float32 even in a float64 model) rounds differently from run to run,
    and the comparisons here are exact."""
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    started = time.perf_counter()
    done = subprocess.run(launcher(processes) + command, capture_output=True, text=True, timeout=timeout,
                          env=environment)
    return done, time.perf_counter() - started


def run_framework(framework: str, flags: list[str], processes: int = 1, csv: str | Path | None = None,
                  timeout: float = 900) -> FrameworkRun:
    """`framework` (a key of FRAMEWORKS) with `flags`, writing its per-step log to `csv` when given. It runs
    in this process's folder, so relative paths in `flags` mean what they mean here."""
    if framework not in FRAMEWORKS:
        raise UserError(f"unknown framework {framework!r}; fix: use one of {', '.join(FRAMEWORKS)}")
    command = FRAMEWORKS[framework] + flags
    if framework == "helpers.training" and processes > 1 and "--parallel" not in flags:
        command += ["--parallel", "ddp"]
    if csv is not None:
        Path(csv).unlink(missing_ok=True)  # a log left by an earlier run must not pass for this one's
        command += ["--csv", str(csv)]
    done, seconds = launch(command, processes, timeout)
    log = pd.read_csv(csv, dtype={"batch_digest": str}) if csv is not None and Path(csv).exists() else None
    return FrameworkRun(framework=framework, processes=processes, returncode=done.returncode, seconds=seconds,
                        stdout=done.stdout, stderr=done.stderr, log=log)
