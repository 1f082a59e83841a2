"""Headless runs of the notebooks with papermill, and one summary of what each recorded.

    python -m helpers.runs notebooks/00_environment_and_corpus.ipynb notebooks/01_tokenizer_choice.ipynb --out runs/workshop
    python -m helpers.runs notebooks/01_tokenizer_choice.ipynb --grid grid.yaml --out runs/tokenizers

A grid file maps parameter names to lists of values; every combination is one run, written to
`OUT/<combination>/<notebook>.ipynb`. `OUT/summary.json` lists every run:
`{"notebooks": [{"name", "status": "ok"|"error", "duration_s", "metrics", ...}]}`.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import os
import time
from pathlib import Path
from typing import Any

from .env import read_metrics
from .explore import HEADLESS_ENV
from .errors import UserError, run_cli
from .yaml_file import read_yaml
from .paths import NOTEBOOK_DIR

KERNEL = "pretraining-data"  # registered inside .venv by `make` (see Makefile)


def run_notebook(notebook: Path, output: Path, parameters: dict[str, Any] | None = None,
                 kernel: str = KERNEL, cwd: Path = NOTEBOOK_DIR) -> dict[str, Any]:
    """Execute one notebook with papermill; return its summary entry (never raises on a cell error)."""
    import papermill

    os.environ[HEADLESS_ENV] = "1"  # the kernel inherits it: explorers print their knobs, no widget state
    output.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    status, error = "ok", None
    try:
        papermill.execute_notebook(str(notebook), str(output), parameters=parameters or {},
                                   kernel_name=kernel, cwd=str(cwd), progress_bar=False)
    except papermill.PapermillExecutionError as err:
        status, error = "error", f"{err.ename}: {err.evalue}"
    duration = time.perf_counter() - start
    entry = {"name": notebook.stem, "status": status, "duration_s": round(duration, 2),
             "output": str(output), "parameters": parameters or {},
             "metrics": read_metrics(output) if output.exists() else {}}
    if error:
        entry["error"] = error
    return entry


def notebook_parameters(notebook: Path) -> dict[str, Any]:
    """The names and default values of a notebook's `parameters` cell (read, not executed)."""
    import papermill

    found = papermill.inspect_notebook(str(notebook))
    defaults = {}
    for name, info in found.items():
        try:
            defaults[name] = ast.literal_eval(info["default"])
        except (ValueError, SyntaxError):  # an expression: its type is not known before running
            defaults[name] = None
    return defaults


def _same_kind(value: Any, default: Any) -> bool:
    """Whether `value` may replace `default`: same type, an int where a float is expected, anything for None."""
    if default is None:
        return True
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    return isinstance(value, type(default))


def check_parameters(notebook: Path, parameters: dict[str, Any]) -> None:
    """Refuse a parameter the notebook does not have, or a value of another type than its default."""
    known = notebook_parameters(notebook)
    for name, value in parameters.items():
        if name not in known:
            raise UserError(f"{notebook.name} has no parameter '{name}' (it has: {', '.join(known) or 'none'}); "
                            "fix: use one of those names")
        if not _same_kind(value, known[name]):
            raise UserError(f"{notebook.name}: parameter '{name}' = {value!r} is a {type(value).__name__}, but its "
                            f"default {known[name]!r} is a {type(known[name]).__name__}; fix: give a "
                            f"{type(known[name]).__name__}")


def grid_combinations(grid: dict[str, list]) -> list[dict[str, Any]]:
    """Every combination of a parameter grid, in a stable order."""
    for name, values in grid.items():
        if not isinstance(values, list) or not values:
            raise UserError(f"grid parameter '{name}' must be a non-empty list of values, got {values!r}; "
                            f"fix: write e.g. '{name}: [1, 2]'")
    names = list(grid)
    return [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))]


def load_grid(path: Path) -> dict[str, list]:
    """A grid file (YAML or JSON): a mapping of parameter name to a list of values."""
    grid = read_yaml(path, "grid file", "'sample_chars: [100000, 1000000]'")
    if not isinstance(grid, dict):
        raise UserError(f"{path}: a grid is a mapping of parameter name to a list of values; "
                        "fix: write e.g. 'sample_chars: [100000, 1000000]'")
    return grid


def combination_name(parameters: dict[str, Any]) -> str:
    """A folder name for one combination, e.g. `tokenizer=llama3,sample_chars=1000`."""
    text = ",".join(f"{k}={v}" for k, v in parameters.items()) or "default"
    return "".join(c if c.isalnum() or c in "=,.-_" else "_" for c in text)


def run_all(notebooks: list[Path], out: Path, combinations: list[dict[str, Any]] | None = None) -> dict:
    """Run every notebook (for every combination) and write `out/summary.json`.

    Every combination is checked against every notebook's parameters before anything runs."""
    combinations = combinations or [{}]
    for notebook in notebooks:
        for parameters in combinations:
            check_parameters(notebook, parameters)
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for parameters in combinations:
        folder = out if parameters == {} else out / combination_name(parameters)
        for notebook in notebooks:
            entry = run_notebook(notebook, folder / notebook.name, parameters)
            print(f"{entry['status']:<5} {entry['duration_s']:7.1f} s  {notebook.name}"
                  + (f"  {combination_name(parameters)}" if parameters else "")
                  + (f"  ({entry['error']})" if "error" in entry else ""), flush=True)
            entries.append(entry)
    summary = {"notebooks": entries}
    tmp = out / "summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, out / "summary.json")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.runs", description="Run notebooks headless with papermill.")
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="output folder (executed notebooks, summary.json)")
    parser.add_argument("--grid", type=Path, help="YAML/JSON mapping of parameter name to a list of values")
    args = parser.parse_args(argv)
    for notebook in args.notebooks:
        if not notebook.exists() or notebook.suffix != ".ipynb":
            raise UserError(f"{notebook}: not a notebook file; fix: pass paths such as notebooks/00_*.ipynb")
    combinations = grid_combinations(load_grid(args.grid)) if args.grid else None
    summary = run_all([n.resolve() for n in args.notebooks], args.out, combinations)
    failed = [e["name"] for e in summary["notebooks"] if e["status"] != "ok"]
    print(f"summary: {args.out / 'summary.json'} ({len(summary['notebooks']) - len(failed)} ok, {len(failed)} failed)")
    return 1 if failed else 0


if __name__ == "__main__":
    run_cli(main)
