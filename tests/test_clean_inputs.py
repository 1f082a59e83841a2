"""`helpers.clean` drops nothing without a word, on real records: a folder's every readable file is cleaned and
anything else it holds refused in one line; a bad record keeps its readable id in removed.jsonl; a bad record's
fix offers `--skip-bad-records`, which also passes over an empty input, named; the summary names only what went;
a rerun into an earlier run's folder leaves none of that run's files beside its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers.clean import clean
from helpers.common.errors import UserError
from helpers.corpus.inputs import open_input


@pytest.fixture
def docs(corpus_dir) -> list[dict]:
    return [json.loads(line) for line in (corpus_dir / "docs.jsonl").read_text(encoding="utf-8").splitlines()]


def _jsonl(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


def _parquet(path: Path, records: list[dict]) -> Path:
    pq.write_table(pa.table({"id": [r["id"] for r in records], "text": [r["text"] for r in records]}), path)
    return path


@pytest.fixture
def mixed(tmp_path, docs) -> Path:
    """A folder of real records as a.jsonl and b.parquet, and a page of prose as notes.txt."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    _jsonl(folder / "a.jsonl", docs[:20])
    _parquet(folder / "b.parquet", docs[20:40])
    (folder / "notes.txt").write_text(docs[40]["text"], encoding="utf-8")
    return folder


def _clean(*arguments: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "helpers.clean", *arguments, "--no-progress", "--workers", "1"],
                          capture_output=True, text=True, cwd=cwd)


