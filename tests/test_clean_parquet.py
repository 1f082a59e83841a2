"""`helpers.clean` on Parquet: the same records as JSONL and as Parquet give the same kept texts, in the same
order, and the same removals; the Parquet output keeps the input's schema and every other column, one row
group per input row group that keeps a row, the same bytes for any number of parts and either engine; a
folder or a glob stands for its files; a null text and a missing column are one line each."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from helpers.clean import clean
from helpers.common.errors import UserError

STEPS = dict(normalize=True, exact=True, lines=True, fuzzy=True, line_min_count=3, progress=False)
HEADER = "Copyright the example authors; all rights reserved here."
ROWS_PER_GROUP = 4


def _story(seed: int, words: int = 150) -> str:
    """A long text of its own (seeded), unlike any other seed's."""
    state = seed * 2654435761 % 2**32
    out = []
    for _ in range(words):
        state = (state * 1103515245 + 12345) % 2**31
        out.append(f"w{state % 97}x{state % 5}")
    return " ".join(out)


def _records() -> list[dict]:
    """Every kind of removal: exact and near duplicates, a repeated line, a record emptied by normalising,
    one only the repeated line holds, and texts that normalising changes."""
    records = [{"id": f"r{i}", "url": f"https://example.org/{i}", "text": _story(i)} for i in range(14)]
    records[3]["text"] = records[1]["text"]  # exact
    records[6]["text"] = records[2]["text"].replace("w", "W", 1)  # near
    for i in (4, 8, 11):
        records[i]["text"] = f"{HEADER}\n{records[i]['text']}"
    records[9]["text"] = f"{HEADER}\n  \n"  # nothing left once the header goes
    records[10]["text"] = "\x00\x01"  # nothing visible once normalised
    records[12]["text"] = "cafe\u0301\r\nnaive " + records[12]["text"]
    return records


def _table(records: list[dict]):
    table = pa.table({"id": [r["id"] for r in records], "url": [r["url"] for r in records],
                      "n": pa.array(range(len(records)), pa.int32()), "text": [r["text"] for r in records]})
    return table.replace_schema_metadata({"origin": "test"})


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    """The records as JSONL and as Parquet (row groups of 4, an extra int column, schema metadata)."""
    records = _records()
    jsonl = tmp_path / "in" / "docs.jsonl"
    jsonl.parent.mkdir()
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    parquet = tmp_path / "in" / "docs.parquet"
    pq.write_table(_table(records), parquet, row_group_size=ROWS_PER_GROUP)
    return jsonl, parquet


def _removed(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "removed.jsonl").read_text(encoding="utf-8").splitlines()]


def _removals(folder: Path) -> list[tuple]:
    return [(r["id"], r["step"], r.get("duplicate_of", {}).get("id")) for r in _removed(folder)]


def _digests(folder: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())
            if p.name != "report.json"}


