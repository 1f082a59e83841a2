"""A step added from one file outside `helpers/clean` (`examples/clean_short_lines.py`), registered from there:
`python -m helpers.clean --steps-from` shows its flag in `--help`, lists its removals with their reason in
removed.jsonl and writes its section of report.json, with the same outputs on the local engine and on Ray."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers.common.paths import REPO_ROOT

MODULE = "clean_short_lines"


def _clean(*arguments: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "examples"), str(REPO_ROOT)])}
    return subprocess.run([sys.executable, "-m", "helpers.clean", "--steps-from", MODULE, *arguments],
                          capture_output=True, text=True, env=environment, timeout=600)


def test_the_step_s_flag_is_in_the_help():
    done = _clean("--help")
    assert done.returncode == 0, done.stderr
    shown = " ".join(done.stdout.split())
    assert "--short-lines CHARACTERS drop documents whose non-empty lines average fewer characters" in shown


def test_a_module_that_does_not_import_is_one_line(tmp_path):
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-m", "helpers.clean", "--steps-from", "no_such_steps", "--input", "x",
                           "--output-dir", str(tmp_path)], capture_output=True, text=True, env=environment)
    assert done.returncode == 2 and done.stderr.startswith("error: --steps-from no_such_steps: no such module")
    assert "Traceback" not in done.stderr


CLASHES = {
    "name": ('class E(Filter):\n    name = "exact"\n    options = (Option("mine", None),)\n',
             "a step named 'exact' is registered already"),
    "keyword": ('class E(Filter):\n    name = "mine"\n    options = (Option("threshold", None),)\n',
                "the setting 'threshold' is the fuzzy step's"),
    "flag": ('class E(Filter):\n    name = "mine"\n    options = (Option("mine", None, flag="--fuzzy"),)\n',
             "the flag --fuzzy is the fuzzy step's switch"),
    "place": ('class E(Filter):\n    name = "mine"\n    options = (Option("mine", None),)\n', "before='exactt'"),
}


@pytest.mark.parametrize("clash", CLASHES)
def test_a_step_that_clashes_with_one_registered_is_one_line(tmp_path, clash):
    source, message = CLASHES[clash]
    before = ", before='exactt'" if clash == "place" else ""
    (tmp_path / "clashing_steps.py").write_text("from helpers.clean import Filter, Option, register_step\n" + source
                                                + f"register_step(E{before})\n")
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO_ROOT)])}
    done = subprocess.run([sys.executable, "-m", "helpers.clean", "--steps-from", "clashing_steps", "--input", "x",
                           "--output-dir", str(tmp_path / "out"), "--exact"], capture_output=True, text=True,
                          env=environment)
    assert done.returncode == 2 and done.stderr.startswith("error: --steps-from clashing_steps: register_step(E"), \
        done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr and done.stderr.count("\n") == 1


@pytest.fixture(scope="module")
def runs(corpus_dir, tmp_path_factory) -> dict:
    """The step with --exact over the docs and code, on each engine."""
    folder = tmp_path_factory.mktemp("extension")
    made = {}
    for engine in ("local", "ray"):
        done = _clean("--input", str(corpus_dir / "docs.jsonl"), str(corpus_dir / "code.jsonl"), "--output-dir",
                      str(folder / engine), "--short-lines", "30", "--exact", "--engine", engine, "--workers", "2",
                      "--no-progress")
        assert done.returncode == 0, done.stderr
        made[engine] = folder / engine
    return made


@pytest.mark.parametrize("engine", ["local", "ray"])
def test_its_removals_and_its_report_section(runs, corpus_dir, engine):
    out = runs[engine]
    removed = [json.loads(line) for line in (out / "removed.jsonl").read_text().splitlines()]
    mine = [entry for entry in removed if entry["step"] == "short_lines"]
    assert mine and all(entry["reason"].startswith("mean line length ") and entry["reason"].endswith(" < 30")
                        for entry in mine)
    expected = 0
    for name in ("docs.jsonl", "code.jsonl"):
        for line in open(corpus_dir / name, encoding="utf-8"):
            lines = [each for each in json.loads(line)["text"].split("\n") if each.strip()]
            expected += sum(map(len, lines)) / max(len(lines), 1) < 30
    assert len(mine) == expected
    report = json.loads((out / "report.json").read_text())
    assert report["short_lines"] == {"limit": 30.0, "documents_dropped": expected}
    assert report["settings"]["steps"] == ["short_lines", "exact"] and report["settings"]["short_lines"] == 30.0
    assert [row["step"] for row in report["inputs"][0]["steps"]] == ["read", "short_lines", "exact"]


def test_both_engines_write_the_same(runs):
    for name in ("docs.jsonl", "code.jsonl", "removed.jsonl"):
        assert (runs["local"] / name).read_bytes() == (runs["ray"] / name).read_bytes()