def test_a_folder_of_mixed_files_is_refused_naming_what_no_reader_takes(mixed, tmp_path):
    done = _clean("--input", str(mixed), "--output-dir", str(tmp_path / "out"), "--exact", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "notes.txt" in done.stderr and "fix:" in done.stderr and "*.jsonl" in done.stderr
    assert not (tmp_path / "out").exists()


def test_every_file_a_folder_holds_that_a_reader_takes_is_cleaned(mixed, tmp_path, docs):
    (mixed / "notes.txt").unlink()
    (mixed / "_SUCCESS").write_text("")  # no data: passed over, as pyarrow's datasets pass it over
    report = clean([mixed], tmp_path / "out", exact=True, progress=False)
    assert [item["file"] for item in report["inputs"]] == ["a.jsonl", "b.parquet"]
    kept_jsonl = [json.loads(line)["id"] for line in (tmp_path / "out" / "a.jsonl").read_text().splitlines()]
    kept_parquet = pq.read_table(tmp_path / "out" / "b.parquet").column("id").to_pylist()
    removed = [json.loads(line)["id"] for line in (tmp_path / "out" / "removed.jsonl").read_text().splitlines()]
    assert sorted(kept_jsonl + kept_parquet + removed) == sorted(r["id"] for r in docs[:40])
    assert kept_jsonl and kept_parquet


def test_preprocessing_reads_a_folder_of_jsonl_and_refuses_one_of_two_kinds(mixed, tmp_path, docs):
    (mixed / "notes.txt").unlink()
    with pytest.raises(UserError, match=r"mixed: holds JSONL and Parquet files.*fix: name one kind"):
        open_input(mixed)
    (mixed / "b.parquet").unlink()
    _jsonl(mixed / "c.jsonl", docs[20:30])
    assert [path.name for path in open_input(mixed).files] == ["a.jsonl", "c.jsonl"]


def test_a_bad_record_keeps_its_readable_id_in_removed_jsonl(tmp_path, docs):
    lines = [json.dumps(r) for r in docs[:6]]
    lines[1] = json.dumps({"id": "number", "text": 5})
    lines[2] = json.dumps({"id": "no-text", "body": docs[2]["text"]})
    lines[3] = '{"id": "lone", "text": "\\ud800' + json.dumps(docs[3]["text"])[1:] + "}"  # a lone surrogate
    lines[4] = '{"id": "cut", "text": ' + json.dumps(docs[4]["text"])[:80]  # cut short: no id to read
    source = _jsonl(tmp_path / "bad.jsonl", lines)
    report = clean([source], tmp_path / "out", exact=True, skip_bad_records=True, progress=False)
    bad = [json.loads(line) for line in (tmp_path / "out" / "removed.jsonl").read_text().splitlines()]
    assert [(r["line"], r["id"], r["kind"]) for r in bad] == [
        (2, "number", "non-string value"), (3, "no-text", "missing key"), (4, "lone", "lone surrogate"),
        (5, None, "invalid JSON")]
    assert report["inputs"][0]["steps"][0]["removed"] == 4


def test_a_bad_record_s_fix_offers_skip_bad_records(tmp_path, docs):
    lines = [json.dumps(r) for r in docs[:3]] + ['{"id": "lone", "text": "' + "\\ud800" + docs[3]["id"] + '"}']
    source = _jsonl(tmp_path / "lone.jsonl", lines)
    done = _clean("--input", str(source), "--output-dir", str(tmp_path / "out"), "--normalize", cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "lone.jsonl:4" in done.stderr and "lone surrogate" in done.stderr
    assert "--skip-bad-records" in done.stderr.split("fix:")[1]
    assert list((tmp_path / "out").iterdir()) == []


def test_an_empty_input_is_refused_or_with_skip_bad_records_passed_over_by_name(tmp_path, corpus_dir):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    inputs = ["--input", str(corpus_dir / "docs.jsonl"), str(empty), "--exact"]
    refused = _clean(*inputs, "--output-dir", str(tmp_path / "out"), cwd=tmp_path)
    assert refused.returncode == 2 and "empty.jsonl: empty file" in refused.stderr
    assert "nothing to preprocess" not in refused.stderr and "--skip-bad-records" in refused.stderr
    done = _clean(*inputs, "--skip-bad-records", "--output-dir", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "empty.jsonl: empty file, skipped (--skip-bad-records)" in done.stdout
    assert "docs.jsonl: 79 records -> 78 kept (exact -1)" in done.stdout  # no "read -0": reading removed none
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["empty_inputs_skipped"] == ["empty.jsonl"] and report["outputs"] == ["docs.jsonl"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["docs.jsonl", "removed.jsonl", "report.json"]


def test_the_summary_counts_bad_records_skipped(tmp_path, docs):
    source = _jsonl(tmp_path / "some.jsonl", [json.dumps(r) for r in docs[:5]] + ['{"text": 5}', "[1]"])
    done = _clean("--input", str(source), "--output-dir", str(tmp_path / "out"), "--exact", "--skip-bad-records",
                  cwd=tmp_path)
    assert "some.jsonl: 7 records -> 5 kept (bad records -2, exact -0)" in done.stdout, done.stdout


def test_a_rerun_clears_the_earlier_run_s_outputs_it_does_not_write(tmp_path, corpus_dir):
    out = tmp_path / "out"
    first = clean([corpus_dir / "docs.jsonl", corpus_dir / "code.jsonl"], out, exact=True, progress=False)
    assert first["outputs"] == ["docs.jsonl", "code.jsonl"] and first["cleared"] == []
    (out / "mine.txt").write_text("a file of the user's")  # no run listed it: left alone
    done = _clean("--input", str(corpus_dir / "docs.jsonl"), "--output-dir", str(out), "--exact", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "cleared code.jsonl" in done.stdout
    assert sorted(p.name for p in out.iterdir()) == ["docs.jsonl", "mine.txt", "removed.jsonl", "report.json"]
    report = json.loads((out / "report.json").read_text())
    assert report["cleared"] == ["code.jsonl"] and [item["file"] for item in report["inputs"]] == ["docs.jsonl"]
    removed = [json.loads(line) for line in (out / "removed.jsonl").read_text().splitlines()]
    assert {r["file"] for r in removed} == {"docs.jsonl"}


def test_a_failed_rerun_leaves_the_earlier_run_whole(tmp_path, corpus_dir, docs):
    out = tmp_path / "out"
    clean([corpus_dir / "docs.jsonl", corpus_dir / "code.jsonl"], out, exact=True, progress=False)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    bad = _jsonl(tmp_path / "docs.jsonl", [json.dumps(r) for r in docs[:3]] + ['{"text": 5}'])
    with pytest.raises(UserError, match=r"docs\.jsonl:4"):
        clean([bad], out, exact=True, progress=False)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_report_json_of_no_cleaning_run_is_refused_before_anything_is_written(tmp_path, corpus_dir):
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.json").write_text("[1, 2]")
    with pytest.raises(UserError, match=r"report\.json: not the report of a cleaning run.*fix:"):
        clean([corpus_dir / "docs.jsonl"], out, exact=True, progress=False)
    assert sorted(p.name for p in out.iterdir()) == ["report.json"]


def test_an_id_holding_a_lone_surrogate_is_listed_escaped(tmp_path, docs):
    """Only the text is checked for lone surrogates: an id may hold one, and removed.jsonl still names it."""
    text = json.dumps(docs[0]["text"])
    source = _jsonl(tmp_path / "ids.jsonl", ['{"id": "first", "text": ' + text + "}",
                                             '{"id": "copy\\ud800", "text": ' + text + "}",
                                             '{"id": "bad\\udfff", "text": null}'])
    clean([source], tmp_path / "out", exact=True, skip_bad_records=True, progress=False)
    removed = [json.loads(line) for line in (tmp_path / "out" / "removed.jsonl").read_text().splitlines()]
    assert [(r["id"], r["step"]) for r in removed] == [("copy\ud800", "exact"), ("bad\udfff", "bad record")]
