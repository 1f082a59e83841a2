"""Shared fixtures: the real corpus (built once, as `make workshop` builds it), one Ray for the tests that use it,
and quiet progress bars. How the whole suite runs (notebooks included) is in the repository's conftest.py."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest


@pytest.fixture(scope="session")
def corpus_dir():
    """data/raw with the three domain files, built from the real sources when missing."""
    from helpers.common.paths import RAW_DIR
    from helpers.corpus.build import build_corpus

    build_corpus(RAW_DIR, verbose=False)
    return RAW_DIR


@pytest.fixture(scope="session")
def kept_for_mutants(tmp_path_factory):
    """`kept_for_mutants(name, build)`: what `build(folder)` returns (paths of data it wrote into `folder`, as
    strings, in lists and dicts). A run of the suite builds into a fresh folder. Under `make mutation` (mutmut names
    the mutant in MUTANT_UNDER_TEST) each mutant's tests run in a process of their own, which would preprocess the
    same corpus again: there the first process's folder is kept in data/cache/, keyed by the package's sources, and
    the others read it."""

    def kept(name: str, build):
        if not os.environ.get("MUTANT_UNDER_TEST"):
            return build(tmp_path_factory.mktemp(name))
        from helpers.common.paths import CACHE_DIR, REPO_ROOT

        sources = b"".join(path.read_bytes() for path in sorted((REPO_ROOT / "helpers").rglob("*.py")))
        final = CACHE_DIR / "kept-for-mutants" / f"{name}-{hashlib.sha256(sources).hexdigest()[:16]}"
        final.parent.mkdir(parents=True, exist_ok=True)
        if not (final / "paths.json").is_file():
            building = final.with_name(f"{final.name}.{os.getpid()}")
            shutil.rmtree(building, ignore_errors=True)
            building.mkdir()
            made = json.dumps(build(building)).replace(json.dumps(str(building))[1:-1], "{folder}")
            (building / "paths.json").write_text(made, encoding="utf-8")
            try:
                building.rename(final)
            except OSError:  # another mutant's process kept its folder first
                shutil.rmtree(building, ignore_errors=True)
        made = (final / "paths.json").read_text(encoding="utf-8")
        return json.loads(made.replace("{folder}", json.dumps(str(final))[1:-1]))

    return kept


@pytest.fixture(scope="session")
def docs_bytes_prefix(corpus_dir, tmp_path_factory) -> str:
    """The docs domain of the real corpus as byte ids with an EOD after each document (a 258-id vocabulary
    keeps a model tiny), made once for every module that trains on it; nothing may write into it."""
    from helpers.preprocess import preprocess

    made = preprocess(corpus_dir / "docs.jsonl", tmp_path_factory.mktemp("docs-bytes") / "docs", "bytes",
                      append_eod=True, workers=2, progress=False)
    return made.outputs["text"]


@pytest.fixture(scope="session")
def humaneval():
    """HumanEval's 164 problems (prompt and solution each), as the decontamination steps read them offline."""
    from helpers.decontamination import load_evals

    (evals,) = load_evals(["humaneval"])
    return evals


class LocalRay:
    """A local Ray with 2 CPUs for the tests that ask for `ray_cluster`: started by the first (it takes about
    10 s) and shut down after the last test of the modules that use it. Those modules run together (one unit of
    work, the repository's conftest.py), so it starts once, and its daemons take no CPU from the tests after."""

    def __init__(self):
        self.session = None

    def start(self) -> None:
        if self.session is None:
            from helpers.engines.ray_cluster import ray_session  # in the test extra: a missing ray fails, never skips

            self.session = ray_session(num_cpus=2)  # ray.init(num_cpus=2, include_dashboard=False, ...), quiet
            self.session.__enter__()

    def stop(self) -> None:
        if self.session is not None:
            session, self.session = self.session, None
            session.__exit__(None, None, None)


LOCAL_RAY = LocalRay()


@pytest.fixture
def ray_cluster():
    """Ray running in this process: `--engine ray` runs inside the test process use it instead of starting
    their own."""
    LOCAL_RAY.start()
    yield


def pytest_runtest_teardown(item, nextitem):
    """Ray is shut down once the next test is of a module that does not use it (or there is none)."""
    if LOCAL_RAY.session is not None and (nextitem is None or nextitem.path not in ray_modules(item.session)):
        LOCAL_RAY.stop()


def ray_modules(session) -> set:
    """The test files that have a test using `ray_cluster`."""
    if not hasattr(session, "ray_modules"):
        session.ray_modules = {item.path for item in session.items
                               if "ray_cluster" in getattr(item, "fixturenames", ())}
    return session.ray_modules


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


@pytest.fixture
def refused_by_clean(corpus_dir, tmp_path):
    """Run `python -m helpers.clean` on the docs with `arguments` and check it refuses them: exit 2, one line on
    stderr holding `message`, no output folder."""
    import subprocess
    import sys

    def refused(arguments: list[str], message: str) -> None:
        done = subprocess.run([sys.executable, "-m", "helpers.clean", "--input", str(corpus_dir / "docs.jsonl"),
                               "--output-dir", str(tmp_path / "out"), *arguments], capture_output=True, text=True)
        assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1, \
            done.stderr
        assert not (tmp_path / "out").exists()
    return refused