def test_parquet_keeps_and_removes_what_the_same_jsonl_does(inputs, tmp_path):
    jsonl, parquet = inputs
    from_jsonl = clean([jsonl], tmp_path / "jsonl", **STEPS)
    from_parquet = clean([parquet], tmp_path / "parquet", **STEPS)
    kept = [json.loads(line)["text"] for line in (tmp_path / "jsonl" / "docs.jsonl").read_text().splitlines()]
    assert pq.read_table(tmp_path / "parquet" / "docs.parquet").column("text").to_pylist() == kept
    assert _removals(tmp_path / "parquet") == _removals(tmp_path / "jsonl")
    assert {step for _, step, _ in _removals(tmp_path / "parquet")} == {"normalize", "exact", "lines", "fuzzy"}
    for entry in _removed(tmp_path / "parquet"):
        row = int(entry["id"][1:])
        assert (entry["file"], entry["row"], entry["row_group"]) == ("docs.parquet", row, row // ROWS_PER_GROUP)
        assert "line" not in entry
    steps = lambda report: [{k: v for k, v in row.items() if not k.startswith("bytes")}  # noqa: E731
                            for row in report["inputs"][0]["steps"]]
    assert steps(from_parquet) == steps(from_jsonl)
    text_bytes = sum(len(r["text"].encode()) for r in _records())
    assert from_parquet["inputs"][0]["steps"][0]["bytes_in"] == text_bytes  # a Parquet input's bytes: its texts'


def test_the_output_keeps_the_schema_and_every_other_column(inputs, tmp_path):
    _, parquet = inputs
    clean([parquet], tmp_path / "out", **STEPS)
    written = pq.ParquetFile(tmp_path / "out" / "docs.parquet")
    assert written.schema_arrow.equals(pq.ParquetFile(parquet).schema_arrow, check_metadata=True)
    source = {row["id"]: row for row in pq.read_table(parquet).to_pylist()}
    output = pq.read_table(tmp_path / "out" / "docs.parquet").to_pylist()
    others = lambda row: {k: v for k, v in row.items() if k != "text"}  # noqa: E731
    assert [others(row) for row in output] == [others(source[row["id"]]) for row in output]
    changed = {row["id"] for row in output if row["text"] != source[row["id"]]["text"]}
    assert changed == {"r4", "r8", "r11", "r12"}  # the header went from three; r12 was normalised
    groups = [written.read_row_group(i).column("n").to_pylist() for i in range(written.num_row_groups)]
    assert [sorted({n // ROWS_PER_GROUP for n in group}) for group in groups] == [[g] for g in range(len(groups))]
    assert written.num_row_groups == len({row["n"] // ROWS_PER_GROUP for row in output})  # one per group kept


@pytest.mark.parametrize("workers,parts", [(2, 2), (2, 7)])
def test_outputs_do_not_depend_on_parts(inputs, tmp_path, workers, parts):
    _, parquet = inputs
    one = clean([parquet], tmp_path / "one", parts=1, workers=1, **STEPS)
    many = clean([parquet], tmp_path / "many", parts=parts, workers=workers, **STEPS)
    assert _digests(tmp_path / "one") == _digests(tmp_path / "many")
    assert one["inputs"] == many["inputs"] and many["parts"] == min(parts, 4)  # 14 rows: 4 row groups


def test_the_ray_engine_writes_what_the_local_engine_writes(ray_cluster, inputs, tmp_path):
    _, parquet = inputs
    clean([parquet], tmp_path / "local", **STEPS)
    clean([parquet], tmp_path / "ray", engine="ray", parts=3, **STEPS)
    assert _digests(tmp_path / "ray") == _digests(tmp_path / "local")


def _shards(folder: Path) -> list[Path]:
    """The records in two Parquet files of a folder, and Spark's marker files beside them, which are no data."""
    folder.mkdir()
    table = _table(_records())
    pq.write_table(table.slice(0, 8), folder / "part-0.parquet", row_group_size=3)
    pq.write_table(table.slice(8), folder / "part-1.parquet", row_group_size=3)
    (folder / "_SUCCESS").write_text("")
    (folder / ".part-0.parquet.crc").write_bytes(b"\0" * 8)
    return [folder / "part-0.parquet", folder / "part-1.parquet"]


@pytest.mark.parametrize("pattern", [False, True], ids=["folder", "glob"])
def test_a_folder_or_a_glob_stands_for_its_parquet_files(inputs, tmp_path, pattern):
    _, parquet = inputs
    shards = _shards(tmp_path / "shards")
    given = tmp_path / "shards" / "*.parquet" if pattern else tmp_path / "shards"
    report = clean([given], tmp_path / "out", **STEPS)
    clean(shards, tmp_path / "listed", **STEPS)
    assert [item["file"] for item in report["inputs"]] == ["part-0.parquet", "part-1.parquet"]
    assert _digests(tmp_path / "out") == _digests(tmp_path / "listed")
    clean([parquet], tmp_path / "whole", **STEPS)
    kept = [t for shard in ("part-0.parquet", "part-1.parquet")
            for t in pq.read_table(tmp_path / "out" / shard).column("text").to_pylist()]
    assert kept == pq.read_table(tmp_path / "whole" / "docs.parquet").column("text").to_pylist()
    assert [(r["file"], r["id"]) for r in _removed(tmp_path / "out")] == [
        ("part-0.parquet" if int(r["id"][1:]) < 8 else "part-1.parquet", r["id"]) for r in _removed(tmp_path / "whole")]


def test_a_null_text_stops_the_run_or_is_listed_when_skipped(tmp_path):
    table = _table(_records())
    texts = table.column("text").to_pylist()
    texts[5] = None
    source = tmp_path / "in.parquet"
    pq.write_table(table.set_column(3, "text", pa.array(texts, pa.string())), source, row_group_size=ROWS_PER_GROUP)
    with pytest.raises(UserError) as raised:
        clean([source], tmp_path / "out", parts=3, workers=2, **STEPS)
    assert str(raised.value).startswith(f"{source}: row 5 (row group 1): column 'text' is null; fix:")
    assert "\n" not in str(raised.value)
    assert list((tmp_path / "out").iterdir()) == []
    report = clean([source], tmp_path / "skip", skip_bad_records=True, **STEPS)
    bad = [r for r in _removed(tmp_path / "skip") if r["step"] == "bad record"]
    assert bad == [{"file": "in.parquet", "row": 5, "row_group": 1, "id": "r5", "step": "bad record",
                    "kind": "null value", "reason": bad[0]["reason"]}]
    assert report["inputs"][0]["steps"][0]["removed"] == 1
    assert "r5" not in pq.read_table(tmp_path / "skip" / "in.parquet").column("id").to_pylist()


def test_a_missing_or_non_text_column_is_one_line_before_anything_is_written(inputs, tmp_path):
    _, parquet = inputs
    with pytest.raises(UserError, match=r"docs\.parquet: no column 'body' \(columns: id, url, n, text\); fix: "
                                        r".*--json-key"):
        clean([parquet], tmp_path / "out", text_key="body", **STEPS)
    with pytest.raises(UserError, match=r"docs\.parquet: column 'n' holds int32, not strings; fix:"):
        clean([parquet], tmp_path / "out", text_key="n", **STEPS)
    assert not (tmp_path / "out").exists()


def test_another_text_column_is_cleaned_and_the_text_column_left_alone(inputs, tmp_path):
    _, parquet = inputs
    clean([parquet], tmp_path / "out", text_key="url", exact=True, progress=False)
    assert pq.read_table(tmp_path / "out" / "docs.parquet").equals(pq.read_table(parquet))  # every url differs


def test_a_glob_of_jsonl_stands_for_its_files_compressed_or_not(inputs, tmp_path):
    jsonl, _ = inputs
    folder = tmp_path / "pieces"
    folder.mkdir()
    lines = jsonl.read_bytes().splitlines(keepends=True)
    (folder / "a.jsonl").write_bytes(b"".join(lines[:5]))
    (folder / "b.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(b"".join(lines[5:])))
    clean([folder / "*.jsonl*"], tmp_path / "globbed", exact=True, progress=False)
    (folder / "b.jsonl").write_bytes(b"".join(lines[5:]))
    clean([folder / "a.jsonl", folder / "b.jsonl"], tmp_path / "listed", exact=True, progress=False)
    for name in ("a.jsonl", "b.jsonl", "removed.jsonl"):
        assert (tmp_path / "globbed" / name).read_bytes() == (tmp_path / "listed" / name).read_bytes()


@pytest.mark.parametrize("parts", [1, 3])
def test_a_saved_dataset_is_cleaned_into_one_that_load_from_disk_opens(inputs, tmp_path, parts):
    import datasets

    jsonl, _ = inputs
    saved = tmp_path / "saved"
    datasets.Dataset(_table(_records())).save_to_disk(str(saved), num_shards=2)
    clean([jsonl], tmp_path / "jsonl", **STEPS)
    clean([saved], tmp_path / "out", parts=parts, workers=parts, **STEPS)
    cleaned = datasets.load_from_disk(str(tmp_path / "out" / "saved"))
    kept = [json.loads(line) for line in (tmp_path / "jsonl" / "docs.jsonl").read_text().splitlines()]
    assert cleaned["text"] == [r["text"] for r in kept] and cleaned["url"] == [r["url"] for r in kept]
    assert cleaned.features == datasets.load_from_disk(str(saved)).features
    state = json.loads((tmp_path / "out" / "saved" / "state.json").read_text())
    assert state["_fingerprint"] != json.loads((saved / "state.json").read_text())["_fingerprint"]
    removed = _removed(tmp_path / "out")
    assert [(r["id"], r["step"]) for r in removed] == [(r["id"], r["step"]) for r in _removed(tmp_path / "jsonl")]
    assert all(r["file"].startswith("saved/data-") and "record_batch" in r for r in removed)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["removed.jsonl", "report.json", "saved"]


def test_a_dataset_dict_and_a_folder_without_parquet_are_refused_in_one_line(tmp_path):
    import datasets

    splits = tmp_path / "splits"
    datasets.DatasetDict({"train": datasets.Dataset.from_dict({"text": ["a", "b"]})}).save_to_disk(str(splits))
    with pytest.raises(UserError, match=r"splits: a saved DatasetDict.*fix: name one split's folder"):
        clean([splits], tmp_path / "out", exact=True, progress=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="empty: a folder with no .parquet file in it, nor a JSONL one; fix:"):
        clean([tmp_path / "empty"], tmp_path / "out", exact=True, progress=False)
    assert not (tmp_path / "out").exists()


def test_cli_reads_parquet_and_says_what_it_kept(inputs, tmp_path):
    jsonl, parquet = inputs
    result = subprocess.run([sys.executable, "-m", "helpers.clean", "--input", str(jsonl.parent / "*.parquet"),
                             "--output-dir", str(tmp_path / "out"), "--exact", "--workers", "2", "--no-progress"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "docs.parquet: 14 records -> 13 kept (exact -1)" in result.stdout
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["docs.parquet", "removed.jsonl", "report.json"]
