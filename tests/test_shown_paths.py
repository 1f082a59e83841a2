"""Printed paths carry no absolute path of the machine that ran them when they lie inside the repository."""

from __future__ import annotations

from helpers.common.paths import DATA_DIR, NOTEBOOK_DIR, REPO_ROOT, shown


def test_a_path_inside_the_repository_is_shown_from_where_the_notebook_runs(monkeypatch):
    monkeypatch.chdir(NOTEBOOK_DIR)
    assert shown(DATA_DIR / "audit-09" / "x.json") == "../data/audit-09/x.json"
    monkeypatch.chdir(REPO_ROOT)
    assert shown(DATA_DIR / "raw") == "data/raw"


def test_a_path_outside_the_repository_is_shown_as_given(monkeypatch, tmp_path):
    monkeypatch.chdir(NOTEBOOK_DIR)
    assert shown(tmp_path / "a.json") == str(tmp_path / "a.json")
    monkeypatch.chdir(tmp_path)
    assert shown(DATA_DIR / "raw") == str(DATA_DIR / "raw")
