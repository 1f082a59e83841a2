"""The summary of a batch of notebook runs: `summary.json`, `summary.md` and comparison figures.

Nothing here knows any notebook: it reads what each run recorded with `helpers.workshop.env.record` and draws

- `figures/duration.png`: every run's wall time, failures in another colour;
- `figures/metric-NAME.png`: numbers recorded by two runs or more, one bar per run and metric (one figure
  per pattern a grid's `plot` gives, or else per family of metrics whose values differ between runs);
- `figures/curve-NAME.png`: a list of numbers (a curve) recorded by two runs or more, all on one plot;
- `figures/loss.png`: the training logs a run wrote into its `run_dir` (CSV files with `step` and `loss`
  columns), every run's loss curve on one plot, one colour per run and one line style per log.
"""

from __future__ import annotations

import csv
import fnmatch
import json
import math
import os
import platform
import re
import textwrap
from pathlib import Path
from typing import Any

from ..common.files import write_text_atomically

MAX_METRIC_FIGURES = 12
LINE_STYLES = ("-", "--", ":", "-.")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_curve(value: Any) -> bool:
    return isinstance(value, list) and len(value) > 1 and all(_is_number(v) for v in value)


def _short(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _flat(parameters: dict[str, Any]) -> dict[str, Any]:
    """A mapping-valued parameter (`model_overrides: {hidden_size: 96}`) contributes its own keys."""
    flat: dict[str, Any] = {}
    for name, value in parameters.items():
        flat.update(value if isinstance(value, dict) and value else {name: value})
    return flat


def varying_parameters(entries: list[dict[str, Any]]) -> list[str]:
    """The grid parameters (keys inside mapping-valued ones included) whose value is not the same in every
    run, in order of first appearance."""
    flat = [_flat(e["parameters"]) for e in entries]
    names = list(dict.fromkeys(name for f in flat for name in f))
    return [n for n in names if len({_short(f.get(n)) for f in flat}) > 1]


def run_labels(entries: list[dict[str, Any]]) -> list[str]:
    """A short label per entry: the parameters that differ between runs (all those set, when none differs),
    and the notebook when several ran."""
    varying = varying_parameters(entries) or list(dict.fromkeys(n for e in entries for n in _flat(e["parameters"])))
    several_notebooks = len({e["name"] for e in entries}) > 1
    labels = []
    for entry in entries:
        flat = _flat(entry["parameters"])
        parameters = ", ".join(f"{n}={_short(flat[n])}" for n in varying if n in flat)
        if several_notebooks or not parameters:
            parameters = f"{entry['name']} {parameters}".strip() if parameters else entry["name"]
        labels.append(parameters)
    return labels


def _wrapped(labels: list[str], width: int = 32) -> list[str]:
    """Tick labels on lines of at most `width` characters, so that long ones do not squeeze the plot."""
    return [textwrap.fill(label, width, break_on_hyphens=False) for label in labels]


def _bars_height(wrapped: list[str], bars: int = 1) -> float:
    """Inches for a horizontal bar chart: room for each run's bars and for each line of its label."""
    return 1.6 + sum(max(0.3 * bars, 0.2 * (label.count("\n") + 1)) + 0.1 for label in wrapped)


def _legend_columns(names: list[str]) -> int:
    return 1 if len(names) < 2 or max(len(n) for n in names) > 40 else 2


def _legend_height(names: list[str]) -> float:
    """Inches the legend below a plot takes."""
    return 0.22 * math.ceil(len(names) / _legend_columns(names))


def _legend(figure, names: list[str]) -> None:
    """Below the plot, where it hides no data."""
    figure.legend(loc="outside lower center", ncols=_legend_columns(names), fontsize="small")


def _cell(value: Any) -> str:
    """A value for a markdown table cell."""
    if value is None:
        text = "n/a"
    elif isinstance(value, float):
        text = f"{value:.6g}"
    elif isinstance(value, list) and len(value) > 5:
        text = f"{len(value)} values, {_short(value[0])} … {_short(value[-1])}"
    else:
        text = _short(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(v) if not isinstance(v, str) else v.replace("|", "\\|") for v in row) + " |"
              for row in rows]
    return lines


