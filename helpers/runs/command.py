"""Headless runs of the notebooks with papermill: one notebook over a grid of parameters, or the workshop.

    python -m helpers.runs notebooks/05_packing_visualization.ipynb --grid notebooks/grids/05_capacity.yaml --out runs/capacity
    python -m helpers.runs notebooks/0*.ipynb --out runs/workshop          # every notebook once, in order
    python -m helpers.runs fit-mix runs/swarm/summary.json --target docs   # a mixing law fitted to a grid's runs

A grid file (YAML or JSON) maps each notebook parameter to a list of values, and every combination of those
lists is one run; `sets:` adds explicit runs, `jobs:` caps the runs at once and `plot:` names the metrics to
draw. Every run is checked against the notebook's `parameters` cell before any runs. One run applies its
parameters to each notebook given, in order; runs go `--jobs` at a time, each in a process of its own, and
every executed copy is kept with its metrics under `OUT/` (a parameter named `run_dir` points into the run's
own folder). A failing cell stops its notebook, not the others; `OUT/summary.json`, `OUT/summary.md` and
`OUT/figures/` (`helpers.runs.report`) sum the runs up, and the exit status is 1 when any notebook failed.
Stopped (Ctrl-C, SIGTERM), it stops every run, summarises the notebooks that ended, and exits 130 or 143.
The grid file's keys, where each run's files go and how the cores are shared: docs/runs.md. `fit-mix` fits a
mixing law to a swarm of such runs, each on another mixture of domains, and proposes one (`helpers.runs.fit_mix`).
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..common.cli import CommandParser
from ..common.errors import UserError
from ..common.files import write_text_atomically
from ..common.headless import HEADLESS_ENV
from ..common.paths import NOTEBOOK_DIR, REPO_ROOT
from ..common.yaml_file import read_yaml
from ..kernel import KERNEL_NAME
from ..workshop.env import METRICS_FILE_ENV, metrics_file, read_metrics
from .papermill_loader import load_papermill

KERNEL = KERNEL_NAME  # registered inside .venv by `make` (see Makefile)
GRID_KEYS = ("sets", "jobs", "plot")  # the keys of a grid file that are not notebook parameters
RUN_DIR_PARAMETER = "run_dir"
# fastokens sizes its encoding threads by its own variable, not Rayon's
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS", "RAYON_RS_NUM_CPUS",
                    "FASTOKENS_BPE_THREADS")
# jupyter_client gives a new kernel free TCP ports it found by binding and releasing them; another process starting
# at the same moment can take one first, and the kernel dies before it answers. Nothing ran yet: start it again.
KERNEL_START_FAILURE = "Kernel died before replying to kernel_info"
KERNEL_START_TRIES = 3
STOP_GRACE_S = 30  # how long a stopped run may take to shut its kernel down before it is killed
GRID_EXAMPLE = "'capacity: [512, 2048]'"


# --- one notebook ---------------------------------------------------------------------------------

def run_notebook(notebook: Path, output: Path, parameters: dict[str, Any] | None = None,
                 kernel: str = KERNEL, cwd: Path = NOTEBOOK_DIR) -> dict[str, Any]:
    """Execute one notebook with papermill; return its summary entry (never raises on a cell error)."""
    papermill = load_papermill()

    os.environ[HEADLESS_ENV] = "1"  # the kernel inherits it: explorers print their knobs, no widget state
    output.parent.mkdir(parents=True, exist_ok=True)
    metrics = metrics_file(output)
    metrics.unlink(missing_ok=True)
    os.environ[METRICS_FILE_ENV] = str(metrics.resolve())  # the kernel inherits it: where record() writes
    start = time.perf_counter()
    failure = None
    try:
        for attempt in range(1, KERNEL_START_TRIES + 1):
            try:
                papermill.execute_notebook(str(notebook), str(output), parameters=parameters or {},
                                           kernel_name=kernel, cwd=str(cwd), progress_bar=False)
                break
            except RuntimeError as err:  # the kernel died at its start, before any cell ran: start it again
                if KERNEL_START_FAILURE not in str(err) or attempt == KERNEL_START_TRIES:
                    raise
                print(f"{notebook.name}: its kernel died while starting ({err}); starting it again", file=sys.stderr)
    except papermill.PapermillExecutionError as err:
        failure = err
    finally:
        del os.environ[METRICS_FILE_ENV]
    duration = time.perf_counter() - start
    entry = {"name": notebook.stem, "status": "ok" if failure is None else "error",
             "duration_s": round(duration, 2), "output": str(output), "parameters": parameters or {},
             "metrics": read_metrics(output)}
    if output.exists():
        entry["slowest_cell"] = slowest_cell(output)
    if failure is not None:
        entry["error"] = f"{failure.ename}: {failure.evalue}"
        entry["failed_cell"] = failed_cell(notebook, failure, injected=bool(parameters))
    return entry


def first_line(source: str) -> str:
    """The line that tells a cell apart: its first line of code (comments such as `# a note`
    skipped), or its first line when it has only comments."""
    lines = [line.strip() for line in source.splitlines() if line.strip()]
    code = [line for line in lines if not line.startswith("#")]
    return (code or lines or [""])[0]


def failed_cell(notebook: Path, failure, injected: bool) -> dict[str, Any]:
    """Where a papermill run failed: the cell's index in the notebook file (papermill counts its injected
    parameters cell too), its execution count and its first line."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    index = failure.cell_index - (1 if injected else 0)
    if not (0 <= index < len(cells) and "".join(cells[index]["source"]) == failure.source):
        matches = [i for i, cell in enumerate(cells) if "".join(cell["source"]) == failure.source]
        index = matches[0] if matches else None
    return {"index": index, "execution_count": failure.exec_count, "first_line": first_line(failure.source)}


