"""`helpers.clean`: what each step removes, the audit trail, the report, bad input, and outputs that do
not depend on the number of workers or parts."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.clean import clean
from helpers.common.errors import UserError

HEADER = "# This file is part of the example project; see LICENSE for terms."
WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau "
         "upsilon phi chi psi omega").split()


def _prose(seed: int, words: int = 120) -> str:
    """A long text of its own (seeded), unlike any other seed's."""
    state = seed * 2654435761 % 2**32
    out = []
    for _ in range(words):
        state = (state * 1103515245 + 12345) % 2**31
        out.append(WORDS[state % len(WORDS)] + str(state % 7))
    return " ".join(out)


def _write(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in records),
                    encoding="utf-8")
    return path


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def corpus(tmp_path: Path) -> list[Path]:
    base = _prose(1, 200)
    near = base.replace("alpha", "ALPHA-X", 1)  # one word changed in 200
    first = _write(tmp_path / "a.jsonl", [
        {"id": "a0", "text": base, "extra": {"k": [1, 2]}},
        {"id": "a1", "text": _prose(2)},
        "",
        {"id": "a2", "text": _prose(3)},
        {"id": "a3", "text": f"{HEADER}\ncode line one is long enough to count\n" + _prose(4)},
    ])
    second = _write(tmp_path / "b.jsonl", [
        {"id": "b0", "text": _prose(2)},  # exact duplicate of a1
        {"id": "b1", "text": near},  # near duplicate of a0
        {"id": "b2", "text": f"{HEADER}\n" + _prose(5)},
        {"id": "b3", "text": f"{HEADER}\n  \n"},  # only the header: empty once it goes
        {"id": "b4", "text": "cafe\u0301\r\nnaive\x00"},
    ])
    return [first, second]


def _run(corpus, out, **options):
    defaults = dict(normalize=True, exact=True, lines=True, fuzzy=True, line_min_count=3, progress=False)
    return clean(corpus, out, **{**defaults, **options})


def test_each_step_removes_what_it_should_and_says_why(corpus, tmp_path):
    report = _run(corpus, tmp_path / "out")
    kept = {r["id"] for name in ("a.jsonl", "b.jsonl") for r in _read(tmp_path / "out" / name)}
    assert kept == {"a0", "a1", "a2", "a3", "b2", "b4"}
    removed = {r["id"]: r for r in _read(tmp_path / "out" / "removed.jsonl")}
    assert removed["b0"]["step"] == "exact" and removed["b0"]["duplicate_of"] == {"file": "a.jsonl", "line": 2, "id": "a1"}
    assert removed["b1"]["step"] == "fuzzy" and removed["b1"]["duplicate_of"]["id"] == "a0"
    assert 0.8 <= removed["b1"]["similarity"] < 1.0
    assert removed["b3"]["step"] == "lines" and "reason" in removed["b3"]
    assert report["fuzzy"]["bands"] * report["fuzzy"]["rows"] <= 128
    assert report["lines"]["top"][0] == {"line": HEADER, "documents": 3, "removed": True}


def test_kept_records_keep_order_fields_and_bytes(corpus, tmp_path):
    _run(corpus, tmp_path / "out")
    records = _read(tmp_path / "out" / "a.jsonl")
    assert [r["id"] for r in records] == ["a0", "a1", "a2", "a3"]
    assert records[0]["extra"] == {"k": [1, 2]}
    original = corpus[0].read_bytes().splitlines(keepends=True)
    written = (tmp_path / "out" / "a.jsonl").read_bytes().splitlines(keepends=True)
    assert written[:2] == original[:2]  # untouched records are copied byte for byte
    assert HEADER not in records[3]["text"] and records[3]["text"].startswith("code line one")
    b4 = [r for r in _read(tmp_path / "out" / "b.jsonl") if r["id"] == "b4"][0]
    assert b4["text"] == "caf\u00e9\nnaive"


def test_report_counts_documents_and_bytes_per_step(corpus, tmp_path):
    report = _run(corpus, tmp_path / "out")
    steps = {row["step"]: row for row in report["inputs"][1]["steps"]}
    assert [row["step"] for row in report["inputs"][1]["steps"]] == ["read", "normalize", "exact", "lines", "fuzzy"]
    assert steps["read"]["documents_in"] == 5 and steps["read"]["bytes_in"] == corpus[1].stat().st_size
    assert (steps["exact"]["removed"], steps["lines"]["removed"], steps["fuzzy"]["removed"]) == (1, 1, 1)
    for before, after in zip(report["inputs"][1]["steps"][1:], report["inputs"][1]["steps"][2:]):
        assert after["documents_in"] == before["documents_out"] and after["bytes_in"] == before["bytes_out"]
    for row in report["inputs"][1]["steps"][1:]:
        assert row["documents_out"] == row["documents_in"] - row["removed"]
        assert row["bytes_out"] == row["bytes_in"] - row["bytes_removed"] - row["bytes_trimmed"]
    assert steps["normalize"]["bytes_trimmed"] > 0 and steps["lines"]["bytes_trimmed"] > 0
    assert steps["exact"]["bytes_trimmed"] == steps["fuzzy"]["bytes_trimmed"] == 0
    assert report["blank_lines"] == 1
    assert json.loads((tmp_path / "out" / "report.json").read_text())["inputs"] == report["inputs"]
    removed = _read(tmp_path / "out" / "removed.jsonl")
    total_removed = sum(row["removed"] for item in report["inputs"] for row in item["steps"])
    assert len(removed) == total_removed == report["removed"]


def test_exact_keeps_the_first_occurrence_in_input_order(corpus, tmp_path):
    clean(list(reversed(corpus)), tmp_path / "out", exact=True, progress=False)
    removed = _read(tmp_path / "out" / "removed.jsonl")
    assert [(r["id"], r["duplicate_of"]["id"]) for r in removed] == [("a1", "b0")]