# --- figures --------------------------------------------------------------------------------------

def _figure(width: float = 7.0, height: float = 4.0):
    from matplotlib.figure import Figure  # no pyplot: nothing global, no display needed

    figure = Figure(figsize=(width, height), layout="constrained")
    return figure, figure.add_subplot()


def _file_name(prefix: str, name: str) -> str:
    """`metric-padding_fraction.png` for the pattern `padding_fraction.*`: no wildcards in file names."""
    name = re.sub(r"[.]{2,}", ".", re.sub(r"[*?\[\]]", "", name)).strip("._-") or "all"
    return f"{prefix}-{re.sub(r'[^A-Za-z0-9._=-]+', '_', name)}.png"


def duration_figure(path: Path, entries: list[dict[str, Any]], labels: list[str]) -> None:
    wrapped = _wrapped(labels)
    figure, axes = _figure(7.0, _bars_height(wrapped))
    axes.barh(range(len(labels)), [e["duration_s"] for e in entries],
              color=["tab:blue" if e["status"] == "ok" else "tab:red" for e in entries])
    axes.set_yticks(range(len(labels)), wrapped)
    axes.invert_yaxis()  # first run on top, as in the table
    axes.set_xlabel("seconds")
    axes.set_ylabel("run")
    axes.set_title("Wall time of each run (red: failed)")
    figure.savefig(path, dpi=100)


def metric_figure(path: Path, title: str, names: list[str], entries: list[dict[str, Any]], labels: list[str]) -> None:
    """One bar per run for each metric in `names` (bars side by side when there are several)."""
    runs = [(e, label) for e, label in zip(entries, labels) if any(_is_number(e["metrics"].get(n)) for n in names)]
    wrapped = _wrapped([label for _, label in runs])
    figure, axes = _figure(7.0, _bars_height(wrapped, len(names)) + (_legend_height(names) if len(names) > 1 else 0))
    height = 0.8 / len(names)
    for k, name in enumerate(names):
        values = [e["metrics"].get(name) for e, _ in runs]
        positions = [i + (k - (len(names) - 1) / 2) * height for i in range(len(runs))]
        axes.barh(positions, [v if _is_number(v) else 0 for v in values], height=height, label=name)
    axes.set_yticks(range(len(runs)), wrapped)
    axes.invert_yaxis()  # first run on top, as in the table
    axes.set_xlabel(names[0] if len(names) == 1 else title)
    axes.set_ylabel("run")
    axes.set_title(f"{title} across runs")
    if len(names) > 1:
        _legend(figure, names)
    figure.savefig(path, dpi=100)


def curve_figure(path: Path, name: str, entries: list[dict[str, Any]], labels: list[str]) -> None:
    from matplotlib.ticker import MaxNLocator

    drawn = [(e["metrics"][name], label) for e, label in zip(entries, labels) if _is_curve(e["metrics"].get(name))]
    figure, axes = _figure(7.0, 4.0 + _legend_height([label for _, label in drawn]))
    for values, label in drawn:
        axes.plot(range(len(values)), values, marker="o", label=label)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel("position in the recorded list")
    axes.set_ylabel(name)
    axes.set_title(f"{name}: every run's curve")
    _legend(figure, [label for _, label in drawn])
    figure.savefig(path, dpi=100)


def read_loss_logs(run_dir: str | None) -> dict[str, tuple[list[float], list[float]]]:
    """The CSV logs in a run's folder that have `step` and `loss` columns: name -> (steps, losses)."""
    logs = {}
    for path in sorted(Path(run_dir).glob("*.csv")) if run_dir and Path(run_dir).is_dir() else []:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        if not rows or not {"step", "loss"} <= set(rows[0]):
            continue
        points = [(float(r["step"]), float(r["loss"])) for r in rows if r["step"] and r["loss"]]
        if points:
            logs[path.stem] = ([s for s, _ in points], [loss for _, loss in points])
    return logs