def slowest_cell(executed: Path) -> dict[str, Any] | None:
    """The cell that took longest in an executed copy (papermill times every cell): its index in the
    notebook file (not counting the cells papermill adds), first line and seconds."""
    added = {"injected-parameters", "papermill-error-cell-tag"}
    cells = [c for c in json.loads(executed.read_text(encoding="utf-8"))["cells"]
             if not added & set(c.get("metadata", {}).get("tags", []))]
    timed = [(c["metadata"].get("papermill", {}).get("duration") or 0.0, i) for i, c in enumerate(cells)
             if c["cell_type"] == "code"]
    if not timed:
        return None
    duration, index = max(timed)
    return {"index": index, "first_line": first_line("".join(cells[index]["source"])), "duration_s": round(duration, 2)}


def describe_failure(entry: dict[str, Any]) -> str:
    """One line: which cell of which notebook failed, and with what."""
    cell = entry.get("failed_cell")
    if not cell:
        return entry.get("error", "")
    where = f"cell {cell['index']}" if cell["index"] is not None else "a cell"
    return f"{where} `{cell['first_line']}`: {entry['error']}"


# --- parameters and grids -------------------------------------------------------------------------

def notebook_parameters(notebook: Path) -> dict[str, Any]:
    """The names and default values of a notebook's `parameters` cell (read, not executed)."""
    papermill = load_papermill()

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


@dataclass(frozen=True)
class Grid:
    """A grid file, read: the parameter sets to run, and the file's settings for running them."""
    sets: list[dict[str, Any]] = field(default_factory=lambda: [{}])
    jobs: int | None = None
    plot: list[str] = field(default_factory=list)


def grid_combinations(grid: dict[str, list], where: str = "grid") -> list[dict[str, Any]]:
    """Every combination of a mapping of parameter name to list of values, in a stable order."""
    for name, values in grid.items():
        if not isinstance(values, list) or not values:
            raise UserError(f"{where}: parameter '{name}' must be a non-empty list of values, got {values!r}; "
                            f"fix: write e.g. '{name}: [1, 2]'")
    names = list(grid)
    return [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))]


