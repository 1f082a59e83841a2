"""Batch runs of notebooks (`python -m helpers.runs`): grids, parallel runs, failures, the summary and its figures.

Tiny probe notebooks keep these fast; the example grids in notebooks/grids/ are only checked against
their notebooks' parameters here (running them is `make workshop`'s and a person's business).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from helpers.common.errors import UserError
from helpers.common.paths import NOTEBOOK_DIR, REPO_ROOT
from helpers.runs.command import check_parameters, combination_name, first_line, load_grid, parse_grid, run_all
from helpers.runs.report import choose_metrics, run_labels, write_summary

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def write_notebook(path: Path, parameters: str, *cells: str) -> Path:
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(f"# {path.stem}"),
        nbformat.v4.new_code_cell(parameters, metadata={"tags": ["parameters"]}),
        *(nbformat.v4.new_code_cell(source) for source in cells)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


@pytest.fixture
def probe_notebook(tmp_path):
    """Records 2·x and a curve; fails in its fourth cell when asked to; writes a training log into run_dir."""
    return write_notebook(
        tmp_path / "probe.ipynb", "x = 1\nfail = False\nrun_dir = 'probe-files'",
        "from helpers.workshop.env import record\nimport pathlib",
        "pathlib.Path(run_dir).mkdir(parents=True, exist_ok=True)\n"
        "pathlib.Path(run_dir, 'train.csv').write_text(f'step,loss\\n1,{x + 2}\\n2,{x + 1}\\n')",
        "assert not fail, 'asked to fail'\nrecord('double', 2 * x)\nrecord('curve', [x, x * x, x ** 3])")


def run_module(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "helpers.runs", *args], capture_output=True, text=True, cwd=REPO_ROOT)


# --- grid files (nothing runs) ---------------------------------------------------------------------

def test_lists_expand_to_their_product_in_a_stable_order():
    grid = parse_grid({"x": [1, 5], "fail": [False, True]}, "grid.yaml")
    assert grid.sets == [{"x": 1, "fail": False}, {"x": 1, "fail": True}, {"x": 5, "fail": False}, {"x": 5, "fail": True}]
    assert grid.jobs is None and grid.plot == []


def test_explicit_sets_alone_and_times_the_product():
    sets = [{"x": 1}, {"x": 2, "fail": True}]
    assert parse_grid({"sets": sets}, "g").sets == sets
    both = parse_grid({"name": ["a", "b"], "sets": sets, "jobs": 1, "plot": "double"}, "g")
    assert both.sets == [{"name": "a", "x": 1}, {"name": "a", "x": 2, "fail": True},
                         {"name": "b", "x": 1}, {"name": "b", "x": 2, "fail": True}]
    assert both.jobs == 1 and both.plot == ["double"]


def test_a_list_valued_parameter_is_a_list_of_lists():
    grid = parse_grid({"weights": [[0.5, 0.5], [0.2, 0.8]]}, "g")
    assert grid.sets == [{"weights": [0.5, 0.5]}, {"weights": [0.2, 0.8]}]
    assert combination_name(grid.sets[0]) == "weights=0.5-0.5"
    assert combination_name({"model_overrides": {"num_hidden_layers": 2}}) == "model_overrides=num_hidden_layers=2"


@pytest.mark.parametrize("content, words", [
    ({"sets": []}, ("'sets'", "fix:")),
    ({"sets": [1, 2]}, ("'sets'", "mappings")),
    ({"jobs": 0}, ("'jobs'", "fix:")),
    ({"jobs": "2"}, ("'jobs'", "fix:")),
    ({"plot": [1]}, ("'plot'", "fix:")),
    ({"x": []}, ("'x'", "non-empty list")),
    ([{"x": 1}], ("mapping",)),
])
def test_a_malformed_grid_says_what_and_how_to_fix_it(content, words):
    with pytest.raises(UserError) as err:
        parse_grid(content, "grid.yaml")
    assert all(word in str(err.value) for word in words) and str(err.value).startswith("grid.yaml: ")


@pytest.mark.parametrize("grid_text, words", [
    ("steps: [1, 2]\n", ("probe.ipynb has no parameter 'steps'", "fix:")),
    ("x: [1, 'many']\n", ("'x'", "str", "int", "fix:")),
    ("x: [1]\nsets:\n  - {fail: true}\n  - {fial: true}\n", ("no parameter 'fial'",)),
])
def test_a_grid_the_notebook_cannot_take_is_refused_before_anything_runs(tmp_path, probe_notebook, grid_text, words):
    grid = tmp_path / "grid.yaml"
    grid.write_text(grid_text)
    out = tmp_path / "runs"
    result = run_module(str(probe_notebook), "--grid", str(grid), "--out", str(out))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert all(word in result.stderr for word in words), result.stderr
    assert not out.exists()  # nothing ran: no folder, no executed copy, no summary


def test_bad_grid_is_one_line(tmp_path, probe_notebook):
    grid = tmp_path / "grid.yaml"
    grid.write_text("x: 3\n")
    result = run_module(str(probe_notebook), "--grid", str(grid), "--out", str(tmp_path / "o"))
    assert result.returncode == 2 and "must be a non-empty list" in result.stderr and "Traceback" not in result.stderr


def _notebook_of(grid: Path) -> Path:
    """The notebook a grid's own usage line runs (`python -m helpers.runs notebooks/X.ipynb --grid
    notebooks/grids/<it>`), else the one its number names: notebooks/grids/05_capacity.yaml runs notebooks/05_*.ipynb."""
    usage = re.search(rf"helpers\.runs notebooks/(\S+\.ipynb) --grid notebooks/grids/{re.escape(grid.name)}",
                      grid.read_text(encoding="utf-8"))
    if usage:
        return NOTEBOOK_DIR / usage.group(1)
    matches = sorted(NOTEBOOK_DIR.glob(f"{grid.name[:2]}_*.ipynb"))
    assert len(matches) == 1, f"{grid.name}: its name should start with the number of one notebook"
    return matches[0]


@pytest.mark.parametrize("grid", sorted((NOTEBOOK_DIR / "grids").glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_grid_fits_its_notebook(grid):
    expanded = load_grid(grid)
    assert len(expanded.sets) >= 2, f"{grid.name}: a grid compares runs"
    for parameters in expanded.sets:
        check_parameters(_notebook_of(grid), parameters)


def test_the_example_grids_cover_the_workshop():
    names = {p.stem for p in (NOTEBOOK_DIR / "grids").glob("*.yaml")}
    assert {"01_tokenizers", "04_blend_weights", "05_capacity", "06_model_size", "06_h100"} <= names
    assert load_grid(NOTEBOOK_DIR / "grids" / "06_h100.yaml").jobs == 1  # its runs share one GPU
    assert all(s["preset"] == "h100" for s in load_grid(NOTEBOOK_DIR / "grids" / "06_h100.yaml").sets)


# --- the summary, from entries (nothing runs) -------------------------------------------------------

def _entry(name, parameters, metrics, status="ok", run=0, **extra):
    return {"name": name, "status": status, "duration_s": 1.5, "output": f"/x/{name}.ipynb",
            "parameters": parameters, "metrics": metrics, "run": run, **extra}


def test_labels_name_only_what_differs_between_runs():
    entries = [_entry("05", {"capacity": c, "seed": 0}, {}) for c in (512, 2048)]
    assert run_labels(entries) == ["capacity=512", "capacity=2048"]
    assert first_line("# NBVAL_CHECK_OUTPUT\n\nrows = pack(x)\n") == "rows = pack(x)"
    assert first_line("# only a comment") == "# only a comment"
    workshop = [_entry("00_env", {}, {}), _entry("01_tok", {}, {})]
    assert run_labels(workshop) == ["00_env", "01_tok"]
    sizes = [_entry("06", {"model_overrides": {"hidden_size": h, "num_hidden_layers": 2}}, {}) for h in (96, 192)]
    assert run_labels(sizes) == ["hidden_size=96", "hidden_size=192"]  # a mapping's keys, those that differ
    assert run_labels([_entry("06", {"tokenizer": "bytes"}, {})]) == ["tokenizer=bytes"]  # one run: what it set


def test_a_one_point_grid_names_its_run_by_what_it_sets(tmp_path):
    from helpers.runs.command import plan_jobs

    (job,) = plan_jobs([tmp_path / "06.ipynb"], tmp_path / "out", [{"tokenizer": "bytes"}])
    assert job.folder.name == "1-tokenizer=bytes"


def test_metrics_drawn_are_the_ones_that_differ_or_the_ones_asked_for():
    entries = [_entry("n", {"x": i}, {"same": 1, "varies": i, "curve": [i, i + 1], "word": "a"}) for i in (1, 2)]
    assert choose_metrics(entries, []) == ({"varies": ["varies"]}, ["curve"], [])
    assert choose_metrics(entries, ["s*", "missing"]) == ({"s*": ["same"]}, [], ["missing"])
    assert choose_metrics(entries[:1], []) == ({}, [], [])  # one run: nothing to compare
    assert choose_metrics(entries[:1], ["curve"]) == ({}, ["curve"], [])  # unless asked for
    family = [_entry("n", {"c": i}, {"pad.a": i, "pad.b": 2 * i, "pad.c": 3}) for i in (1, 2)]
    assert choose_metrics(family, []) == ({"pad": ["pad.a", "pad.b"]}, [], [])
    assert choose_metrics(family, ["pad.*"]) == ({"pad.*": ["pad.a", "pad.b", "pad.c"]}, [], [])


def test_a_workshop_summary_has_a_metrics_section_per_notebook(tmp_path):
    entries = [_entry("00_environment", {}, {"corpus_mb.total": 15.0}),
               _entry("05_packing", {}, {"rows.pad": 2907}, status="error", error="ValueError: bad",
                      failed_cell={"index": 7, "execution_count": 4, "first_line": "rows = pack(lengths)"})]
    summary = write_summary(tmp_path, entries, wall_s=3.0, jobs=1, plot=[], title="workshop")
    text = (tmp_path / "summary.md").read_text()
    assert "### 00_environment" in text and "| corpus_mb.total | 15 |" in text
    assert "### 05_packing" in text and "| rows.pad | 2907 |" in text
    assert "05_packing: cell 7 (`rows = pack(lengths)`): ValueError: bad" in text
    assert summary["figures"] == ["duration.png"]
    assert (tmp_path / "figures" / "duration.png").read_bytes().startswith(PNG_MAGIC)
    assert json.loads((tmp_path / "summary.json").read_text())["notebooks"][1]["status"] == "error"


# --- runs (each executes tiny notebooks) ------------------------------------------------------------

@pytest.mark.notebook
def test_a_grid_runs_every_set_reports_failures_with_their_cell_and_summarises(tmp_path, probe_notebook):
    grid = tmp_path / "grid.yaml"
    grid.write_text("x: [1, 5]\nsets:\n  - {fail: false}\n  - {fail: true}\n")
    out = tmp_path / "runs"
    result = run_module(str(probe_notebook), "--grid", str(grid), "--out", str(out), "--jobs", "2")
    assert result.returncode == 1, result.stderr  # two of the four runs were asked to fail
    entries = json.loads((out / "summary.json").read_text())["notebooks"]
    assert [e["status"] for e in entries] == ["ok", "error", "ok", "error"]  # the failures stopped nothing
    assert [e["metrics"].get("double") for e in entries] == [2, None, 10, None]
    assert [e["parameters"] for e in entries] == [{"x": 1, "fail": False}, {"x": 1, "fail": True},
                                                  {"x": 5, "fail": False}, {"x": 5, "fail": True}]
    assert entries[1]["failed_cell"] == {"index": 4, "execution_count": 5,
                                         "first_line": "assert not fail, 'asked to fail'"}
    assert "AssertionError: asked to fail" in entries[1]["error"]
    assert "cell 4 `assert not fail, 'asked to fail'`: AssertionError: asked to fail" in result.stdout
    for entry in entries:  # every executed copy is kept, each in a folder of its own
        assert Path(entry["output"]).exists() and Path(entry["output"]).parent.parent == out
        assert Path(entry["run_dir"], "train.csv").exists()  # run_dir pointed into the run's folder
    assert len({Path(e["output"]).parent for e in entries}) == 4

    text = (out / "summary.md").read_text()
    assert "| run | notebook | x | fail | status | duration (s) | slowest cell | executed copy |" in text
    assert "| 1 | probe | 1 | False | ok |" in text and "| 4 | probe | 5 | True | error |" in text
    assert "- run 2, probe: cell 4 (`assert not fail, 'asked to fail'`): AssertionError: asked to fail" in text
    assert "| double | 2 |  | 10 |  |" in text
    for figure in ("duration.png", "metric-double.png", "curve-curve.png", "loss.png"):
        assert (out / "figures" / figure).read_bytes().startswith(PNG_MAGIC), figure
        assert f"(figures/{figure})" in text


@pytest.mark.notebook
def test_runs_go_in_parallel_when_jobs_allow(tmp_path):
    """Each run waits for the other to have started: only two at once can both succeed (one at a time, the
    first would wait in vain and fail)."""
    notebook = write_notebook(
        tmp_path / "meet.ipynb", f"me = 'a'\nother = 'b'\nfolder = {str(tmp_path)!r}\nwait_s = 60.0",
        "import pathlib, time\npathlib.Path(folder, me).touch()\ndeadline = time.monotonic() + wait_s\n"
        "while not pathlib.Path(folder, other).exists() and time.monotonic() < deadline:\n    time.sleep(0.05)\n"
        "time.sleep(0.5)  # so that this cell is the slowest in both runs, whichever started first\n"
        "assert pathlib.Path(folder, other).exists(), 'the other run never started'")
    summary = run_all([notebook], tmp_path / "together", [{"me": "a", "other": "b"}, {"me": "b", "other": "a"}], jobs=2)
    assert [e["status"] for e in summary["notebooks"]] == ["ok", "ok"]
    assert summary["jobs"] == 2
    for entry in summary["notebooks"]:  # the cell that waits, not papermill's injected one
        assert (entry["slowest_cell"]["index"], entry["slowest_cell"]["first_line"]) == (2, "import pathlib, time")
    alone = run_all([notebook], tmp_path / "alone", [{"me": "c", "other": "d", "wait_s": 1.0},
                                                     {"me": "d", "other": "c", "wait_s": 1.0}], jobs=1)
    assert alone["notebooks"][0]["status"] == "error" and "never started" in alone["notebooks"][0]["error"]


@pytest.mark.notebook
def test_without_a_grid_notebooks_run_in_order_and_a_dead_run_is_reported(tmp_path, probe_notebook):
    """As `make workshop` runs them: one run, the notebooks in the order given, copies in OUT itself. A
    notebook that kills the process running it loses that run's later notebooks, which say so."""
    kills = write_notebook(tmp_path / "kills.ipynb", "x = 1",
                           "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)")
    after = write_notebook(tmp_path / "after.ipynb", "x = 1", "print(x)")
    summary = run_all([probe_notebook, kills, after], tmp_path / "out")
    entries = summary["notebooks"]
    assert [(e["name"], e["status"]) for e in entries] == [("probe", "ok"), ("kills", "error"), ("after", "error")]
    assert entries[0]["metrics"]["double"] == 2 and (tmp_path / "out" / "probe.ipynb").exists()
    assert all("ended" in e["error"] and "run.log" in e["error"] for e in entries[1:])
    text = (tmp_path / "out" / "summary.md").read_text()
    assert "### probe" in text and "| double | 2 |" in text


@pytest.mark.notebook
def test_a_stopped_grid_stops_its_runs_and_summarises_what_ended(tmp_path):
    """SIGTERM while the second of two runs sleeps: exit 143, the sleeping run is stopped, and the summary
    lists the run that ended and says that the grid was stopped."""
    started = tmp_path / "started"
    notebook = write_notebook(
        tmp_path / "naps.ipynb", "nap_s = 0.0",
        f"import pathlib, time\nfrom helpers.workshop.env import record\nif nap_s:\n    pathlib.Path({str(started)!r}).touch()\n"
        "time.sleep(nap_s)\nrecord('nap_s', nap_s)")
    grid = tmp_path / "grid.yaml"
    grid.write_text("nap_s: [0.0, 600.0]\n")
    out = tmp_path / "runs"
    process = subprocess.Popen([sys.executable, "-m", "helpers.runs", str(notebook), "--grid", str(grid), "--out",
                                str(out), "--jobs", "1"], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not started.exists():
            assert process.poll() is None, process.stderr.read()
            assert time.monotonic() < deadline, "the second run never started"
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 143 and stderr.strip().splitlines()[-1] == "terminated"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped"] is True
    assert [(e["status"], e["metrics"]) for e in summary["notebooks"]] == [("ok", {"nap_s": 0.0})]
    assert "**Stopped**" in (out / "summary.md").read_text()


def test_a_kernel_that_dies_while_starting_is_started_again_at_most_three_times(tmp_path, monkeypatch, capsys):
    """A kernel whose port another process took dies before it answers: nothing ran, so the run starts it again
    (up to three tries)."""
    import papermill

    from helpers.runs import command

    calls = []

    def dies_twice(*args, **kwargs):
        calls.append(args)
        if len(calls) < 3:
            raise RuntimeError("Kernel died before replying to kernel_info")
        Path(args[1]).write_text(nbformat.writes(nbformat.v4.new_notebook()))

    monkeypatch.setattr(papermill, "execute_notebook", dies_twice)
    entry = command.run_notebook(Path("probe.ipynb"), tmp_path / "out.ipynb")
    assert entry["status"] == "ok" and len(calls) == 3
    assert capsys.readouterr().err.count("its kernel died while starting") == 2

    def always_dies(*args, **kwargs):
        calls.append(args)
        raise RuntimeError("Kernel died before replying to kernel_info")

    calls.clear()
    monkeypatch.setattr(papermill, "execute_notebook", always_dies)
    with pytest.raises(RuntimeError, match="kernel_info"):
        command.run_notebook(Path("probe.ipynb"), tmp_path / "out.ipynb")
    assert len(calls) == command.KERNEL_START_TRIES


def test_parallel_runs_share_the_cores_in_every_thread_pool_a_notebook_starts(monkeypatch):
    """Two runs at once on this machine's cores: each gets half of them in OpenMP's, MKL's, Rayon's and
    fastokens' pools (fastokens reads its own variable, not Rayon's: without it each run's encoder would take every
    core); a variable the user set is kept; one run at a time changes nothing."""
    from helpers.runs.command import THREAD_VARIABLES, Runner

    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    env = Runner([], parallel=2, kernel="python3")._environment()
    assert {name: env[name] for name in THREAD_VARIABLES} == {
        "OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "4", "RAYON_NUM_THREADS": "4", "RAYON_RS_NUM_CPUS": "4",
        "FASTOKENS_BPE_THREADS": "4"}
    alone = Runner([], parallel=1, kernel="python3")._environment()
    assert "FASTOKENS_BPE_THREADS" not in alone and alone["OMP_NUM_THREADS"] == "3"