def loss_figure(path: Path, logs: list[dict[str, tuple[list[float], list[float]]]], labels: list[str]) -> None:
    lines = [f"{label}: {name}" for run, label in zip(logs, labels) for name in run]
    figure, axes = _figure(7.0, 4.0 + _legend_height(lines))
    names = list(dict.fromkeys(name for run in logs for name in run))
    colours = [f"C{i % 10}" for i in range(len(labels))]
    for run, label, colour in zip(logs, labels, colours):
        for name, (steps, losses) in run.items():
            axes.plot(steps, losses, color=colour, linestyle=LINE_STYLES[names.index(name) % len(LINE_STYLES)],
                      label=f"{label}: {name}")
    axes.set_xlabel("step")
    axes.set_ylabel("training loss")
    axes.set_title("Every run's loss curve (colour: run, line style: log)")
    _legend(figure, lines)
    figure.savefig(path, dpi=100)


def choose_metrics(entries: list[dict[str, Any]], plot: list[str]) -> tuple[dict[str, list[str]], list[str], list[str]]:
    """What to draw: (bar-chart figures, each a title and the numbers it shows; lists to draw as curves;
    names in `plot` that no run recorded). Each `plot` pattern is one figure; without `plot`, the numbers
    that differ between runs, grouped by the name before their last dot (`padding_fraction.pad` and
    `padding_fraction.concat` share a figure), at most `MAX_METRIC_FIGURES` figures."""
    names = list(dict.fromkeys(name for e in entries for name in e["metrics"]))
    values = {n: [e["metrics"][n] for e in entries if n in e["metrics"]] for n in names}
    curves = [n for n in names if sum(_is_curve(v) for v in values[n]) >= (1 if plot else 2)]
    numbers = [n for n in names if not any(_is_curve(v) for v in values[n])
               and sum(_is_number(v) for v in values[n]) >= 2]
    if plot:
        groups = {p: [n for n in numbers if fnmatch.fnmatchcase(n, p)] for p in plot}
        curves = [n for n in curves if any(fnmatch.fnmatchcase(n, p) for p in plot)]
        unmatched = [p for p in plot if not any(fnmatch.fnmatchcase(n, p) for n in names)]
        return {p: group for p, group in groups.items() if group}, curves, unmatched
    groups: dict[str, list[str]] = {}
    for name in numbers:
        if len({_short(v) for v in values[name]}) > 1:
            groups.setdefault(name.rsplit(".", 1)[0], []).append(name)
    return dict(list(groups.items())[:MAX_METRIC_FIGURES]), curves, []


