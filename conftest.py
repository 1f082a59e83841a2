"""How the whole suite runs, tests/ and nbval's notebooks alike (a conftest here reaches both):
- kernels are headless and draw no progress bars;
- the real corpus is built once, before anything (or any xdist worker) starts;
- nbval's run of a notebook records its metrics to a file, which test_notebooks reads
  (`default_run_metrics`) instead of running the notebook a second time;
- `make test` runs on 3 pytest-xdist workers (`TEST_WORKERS`), each taking whole units of work (`unit_of`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("TQDM_DISABLE", "1")  # inherited by notebook kernels started by nbval/papermill
os.environ.setdefault("HELPERS_HEADLESS", "1")  # explorers print their knobs instead of showing widgets

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Each worker gets its share of the cores for OpenMP (torch's threads), inherited by the kernels and
    # processes it starts: two workers each spinning two threads on two cores ran notebook 06's training
    # seven times slower than alone.
    _share = max(1, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_variable, str(_share))


def pytest_sessionstart(session):
    """Build the real corpus once, before any worker starts: nbval's notebooks read data/raw, and two workers
    must not each build it."""
    if not hasattr(session.config, "workerinput"):
        from helpers.common.paths import RAW_DIR
        from helpers.corpus.build import build_corpus

        build_corpus(RAW_DIR, verbose=False)


# Notebooks that share a folder under data/ run on one worker, in order: 02 writes data/megatron, which 03-05
# (and their solutions) read; the others write folders of their own that their solutions read again.
NOTEBOOK_CHAINS = {"02": "02-05", "03": "02-05", "04": "02-05", "05": "02-05"}


# Where the notebooks nbval runs record their metrics (helpers.workshop.env.record), one folder per process:
# the tests of notebooks/*.ipynb's default runs read them there instead of running each notebook a second time.
NBVAL_METRICS_DIR = Path(tempfile.mkdtemp(prefix="nbval-metrics-"))


def nbval_run(notebook: Path) -> Path:
    """The name nbval's run of `notebook` records its metrics under (`read_metrics` takes it)."""
    return NBVAL_METRICS_DIR / f"{notebook.parent.name}-{notebook.name}"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Before an nbval cell (the first one starts the kernel, which inherits it): where `record` writes."""
    if item.path.suffix == ".ipynb":
        from helpers.workshop.env import METRICS_FILE_ENV, metrics_file

        os.environ[METRICS_FILE_ENV] = str(metrics_file(nbval_run(item.path)))


def pytest_runtest_teardown(item):
    if item.path.suffix == ".ipynb":
        from helpers.workshop.env import METRICS_FILE_ENV

        os.environ.pop(METRICS_FILE_ENV, None)


def pytest_sessionfinish(session):
    shutil.rmtree(NBVAL_METRICS_DIR, ignore_errors=True)


# test_examples' tests that share its module fixture `real_runs` (four framework runs): one unit, built once.
REAL_RUNS_TESTS = ("test_real_data_beats_random_tokens_on_the_same_steps",
                   "test_every_framework_learns_from_the_loaders_global_batches",
                   "test_every_framework_draws_the_same_loss_curve",
                   "test_trainer_under_torchrun_takes_the_steps_it_takes_on_one_process",
                   "test_every_zero_stage_takes_the_same_steps")


# The test modules that use the `ray_cluster` fixture (tests/conftest.py): one unit, so that one worker alone starts
# a Ray (about 10 s, and its daemons' CPU while it lives).
RAY_MODULES = {path.name for path in (Path(__file__).parent / "tests").glob("test_*.py")
               if "ray_cluster" in path.read_text(encoding="utf-8")}


def unit_of(nodeid: str) -> str:
    """The unit of work an xdist worker runs whole and in order, from a test's id:
    - a notebook's cells, with every notebook and test that shares its data/ folder or reads its default run
      (test_notebooks' `test_NN_...`);
    - in test_examples, the tests of `real_runs` together and every other test alone (the planted-bug matrix is
      a third of the suite);
    - the modules that use Ray, together (`RAY_MODULES`);
    - elsewhere a module (its module-scoped fixtures are built once)."""
    path, _, rest = nodeid.partition("::")
    name = Path(path).name
    notebook = re.match(r"(\d\d)_", name) if name.endswith(".ipynb") else None
    if name == "test_notebooks.py":
        notebook = re.match(r"test_(\d\d)_", rest)
        if notebook is None:
            return nodeid
    if notebook is not None:
        number = notebook.group(1)
        return f"notebooks-{NOTEBOOK_CHAINS.get(number, number)}"
    if name == "test_examples.py":
        return f"{path}::real_runs" if rest.split("[")[0] in REAL_RUNS_TESTS else nodeid
    if name in RAY_MODULES:
        return "ray"
    return path


# Units that take half a minute or more on 2 cores (a notebook with its solutions, the examples' real runs, the
# Ray modules, the distributed runs): handed out first, so that the run ends on short units and neither worker
# waits long for the other.
LONG_UNITS = ("notebooks-", "::real_runs", "ray", "test_distributed_training.py", "test_audit.py", "test_runs.py",
              "test_notebooks.py", "test_mix_swarm.py")


@pytest.hookimpl(optionalhook=True)  # absent with -p no:xdist (make mutation)
def pytest_xdist_make_scheduler(config, log):
    """`make test`'s workers (pytest -n 3) take whole units (`unit_of`), long ones first (`LONG_UNITS`), then the
    others by their number of tests; a worker is given its next unit when one test of its last is left (xdist's own
    rule queues up to two more ahead, which at the end can leave one worker idle while the other runs its queue)."""
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

        def _assign_work_unit(self, node) -> None:
            longest = min(self.workqueue, key=lambda unit: (not any(name in unit for name in LONG_UNITS),
                                                            -len(self.workqueue[unit])))
            self.workqueue.move_to_end(longest, last=False)
            super()._assign_work_unit(node)

        def _reschedule(self, node) -> None:
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            if self._pending_of(self.assigned_work[node]) <= 1:  # a worker holds its last test until it knows the next
                self._assign_work_unit(node)

    return UnitScheduling(config, log)


# Test files that pin values on small inputs (no corpus to build, no process to start): under `make mutation` they
# run first, so that a planted bug they catch ends its run (`-x`) before a slower test builds its fixtures.
PINNING_FILES = ("_values.py", "_boundaries.py", "_messages.py")


def pytest_collection_modifyitems(config, items):
    """Notebooks first: a test that reads a notebook's default run comes after the run, in the same unit. The
    modules that use Ray last, together, so that one process (without xdist too) starts it once. Under mutmut
    (which names the mutant in MUTANT_UNDER_TEST), `PINNING_FILES` first, then each file's tests together (mutmut
    hands over its tests in no order, and a module's fixtures would be built again each time its tests came back),
    the quickest first."""
    items.sort(key=lambda item: (item.path.suffix != ".ipynb", unit_of(item.nodeid) == "ray"))
    if os.environ.get("MUTANT_UNDER_TEST"):
        seconds = mutmut_durations()
        items.sort(key=lambda item: (not item.path.name.endswith(PINNING_FILES), str(item.path),
                                     seconds.get(item.nodeid, 0.0), item.reportinfo()[1] or 0))


def mutmut_durations() -> dict[str, float]:
    """Test id -> the seconds its call took in mutmut's run of the whole selection (`mutmut-stats.json`, in the
    folder mutmut runs the tests from): a file's quick tests first, so that a mutant they catch stops there."""
    try:
        return json.loads(Path("mutmut-stats.json").read_text(encoding="utf-8"))["duration_by_test"]
    except (OSError, ValueError, KeyError):
        return {}


@pytest.fixture
def default_run_metrics(tmp_path):
    """notebook stem -> the metrics of its run with default parameters: those nbval's run recorded in this
    process when it ran the notebook whole (it runs first, on the same worker), else a papermill run of our own
    (when the tests run without the notebooks)."""
    from helpers.common.paths import NOTEBOOK_DIR
    from helpers.runs.command import run_notebook
    from helpers.workshop.env import metrics_file, read_metrics

    def metrics(stem: str) -> dict:
        notebook = NOTEBOOK_DIR / f"{stem}.ipynb"
        if metrics_file(nbval_run(notebook)).exists():
            return read_metrics(nbval_run(notebook))
        entry = run_notebook(notebook, tmp_path / notebook.name)
        assert entry["status"] == "ok", entry.get("error")
        return entry["metrics"]

    return metrics