def _digests(folder: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())
            if p.name != "report.json"}


@pytest.mark.parametrize("workers,parts", [(1, 2), (2, 2), (2, 7)])
def test_outputs_do_not_depend_on_workers_or_parts(corpus, tmp_path, workers, parts):
    one = _run(corpus, tmp_path / "one")
    many = _run(corpus, tmp_path / "many", workers=workers, parts=parts)
    assert _digests(tmp_path / "one") == _digests(tmp_path / "many")
    assert one["inputs"] == many["inputs"]
    assert many["parts"] >= 2


def test_bad_record_names_file_and_line_and_leaves_nothing(corpus, tmp_path):
    lines = corpus[1].read_text().splitlines()
    lines.insert(2, '{"id": "x", "text": 5}')
    corpus[1].write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError, match=r"b\.jsonl:3: field 'text' is a JSON number"):
        _run(corpus, tmp_path / "out", parts=3, workers=2)
    assert list((tmp_path / "out").iterdir()) == []
    _run(corpus, tmp_path / "skip", skip_bad_records=True)
    bad = [r for r in _read(tmp_path / "skip" / "removed.jsonl") if r["step"] == "bad record"]
    assert bad == [{"file": "b.jsonl", "line": 3, "id": "x", "step": "bad record", "kind": "non-string value",
                    "reason": bad[0]["reason"]}]  # the record's id, readable though its text is not


@pytest.mark.parametrize("arguments,expected", [
    (["--exact"], "no such file"),
    (["--fuzzy", "--threshold", "1.5"], "--threshold 1.5"),
    ([], "no step asked for"),
    (["--lines", "--line-min-count", "1"], "--line-min-count 1"),
])
def test_cli_refuses_bad_requests_in_one_line(corpus, tmp_path, arguments, expected):
    inputs = [str(corpus[0])] if expected != "no such file" else [str(tmp_path / "missing.jsonl")]
    result = subprocess.run([sys.executable, "-m", "helpers.clean", "--input", *inputs, "--output-dir",
                             str(tmp_path / "out"), "--no-progress", *arguments], capture_output=True, text=True)
    assert result.returncode == 2
    assert expected in result.stderr and "fix:" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_refuses_inputs_of_the_same_name_and_writing_over_an_input(corpus, tmp_path):
    twin = tmp_path / "other"
    twin.mkdir()
    (twin / "a.jsonl").write_bytes(corpus[0].read_bytes())
    with pytest.raises(UserError, match="two inputs would both be written as a.jsonl"):
        clean([corpus[0], twin / "a.jsonl"], tmp_path / "out", exact=True, progress=False)
    with pytest.raises(UserError, match="would overwrite this input"):
        clean([corpus[0]], tmp_path, exact=True, progress=False)


def test_cli_prints_a_summary(corpus, tmp_path):
    result = subprocess.run([sys.executable, "-m", "helpers.clean", "--input", *map(str, corpus), "--output-dir",
                             str(tmp_path / "out"), "--exact", "--fuzzy", "--workers", "2", "--no-progress"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "b.jsonl: 5 records -> 3 kept (exact -1, fuzzy -1)" in result.stdout  # reading removed nothing
    assert "documents/s" in result.stdout


def test_a_lone_surrogate_in_another_field_survives_a_changed_text(tmp_path):
    source = _write(tmp_path / "s.jsonl", ['{"id": "s", "note": "\\ud800", "text": "tab\\tand\\u0000nul"}'])
    clean([source], tmp_path / "out", normalize=True, progress=False)
    line = (tmp_path / "out" / "s.jsonl").read_text(encoding="ascii")
    assert json.loads(line) == {"id": "s", "note": "\ud800", "text": "tab\tandnul"}


def test_ray_address_needs_the_ray_engine(corpus, tmp_path):
    with pytest.raises(UserError, match="--ray-address HEAD:6379 is for --engine ray"):
        clean(corpus, tmp_path / "out", exact=True, ray_address="HEAD:6379", progress=False)


def test_workers_start_clean_after_rensa_ran_in_this_process(corpus_dir, tmp_path):
    """rensa's thread pool, started in this process by a large batch, must not reach the workers: a forked
    copy of it has no threads, and the next large batch there waited for them for ever."""
    literature = str(corpus_dir / "literature.jsonl")
    result = subprocess.run([sys.executable, "-c", (
        "import json; from helpers.clean.text.shingles import signatures; from helpers.clean import clean\n"
        f"signatures([json.loads(line)['text'] for line in open({literature!r})])\n"
        f"clean([{literature!r}], {str(tmp_path / 'out')!r}, fuzzy=True, workers=2, parts=2, progress=False)\n")],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "literature.jsonl").exists()


def test_a_gzip_input_gives_what_its_plain_text_gives(corpus, tmp_path):
    import gzip

    packed = tmp_path / "packed"
    packed.mkdir()
    zipped = packed / "b.jsonl.gz"
    zipped.write_bytes(gzip.compress(corpus[1].read_bytes()))
    _run([corpus[0], corpus[1]], tmp_path / "plain", workers=2, parts=3)
    _run([corpus[0], zipped], tmp_path / "zipped", workers=2, parts=3)
    assert (tmp_path / "zipped" / "b.jsonl").read_bytes() == (tmp_path / "plain" / "b.jsonl").read_bytes()
    removed = _read(tmp_path / "zipped" / "removed.jsonl")
    assert {r["file"] for r in removed} == {"b.jsonl.gz"}  # the input, where its line numbers point
    with pytest.raises(UserError, match="two inputs would both be written as b.jsonl"):
        _run([corpus[1], zipped], tmp_path / "both")
