"""`make preflight`: one line per check, each failure with its fix, and an exit code a room's script can use."""

from __future__ import annotations

import subprocess
import sys

from helpers.common.paths import REPO_ROOT
from helpers.workshop import preflight


def test_this_machine_is_ready_and_says_so_in_one_line_per_check(corpus_dir):
    run = subprocess.run([sys.executable, "-m", "helpers.workshop.preflight"], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=120)
    lines = run.stdout.splitlines()
    assert run.returncode == 0, run.stdout + run.stderr
    assert [line.split()[:2] for line in lines[:-1]] == [["ok", name] for name in
                                                          ("python", "disk", "torch", "corpus", "kernel")]
    assert lines[-1] == "preflight: ready" and run.stderr == ""


def test_each_failure_names_what_is_wrong_and_its_fix(tmp_path):
    findings = [preflight.check_python((3, 9, 18)), preflight.check_disk(tmp_path, need_gb=1e9),
                preflight.check_corpus(tmp_path / "raw"), preflight.check_kernel(str(tmp_path / "no-python"))]
    assert [f.ok for f in findings] == [False] * 4
    for finding in findings:
        assert finding.line().startswith(f"FAIL  {finding.name}") and "; fix: " in finding.line(), finding.line()
    assert "make corpus" in findings[2].detail and "docs.jsonl" in findings[2].detail


def test_the_command_fails_when_one_check_fails(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(preflight, "CHECKS", (preflight.check_python, lambda: preflight.check_corpus(tmp_path)))
    assert preflight.main([]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "preflight: not ready (corpus)"


def test_make_preflight_without_a_venv_says_how_to_make_one(tmp_path):
    (tmp_path / "Makefile").write_text((REPO_ROOT / "Makefile").read_text())
    run = subprocess.run(["make", "-s", "preflight"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and run.stdout.strip() == "FAIL  venv    no .venv in this folder; fix: make workshop"
