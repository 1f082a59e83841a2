"""The machine a notebook runs on: device choice, a version report, and metrics a run publishes.

`record(name, value)` keeps a metric out of the reader's view: it leaves no output in the notebook. A
headless run by `helpers.runs` names a file in $HELPERS_METRICS_FILE before it starts the kernel, and each
`record` appends one JSON line there (beside the executed copy, `NAME.metrics.jsonl`); `read_metrics(executed)`
reads them back. Run by hand, in JupyterLab or under nbval, there is no such file and `record` only checks
that the value can be stored.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

METRICS_FILE_ENV = "HELPERS_METRICS_FILE"  # set by helpers.runs for the kernel it starts

# MPS gave wrong results for common training ops on older torch releases; trust it from here on.
MPS_MIN_TORCH = (2, 3)

# What the notebooks import besides torch: the version report names any that is missing.
REPORTED_PACKAGES = (
    "numpy", "transformers", "tokenizers", "tiktoken", "sentencepiece", "matplotlib", "megatron-core",
)


def name_the_cpu_for_deepspeed() -> None:
    """Where no NVIDIA driver is found (no `nvidia-smi`, the Makefile's test too), tell DeepSpeed it runs on the CPU
    (`DS_ACCELERATOR=cpu`): transformers' `Trainer` imports it, and left to detect the device it prints a warning
    into the lesson's output. A value set outside stays; torch is not imported for this."""
    if shutil.which("nvidia-smi") is None:
        os.environ.setdefault("DS_ACCELERATOR", "cpu")


name_the_cpu_for_deepspeed()


def leave_the_loaders_news_to_the_lesson() -> None:
    """In a notebook kernel, the loader's `real data: ...` line stays unlogged: a lesson prints `loader.describe()`
    where it teaches where batches come from, and a committed output holds no logger lines. Its warnings
    (`SYNTHETIC DATA`, a tokenizer that does not match) still show, as a plain line without the logger's name.
    A script's logging is left as it was."""
    if "ipykernel" in sys.modules:
        from helpers.loading.loader import log

        log.setLevel(logging.WARNING)
        for handler in log.handlers:
            handler.setFormatter(logging.Formatter("%(message)s"))


def _torch_version_tuple(version: str) -> tuple[int, int]:
    major, minor = version.split("+")[0].split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


def choose_device(verbose: bool = True) -> str:
    """Pick 'cuda', then 'mps' (only on a torch known to get it right), then 'cpu'; print why."""
    import torch

    if torch.cuda.is_available():
        device, why = "cuda", torch.cuda.get_device_name(0)
    elif (
        getattr(torch.backends, "mps", None) is not None
        and torch.backends.mps.is_available()
        and _torch_version_tuple(torch.__version__) >= MPS_MIN_TORCH
    ):
        device, why = "mps", f"Apple GPU, torch {torch.__version__}"
    else:
        device, why = "cpu", f"{os.cpu_count()} cores, no supported GPU found"
    if verbose:
        print(f"device: {device} ({why})")
    return device


def package_version(name: str) -> str | None:
    """Installed version of a distribution, or None when it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def version_report() -> dict[str, Any]:
    """Python's and torch's versions, then those of the other packages the notebooks import (None: not installed)."""
    report: dict[str, Any] = {"python": sys.version.split()[0], "torch": package_version("torch")}
    for name in REPORTED_PACKAGES:
        report[name] = package_version(name)
    return report


def print_version_report() -> dict[str, Any]:
    """Print what a learner's numbers depend on: Python's and torch's versions, and whether the other packages
    the notebooks import are installed (a missing one named, with the fix). Return the whole report."""
    report = version_report()
    missing = [name for name, version in report.items() if version is None]
    others = len(report) - 2
    print(f"python {report['python']}, torch {report['torch'] or 'NOT INSTALLED'}; " + (
        f"NOT INSTALLED: {', '.join(missing)} (fix: make workshop)" if missing
        else f"the {others} other packages the notebooks import are installed"))
    return report


def _jsonable(value: Any) -> Any:
    """Numbers from numpy or torch become plain Python numbers; containers are converted deeply."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    return value


def metric_line(name: str, value: Any) -> str:
    """The JSON line `record` keeps: the metric's name and value (numpy and torch numbers made plain)."""
    return json.dumps({"name": name, "value": _jsonable(value)})  # fails here, in the cell, on what JSON cannot hold


def metrics_file(executed: str | os.PathLike) -> Path:
    """Where the metrics of the run that wrote `executed` are kept: `NAME.metrics.jsonl` beside it."""
    return Path(executed).with_suffix(".metrics.jsonl")


def record(name: str, value: Any) -> None:
    """Keep a metric of a headless run, with no output in the notebook (see the module's docstring).

    Returns None, so a `record(...)` that ends a cell echoes nothing.
    """
    line = metric_line(name, value)
    target = os.environ.get(METRICS_FILE_ENV)
    if target:
        with open(target, "a", encoding="utf-8") as file:
            file.write(line + "\n")


def read_metrics(executed: str | os.PathLike) -> dict[str, Any]:
    """Every metric the run that wrote `executed` recorded, by name (the last value wins); {} when none.
    A last line cut short (a kernel killed while writing it) is not a metric and is left out."""
    path = metrics_file(executed)
    metrics: dict[str, Any] = {}
    if not path.exists():
        return metrics
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    if lines and not text.endswith("\n"):
        lines.pop()
    for line in lines:
        entry = json.loads(line)
        metrics[entry["name"]] = entry["value"]
    return metrics