def write_figures(folder: Path, entries: list[dict[str, Any]], labels: list[str],
                  plot: list[str]) -> tuple[list[str], list[str]]:
    """Every comparison figure, as PNG files in `folder`; returns (file names, plot names nobody recorded)."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.png"):  # from an earlier summary in the same folder
        old.unlink()
    written = []
    if entries:
        duration_figure(folder / "duration.png", entries, labels)
        written.append("duration.png")
    groups, curves, unmatched = choose_metrics(entries, plot)
    for title, names in groups.items():
        metric_figure(path=folder / _file_name("metric", title), title=title, names=names, entries=entries,
                      labels=labels)
        written.append(_file_name("metric", title))
    for name in curves:
        curve_figure(folder / _file_name("curve", name), name, entries, labels)
        written.append(_file_name("curve", name))
    logs = [read_loss_logs(e.get("run_dir")) for e in entries]
    if any(logs):
        kept = [(run, label) for run, label in zip(logs, labels) if run]
        loss_figure(folder / "loss.png", [run for run, _ in kept], [label for _, label in kept])
        written.append("loss.png")
    return written, unmatched


# --- the summary ----------------------------------------------------------------------------------

def summary_markdown(summary: dict[str, Any], labels: list[str]) -> str:
    entries = summary["notebooks"]
    failed = [e for e in entries if e["status"] != "ok"]
    machine = summary["machine"]
    lines = [f"# Runs: {summary['title']}", "",
             f"{len(entries)} notebook run(s), {len(entries) - len(failed)} ok, {len(failed)} failed; "
             f"{summary['wall_s']:.1f} s of wall time, {summary['jobs']} run(s) at a time, on "
             f"{machine['cpu_count']} cores ({machine['platform']}).", ""]
    if summary["stopped"]:
        lines += ["**Stopped** (Ctrl-C or SIGTERM) before every run ended: only the notebooks below ended.", ""]
    grid_names = list(dict.fromkeys(name for e in entries for name in e["parameters"]))
    numbered = any(e.get("run") for e in entries)
    header = (["run"] if numbered else []) + ["notebook"] + grid_names + ["status", "duration (s)", "slowest cell",
                                                                          "executed copy"]
    rows = []
    for entry in entries:
        row = ([str(entry.get("run", ""))] if numbered else []) + [entry["name"]]
        row += [entry["parameters"].get(n, "") for n in grid_names]
        slowest = entry.get("slowest_cell")
        row += [entry["status"], f"{entry['duration_s']:.1f}",
                f"{slowest['duration_s']:.1f} s, cell {slowest['index']} `{slowest['first_line'][:40]}`" if slowest else "",
                f"`{entry['relative_output']}`"]
        rows.append(row)
    lines += _table(header, rows) + [""]
    if failed:
        lines += ["## Failures", ""]
        for entry in failed:
            cell = entry.get("failed_cell") or {}
            where = (f"cell {cell['index']} (`{cell['first_line']}`)" if cell.get("index") is not None
                     else "no cell (the run did not execute it)")
            lines.append(f"- {'run ' + str(entry['run']) + ', ' if numbered else ''}{entry['name']}: {where}: "
                         f"{entry.get('error', '')}")
        lines.append("")
    lines += ["## Metrics", ""]
    for name in dict.fromkeys(e["name"] for e in entries):
        runs = [(e, label) for e, label in zip(entries, labels) if e["name"] == name]
        metrics = list(dict.fromkeys(m for e, _ in runs for m in e["metrics"]))
        lines += [f"### {name}", ""]
        if not metrics:
            lines += ["(no metrics recorded)", ""]
            continue
        columns = [f"run {e['run']}" if numbered else "value" for e, _ in runs]
        lines += _table(["metric"] + columns, [[m] + [e["metrics"].get(m, "") for e, _ in runs] for m in metrics])
        lines.append("")
    if summary["figures"]:
        lines += ["## Figures", ""]
        lines += [f"![{name[:-4]}](figures/{name})" for name in summary["figures"]]
        lines.append("")
    if summary["plot_not_recorded"]:
        lines += [f"`plot` names metrics that no run recorded: {', '.join(summary['plot_not_recorded'])}.", ""]
    return "\n".join(lines)


def write_summary(out: Path, entries: list[dict[str, Any]], wall_s: float, jobs: int, plot: list[str],
                  title: str, stopped: bool = False) -> dict[str, Any]:
    """Write `summary.json`, `summary.md` and `figures/` into `out`; return the summary."""
    for entry in entries:
        try:
            entry["relative_output"] = str(Path(entry["output"]).resolve().relative_to(out.resolve()))
        except ValueError:
            entry["relative_output"] = entry["output"]
    labels = run_labels(entries)
    figures, unmatched = write_figures(out / "figures", entries, labels, plot)
    summary = {"title": title, "wall_s": round(wall_s, 2), "jobs": jobs, "stopped": stopped,
               "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform()},
               "figures": figures, "plot_not_recorded": unmatched, "notebooks": entries}
    write_text_atomically(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    write_text_atomically(out / "summary.md", summary_markdown(summary, labels))
    return summary
