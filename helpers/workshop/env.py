"""The machine a notebook runs on: device choice, a version report, and metrics a run publishes.

`record(name, value)` displays a metric as a small JSON output of its own MIME type and nothing
else: no text, so JupyterLab, nbconvert and GitHub show nothing for it, and the cell's own table or
figure stays the only thing a reader sees. Papermill keeps cell outputs in the executed notebook, so
`read_metrics(path)` can read every metric back from the `.ipynb` file with no side files and no
global state.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

METRIC_MIME = "application/vnd.helpers.metric+json"

# MPS gave wrong results for common training ops on older torch releases; trust it from here on.
MPS_MIN_TORCH = (2, 3)

REPORTED_PACKAGES = (
    "torch", "numpy", "transformers", "tokenizers", "tiktoken", "sentencepiece",
    "matplotlib", "papermill", "megatron-core",
)


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
    """Python, platform, CPU count and the versions of the packages the workshop relies on."""
    report: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
    }
    for name in REPORTED_PACKAGES:
        report[name] = package_version(name) or "not installed"
    return report


def print_version_report() -> dict[str, Any]:
    """Print the version report as an aligned table and return it."""
    report = version_report()
    width = max(len(k) for k in report)
    for key, value in report.items():
        print(f"{key:<{width}}  {value}")
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


def metric_output(name: str, value: Any) -> dict[str, Any]:
    """The display bundle `record` emits: the metric under its own MIME type, and no text to show."""
    value = _jsonable(value)
    json.dumps(value)  # fail here, in the cell, if the value cannot be stored
    return {METRIC_MIME: {"name": name, "value": value}}


def record(name: str, value: Any) -> None:
    """Publish a metric from a notebook cell, silently; executed notebooks keep it for `read_metrics`.

    Returns None, so a `record(...)` that ends a cell does not echo its value a second time.
    """
    from IPython.display import display

    display(metric_output(name, value), raw=True)


def read_metrics(path: str | os.PathLike) -> dict[str, Any]:
    """Every metric recorded in an executed notebook, by name (the last value wins)."""
    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    metrics: dict[str, Any] = {}
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            payload = output.get("data", {}).get(METRIC_MIME)
            if payload is not None:
                metrics[payload["name"]] = payload["value"]
    return metrics
