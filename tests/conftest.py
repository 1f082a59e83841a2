"""Shared fixtures: the real corpus (built once, as `make workshop` builds it), one Ray for the whole session,
and quiet progress bars. How the whole suite runs (notebooks included) is in the repository's conftest.py."""

from __future__ import annotations

import pytest


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
def humaneval():
    """HumanEval's 164 problems (prompt and solution each), as the decontamination steps read them offline."""
    from helpers.decontamination import load_evals

    (evals,) = load_evals(["humaneval"])
    return evals


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