def parse_grid(content: Any, where: str) -> Grid:
    """The runs a grid file's content asks for: the product of its lists, times its explicit `sets`."""
    if not isinstance(content, dict):
        raise UserError(f"{where}: a grid is a mapping of parameter name to a list of values; fix: write e.g. "
                        f"{GRID_EXAMPLE}")
    content = dict(content)
    sets = content.pop("sets", [{}])
    jobs = content.pop("jobs", None)
    plot = content.pop("plot", [])
    if not isinstance(sets, list) or not sets or not all(isinstance(s, dict) for s in sets):
        raise UserError(f"{where}: 'sets' must be a non-empty list of mappings, one per run; fix: write e.g. "
                        "'sets: [{capacity: 512}, {capacity: 2048, overlong: drop}]'")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise UserError(f"{where}: 'jobs' must be a whole number of at least 1, got {jobs!r}; fix: write e.g. 'jobs: 1'")
    if isinstance(plot, str):
        plot = [plot]
    if not isinstance(plot, list) or not all(isinstance(p, str) for p in plot):
        raise UserError(f"{where}: 'plot' must be a list of metric names, got {plot!r}; fix: write e.g. "
                        "'plot: [padding_fraction.pad]'")
    combinations = [{**combination, **chosen} for combination in grid_combinations(content, where) for chosen in sets]
    return Grid(sets=combinations, jobs=jobs, plot=plot)


def load_grid(path: Path) -> Grid:
    """A grid file (YAML or JSON), read and expanded into the runs it asks for."""
    return parse_grid(read_yaml(path, "grid file", GRID_EXAMPLE), str(path))


