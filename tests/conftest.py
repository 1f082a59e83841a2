"""Shared fixtures: the real corpus (built once, as `make workshop` builds it), one Ray for the whole session,
and quiet progress bars; and how the suite splits over pytest-xdist workers (`make test` runs `-n 2 --dist
loadgroup`)."""

from __future__ import annotations

import os
import re

import pytest

os.environ.setdefault("TQDM_DISABLE", "1")  # inherited by notebook kernels started by nbval/papermill
os.environ.setdefault("HELPERS_HEADLESS", "1")  # explorers print their knobs instead of showing widgets

# Notebooks that share a folder under data/ run on one worker, in order: 02 writes data/megatron, which 03-05
# (and their solutions) read; the others write folders of their own that their solutions read again.
NOTEBOOK_CHAINS = {"02": "02-05", "03": "02-05", "04": "02-05", "05": "02-05"}


def pytest_sessionstart(session):
    """Build the real corpus once, before any worker starts: nbval's notebooks read data/raw, and two workers
    must not each build it."""
    if not hasattr(session.config, "workerinput"):
        from helpers.common.paths import RAW_DIR
        from helpers.corpus.build import build_corpus

        build_corpus(RAW_DIR, verbose=False)


def xdist_group_of(item) -> str:
    """The unit of work one xdist worker runs whole and in order: a notebook's cells with every notebook and
    test that shares its data/ folder, else the item's own module (its module-scoped fixtures are built once)."""
    notebook = re.match(r"(\d\d)_", item.path.name) if item.path.suffix == ".ipynb" else None
    if notebook is None and item.path.name == "test_notebooks.py":
        notebook = re.match(r"test_(06)_", item.name)  # 06 with its defaults' data/megatron-06-* folder
        if notebook is None:
            return item.nodeid  # papermill runs into tmp_path: each its own unit
    if notebook is not None:
        number = notebook.group(1)
        return f"notebooks-{NOTEBOOK_CHAINS.get(number, number)}"
    return item.path.name


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.xdist_group(xdist_group_of(item)))


@pytest.fixture(scope="session")
def corpus_dir():
    """data/raw with the three domain files, built from the real sources when missing."""
    from helpers.common.paths import RAW_DIR
    from helpers.corpus.build import build_corpus

    build_corpus(RAW_DIR, verbose=False)
    return RAW_DIR


@pytest.fixture(scope="session")
def docs_bytes_prefix(corpus_dir, tmp_path_factory) -> str:
    """The docs domain of the real corpus as byte ids with an EOD after each document (a 258-id vocabulary
    keeps a model tiny), made once for every module that trains on it; nothing may write into it."""
    from helpers.preprocess import preprocess

    made = preprocess(corpus_dir / "docs.jsonl", tmp_path_factory.mktemp("docs-bytes") / "docs", "bytes",
                      append_eod=True, workers=2, progress=False)
    return made.outputs["text"]


@pytest.fixture(scope="session")
def ray_cluster():
    """A local Ray with 2 CPUs, started once per test session (it takes about 10 s) and shut down at its end;
    `--engine ray` runs inside the test process use it instead of starting their own."""
    from helpers.engines.ray_cluster import ray_session  # ray is in the test extra: a missing one fails, never skips

    with ray_session(num_cpus=2):  # ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False), quiet
        yield


@pytest.fixture
def recorded_bars(monkeypatch) -> list:
    """`helpers.preprocess`'s progress bars, recorded instead of drawn: the list of those made, each with
    its total, how far it moved, and whether it was closed."""
    import helpers.preprocess.command as preprocess_module

    bars = []

    class RecordingBar:
        def __init__(self, total=None, **kwargs):
            self.total, self.n, self.closed = total, 0, False
            bars.append(self)

        def update(self, n):
            self.n += n

        def set_postfix(self, *args, **kwargs):
            pass

        def close(self):
            self.closed = True

    monkeypatch.setattr(preprocess_module, "progress_bar", RecordingBar)
    return bars
