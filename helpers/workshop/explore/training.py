"""Steps and preset as knobs: loss curves redrawn from recorded training runs, never by training live.

    from helpers.workshop.explore import training
    runs = training.recorded_runs("../runs", current=("cpu-tiny", run_dir, ln_vocab))
    training.draw_loss_curves(runs, "cpu-tiny", steps=60)             # the static figure
    training.explore_loss_curves(runs)                                # a preset menu and a steps slider

A recorded run is a folder holding `real.csv` and `synthetic.csv` (what notebook 06 writes into its
`run_dir`, one row per step). `python -m helpers.runs` keeps the executed notebook beside each run's folder
(`<folder>.ipynb`): its papermill parameters name the preset (and any overrides), and its recorded metrics
give ln V of the run's tokenizer. The run a notebook has just made is passed as `current`.
"""

from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ...common.headless import headless
from ..env import read_metrics
from ..plots import loss_curves
from . import live

CURVES = {"real": "real blended corpus", "synthetic": "synthetic random tokens"}  # file stem -> legend


@dataclass(frozen=True)
class RecordedRun:
    """The logs of one run of notebook 06: `logs[stem]` is the rows of `<stem>.csv`, step by step."""

    label: str
    preset: str
    ln_vocab: float
    folder: Path
    logs: dict[str, list[dict[str, float]]] = field(repr=False)

    @property
    def steps(self) -> int:
        return max(len(rows) for rows in self.logs.values())


def read_log(path: str | os.PathLike) -> list[dict[str, float]]:
    """A training log CSV (`helpers.training.train.LOG_COLUMNS`) as rows of numbers; empty cells are left out."""
    with open(path, newline="", encoding="utf-8") as handle:
        return [{key: float(value) for key, value in row.items() if value not in ("", None)}
                for row in csv.DictReader(handle)]


def read_run(folder: str | os.PathLike, preset: str, ln_vocab: float, label: str | None = None) -> RecordedRun:
    """The run whose CSV logs lie in `folder`."""
    folder = Path(folder)
    logs = {stem: read_log(folder / f"{stem}.csv") for stem in CURVES if (folder / f"{stem}.csv").exists()}
    if not logs:
        raise FileNotFoundError(f"{folder}: no {' or '.join(f'{s}.csv' for s in CURVES)}")
    return RecordedRun(label=label or preset, preset=preset, ln_vocab=float(ln_vocab), folder=folder, logs=logs)


def _describe(parameters: dict[str, Any]) -> str:
    """'h100, mistral, layers=6': the preset, then what the run changed."""
    parts = [str(parameters.get("preset", "cpu-tiny"))]
    if parameters.get("tokenizer"):
        parts.append(str(parameters["tokenizer"]))
    for key, value in sorted({**parameters.get("model_overrides", {}), **parameters.get("train_overrides",
                                                                                        {})}.items()):
        parts.append(f"{key.replace('num_hidden_layers', 'layers')}={value}")
    return ", ".join(parts)


def recorded_runs(root: str | os.PathLike | None = None,
                  current: tuple[str, str | os.PathLike, float] | None = None) -> dict[str, RecordedRun]:
    """Every recorded run under `root` that `helpers.runs` left with its executed notebook, plus `current`
    (preset, run folder, ln V), by label. Labels start with the preset; equal labels get the folder's name."""
    runs: dict[str, RecordedRun] = {}
    if current is not None:
        preset, folder, ln_vocab = current
        run = read_run(folder, preset, ln_vocab, f"{preset} (this notebook)")
        runs[run.label] = run
    for csv_path in sorted(Path(root).rglob("real.csv")) if root is not None and Path(root).is_dir() else []:
        folder = csv_path.parent
        executed = folder.with_suffix(".ipynb")
        if not executed.exists() or (current is not None and folder.resolve() == Path(current[1]).resolve()):
            continue
        parameters = json.loads(executed.read_text(encoding="utf-8"))["metadata"].get("papermill",
                                                                                      {}).get("parameters", {})
        ln_vocab = read_metrics(executed).get("ln_vocab")
        if ln_vocab is None:
            continue  # a run that stopped before it recorded ln V has no complete curves
        label = _describe(parameters)
        if label in runs:
            label = f"{label} [{folder.parent.name}]"
        runs[label] = read_run(folder, str(parameters.get("preset", "cpu-tiny")), ln_vocab, label)
    return runs


def draw_loss_curves(runs: dict[str, RecordedRun], preset: str, steps: int | None = None):
    """The loss curves of the recorded run labelled `preset` over its first `steps` steps, with ln V."""
    run = runs[preset]
    shown = run.steps if steps is None else max(1, min(int(steps), run.steps))
    logs = {CURVES[stem]: rows[:shown] for stem, rows in run.logs.items()}
    at_end = ", ".join(f"{stem} {rows[shown - 1]['loss']:.2f}" for stem, rows in run.logs.items() if len(rows) >= shown)
    fig = loss_curves(logs, run.ln_vocab, f"Recorded run {run.label}: the first {shown} of {run.steps} steps\n"
                                          f"loss at step {shown - 1}: {at_end}")
    fig.axes[0].set_xlim(-0.5, max(shown - 0.5, 1))
    fig.tight_layout()
    return fig


def explore_loss_curves(runs: dict[str, RecordedRun], preset: str | None = None, steps: int | None = None) -> None:
    """A menu of the recorded runs (labelled by preset) and a steps slider that redraw the loss curves
    (headless: one line naming them)."""
    labels: Sequence[str] = list(runs)
    preset = preset if preset in runs else labels[0]
    longest = max(run.steps for run in runs.values())

    def redraw(preset: str, steps: int) -> None:  # returns nothing: the figure is shown once
        draw_loss_curves(runs, preset, steps)

    if headless():
        controls = dict.fromkeys(("preset", "steps"))
    else:
        import ipywidgets

        controls = {"preset": ipywidgets.Dropdown(options=labels, value=preset, description="preset"),
                    "steps": ipywidgets.IntSlider(value=steps or runs[preset].steps, min=1, max=longest,
                                                  step=max(1, 10 ** int(math.log10(longest)) // 10),
                                                  description="steps", continuous_update=False)}
    live(redraw, f"Loss curves of {len(labels)} recorded run{'s' if len(labels) != 1 else ''}", **controls)