def _compact(value: Any) -> str:
    if isinstance(value, dict):
        return ",".join(f"{k}={_compact(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "-".join(_compact(v) for v in value)
    return str(value)


def combination_name(parameters: dict[str, Any]) -> str:
    """A folder name for one combination, e.g. `capacity=512,overlong=split` (at most 80 characters)."""
    text = ",".join(f"{k}={_compact(v)}" for k, v in parameters.items()) or "default"
    return "".join(c if c.isalnum() or c in "=,.-_" else "_" for c in text)[:80]


def default_jobs() -> int:
    """Runs at once by default: a quarter of the cores (1 on a 2-core laptop). A notebook's tokenizers,
    preprocessing workers and torch use several cores each; more runs at once would only queue for them."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // 4)


# --- many runs ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Job:
    """One run: a set of parameters applied to each notebook in turn, in a folder of its own."""
    number: int
    notebooks: tuple[Path, ...]
    parameters: dict[str, Any]
    folder: Path

    def plan(self) -> list[dict[str, Any]]:
        """Per notebook: its path, where its executed copy goes and the parameters it is given."""
        steps = []
        for notebook in self.notebooks:
            given = dict(self.parameters)
            if RUN_DIR_PARAMETER in notebook_parameters(notebook) and RUN_DIR_PARAMETER not in given:
                given[RUN_DIR_PARAMETER] = str((self.folder / notebook.stem).resolve())
            steps.append({"notebook": str(notebook), "output": str(self.folder / notebook.name),
                          "parameters": given})
        return steps


def run_job_file(spec_path: Path) -> int:
    """Inside a run's own process: execute the notebooks of `spec_path` in order, rewriting the results
    file after each, so the parent can report every notebook as soon as it ends."""
    from ..common import stop_signals

    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    stop_signals.die_with_parent(spec["parent_pid"], signal.SIGTERM)
    results = Path(spec["results"])
    entries = []
    for step in spec["steps"]:
        entry = run_notebook(Path(step["notebook"]), Path(step["output"]), step["parameters"], kernel=spec["kernel"])
        entry["parameters"] = spec["grid_parameters"]
        if step["parameters"].get(RUN_DIR_PARAMETER) and RUN_DIR_PARAMETER not in spec["grid_parameters"]:
            entry["run_dir"] = step["parameters"][RUN_DIR_PARAMETER]
        entry["run"] = spec["number"]
        entries.append(entry)
        write_text_atomically(results, json.dumps(entries, indent=1) + "\n")
    return 0


class Runner:
    """Starts each job as `python -m helpers.runs --job SPEC` in a process of its own, `jobs` at a time,
    and reports every notebook as it ends. Stopped (Ctrl-C, SIGTERM), it stops its runs and waits for them."""

    def __init__(self, jobs: list[Job], parallel: int, kernel: str):
        self.pending = list(jobs)
        self.parallel = parallel
        self.kernel = kernel
        self.running: dict[int, tuple[Job, subprocess.Popen, Path]] = {}
        self.entries: dict[int, list[dict[str, Any]]] = {}

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ, **{HEADLESS_ENV: "1"})
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        if self.parallel > 1:  # share the cores between the runs instead of each taking all of them
            threads = str(max(1, (os.cpu_count() or 1) // self.parallel))
            for name in THREAD_VARIABLES:
                env.setdefault(name, threads)
        return env

    def _start(self, job: Job) -> None:
        job.folder.mkdir(parents=True, exist_ok=True)
        results = job.folder / f".run-{job.number}.results.json"
        results.unlink(missing_ok=True)
        spec = {"steps": job.plan(), "grid_parameters": job.parameters, "number": job.number,
                "kernel": self.kernel, "results": str(results), "parent_pid": os.getpid()}
        spec_path = job.folder / f".run-{job.number}.spec.json"
        spec_path.write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")
        log = open(job.folder / "run.log", "w", encoding="utf-8")
        with log:
            process = subprocess.Popen([sys.executable, "-m", "helpers.runs", "--job", str(spec_path)],
                                       stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env=self._environment())
        self.running[job.number] = (job, process, results)
        self.entries[job.number] = []

    def _collect(self, number: int, finished: bool) -> list[dict[str, Any]]:
        """The entries of a run not reported yet; for a process that ended without reporting a notebook,
        an error entry that says so."""
        job, process, results = self.running[number]
        try:
            done = json.loads(results.read_text(encoding="utf-8")) if results.exists() else []
        except json.JSONDecodeError:  # replaced while read: the next poll sees it whole
            done = self.entries[number]
        new = done[len(self.entries[number]):]
        self.entries[number] = done
        if finished:
            for notebook in job.notebooks[len(done):]:
                entry = {"name": notebook.stem, "status": "error", "duration_s": 0.0,
                         "output": str(job.folder / notebook.name), "parameters": job.parameters, "metrics": {},
                         "run": number, "error": f"its process ended (exit status {process.returncode}) before "
                                                 f"this notebook ran; see {job.folder / 'run.log'}"}
                self.entries[number].append(entry)
                new.append(entry)
            results.unlink(missing_ok=True)
            Path(str(results).replace(".results.json", ".spec.json")).unlink(missing_ok=True)
        return new

    def run(self, report) -> list[dict[str, Any]]:
        """Run every job; call `report(entry)` for each notebook as it ends; return all entries in job order."""
        try:
            while self.pending or self.running:
                while self.pending and len(self.running) < self.parallel:
                    self._start(self.pending.pop(0))
                time.sleep(0.2)
                for number in list(self.running):
                    finished = self.running[number][1].poll() is not None
                    for entry in self._collect(number, finished):
                        report(entry)
                    if finished:
                        del self.running[number]
        finally:
            self._stop_all()
        return self.ended()

    def ended(self) -> list[dict[str, Any]]:
        """The entries of every notebook that has ended so far, in job order."""
        return [entry for number in sorted(self.entries) for entry in self.entries[number]]

    def _stop_all(self) -> None:
        """Stop runs still going (only after Ctrl-C or SIGTERM): SIGTERM, a grace period, then SIGKILL."""
        for _, process, _ in self.running.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for _, process, _ in self.running.values():
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def plan_jobs(notebooks: list[Path], out: Path, combinations: list[dict[str, Any]]) -> list[Job]:
    """One job per combination, numbered from 1, in a folder named after the parameters that differ between
    combinations (`03-capacity=2048`), or after all it sets when there is one; without a grid, one job in
    `out` itself."""
    if combinations == [{}]:
        return [Job(0, tuple(notebooks), {}, out)]
    width = len(str(len(combinations)))
    names = list(dict.fromkeys(name for c in combinations for name in c))
    varying = [n for n in names if len({json.dumps(c.get(n), sort_keys=True) for c in combinations}) > 1]
    shown = varying or names  # one combination: name it by all it sets (none of it is the notebook's default)
    return [Job(i, tuple(notebooks), parameters,
                out / f"{i:0{width}d}-{combination_name({n: parameters[n] for n in shown if n in parameters})}")
            for i, parameters in enumerate(combinations, start=1)]


def print_entry(entry: dict[str, Any], label: str = "") -> None:
    line = f"{entry['status']:<5} {entry['duration_s']:7.1f} s  {Path(entry['output']).name}"
    if label:
        line += f"  [{label}]"
    if entry["status"] != "ok":
        line += f"  ({describe_failure(entry)})"
    print(line, flush=True)


def run_all(notebooks: list[Path], out: Path, combinations: list[dict[str, Any]] | None = None,
            jobs: int | None = None, plot: list[str] | None = None, kernel: str = KERNEL,
            title: str | None = None) -> dict:
    """Run every notebook for every combination, `jobs` runs at once, and write the summary into `out`.

    Every combination is checked against every notebook's parameters before anything runs."""
    from .report import write_summary

    combinations = combinations or [{}]
    for notebook in notebooks:
        for parameters in combinations:
            check_parameters(notebook, parameters)
    out.mkdir(parents=True, exist_ok=True)
    planned = plan_jobs(notebooks, out, combinations)
    parallel = max(1, min(jobs or default_jobs(), len(planned)))
    print(f"{len(planned)} run(s) of {len(notebooks)} notebook(s), {parallel} at a time; executed copies "
          f"and logs under {out}", flush=True)
    start = time.perf_counter()
    runner = Runner(planned, parallel, kernel)
    settings = dict(jobs=parallel, plot=plot or [], title=title or ", ".join(n.stem for n in notebooks))
    labels = {job.number: job.folder.name.split("-", 1)[1] if job.number else "" for job in planned}
    try:
        entries = runner.run(lambda entry: print_entry(entry, labels[entry["run"]]))
    except BaseException:  # Ctrl-C or SIGTERM: the runs are stopped; summarise the notebooks that ended
        write_summary(out, runner.ended(), wall_s=time.perf_counter() - start, stopped=True, **settings)
        raise
    return write_summary(out, entries, wall_s=time.perf_counter() - start, **settings)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["fit-mix"]:
        from .fit_mix import main as fit_mix_main

        return fit_mix_main(argv[1:])
    parser = CommandParser(prog="python -m helpers.runs",
                                     description="Run notebooks headless with papermill, over a grid of parameters.")
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, help="output folder (executed notebooks, logs, summary, figures)")
    parser.add_argument("--grid", type=Path, help="YAML/JSON grid file (see `python -m pydoc helpers.runs`)")
    parser.add_argument("--jobs", type=int,
                        help=f"runs at once (default: a quarter of the cores, here {default_jobs()}; "
                                                 "a grid's own 'jobs' is a ceiling)")
    parser.add_argument("--kernel", default=KERNEL, help=f"Jupyter kernel to run the notebooks with (default {KERNEL})")
    parser.add_argument("--job", type=Path, help=argparse.SUPPRESS)  # one run, inside the process a run starts
    args = parser.parse_args(argv)
    if args.job:
        return run_job_file(args.job)
    if not args.notebooks or args.out is None:
        raise UserError("give one or more notebooks and --out; fix: e.g. 'python -m helpers.runs "
                        "notebooks/05_packing_visualization.ipynb --out runs/05'")
    for notebook in args.notebooks:
        if not notebook.exists() or notebook.suffix != ".ipynb":
            raise UserError(f"{notebook}: not a notebook file; fix: pass paths such as notebooks/00_*.ipynb")
    if args.jobs is not None and args.jobs < 1:
        raise UserError(f"--jobs {args.jobs}: at least one run must go at a time; fix: give --jobs 1 or more")
    grid = load_grid(args.grid) if args.grid else Grid()
    jobs = min(filter(None, [args.jobs or default_jobs(), grid.jobs]))
    stems = [n.stem for n in args.notebooks]
    title = (", ".join(stems) if len(stems) <= 2 else f"{len(stems)} notebooks, {stems[0]} to {stems[-1]}")
    title += f" over {args.grid.name}" if args.grid else ""
    summary = run_all([n.resolve() for n in args.notebooks], args.out, grid.sets, jobs=jobs, plot=grid.plot,
                      kernel=args.kernel, title=title)
    failed = [e for e in summary["notebooks"] if e["status"] != "ok"]
    print(f"summary: {args.out / 'summary.md'} and summary.json ({len(summary['notebooks']) - len(failed)} ok, "
          f"{len(failed)} failed)")
    return 1 if failed else 0

