"""Parquet and Arrow into preprocessing: a Parquet file, a folder of them, a glob of them, or a dataset saved
by Hugging Face `datasets` gives the bytes the same records give as JSONL, whatever the parts and the
engine (parts cut at row groups or record batches, merged in order); only the text columns are read; a
bad value names its file, group and row."""

from __future__ import annotations

import hashlib
import json

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers.common.errors import UserError
from helpers.corpus import columnar
from helpers.corpus.inputs import open_input
from helpers.datasets.indexed import bin_path, idx_path
from helpers.preprocess import preprocess

KEYS = ("text", "title")


def hashes(prefix) -> tuple[str, str]:
    return (hashlib.sha256(bin_path(prefix).read_bytes()).hexdigest(),
            hashlib.sha256(idx_path(prefix).read_bytes()).hexdigest())


def run(path, prefix, **options):
    return preprocess(path, prefix, "llama3", KEYS, append_eod=True, progress=False, **options)


@pytest.fixture(scope="module")
def inputs(corpus_dir, tmp_path_factory):
    """The docs domain of the real corpus as JSONL, as one Parquet file (row groups of 10 rows), as a
    folder of two (row groups of 7 and 13) and as a dataset saved in 3 Arrow shards, each with a column
    nobody reads; and the JSONL run's outputs."""
    folder = tmp_path_factory.mktemp("parquet")
    records = [json.loads(line) for line in (corpus_dir / "docs.jsonl").read_text(encoding="utf-8").splitlines()]
    records[3]["text"] = ""  # an empty document, as JSONL has it
    jsonl = folder / "docs.jsonl"
    jsonl.write_text("".join(json.dumps({key: r[key] for key in KEYS}) + "\n" for r in records), encoding="utf-8")
    table = pa.table({"id": [str(i) for i in range(len(records))], "title": [r["title"] for r in records],
                      "text": [r["text"] for r in records], "unread": list(range(len(records)))})
    pq.write_table(table, folder / "docs.parquet", row_group_size=10)
    (folder / "shards").mkdir()
    pq.write_table(table.slice(0, 30), folder / "shards" / "part-0.parquet", row_group_size=7)
    pq.write_table(table.slice(30), folder / "shards" / "part-1.parquet", row_group_size=13)
    datasets.Dataset(table).save_to_disk(str(folder / "saved"), num_shards=3)
    return folder, run(jsonl, folder / "jsonl", workers=2)


@pytest.mark.parametrize("parts", [1, 2, 7])
@pytest.mark.parametrize("source", ["docs.parquet", "shards", "shards/*.parquet", "saved"])
def test_parquet_gives_the_bytes_of_the_same_records_as_jsonl(inputs, tmp_path, source, parts):
    folder, from_jsonl = inputs
    made = run(folder / source, tmp_path / "out", workers=max(2, parts), partitions=parts)
    for key in KEYS:
        assert hashes(made.outputs[key]) == hashes(from_jsonl.outputs[key])
    assert (made.documents, made.empty_documents, made.tokens) == (
        from_jsonl.documents, from_jsonl.empty_documents, from_jsonl.tokens)


@pytest.mark.parametrize("parts", [1, 2, 7])
@pytest.mark.parametrize("source", ["shards", "saved"])
def test_the_ray_engine_gives_the_same_bytes(ray_cluster, inputs, tmp_path, source, parts):
    folder, from_jsonl = inputs
    made = run(folder / source, tmp_path / "ray", partitions=parts, engine="ray")
    for key in KEYS:
        assert hashes(made.outputs[key]) == hashes(from_jsonl.outputs[key])


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("source", ["docs.parquet", "saved"])
def test_groups_read_by_the_worker_or_by_the_planner_give_the_same_bytes(inputs, tmp_path, monkeypatch, source,
                                                                          workers):
    folder, from_jsonl = inputs
    assert all(isinstance(task, columnar.GroupRef) for task in open_input(folder / source).batches(
        0, None, columns=KEYS, batch_bytes=1, refer=True))  # small groups: named, not read
    monkeypatch.setattr(columnar, "GROUP_TASK_BYTES", 0)  # every group too big to hand over: read in batches
    assert not any(isinstance(task, columnar.GroupRef) for task in open_input(folder / source).batches(
        0, None, columns=KEYS, batch_bytes=1, refer=True))
    made = run(folder / source, tmp_path / "out", workers=workers)
    for key in KEYS:
        assert hashes(made.outputs[key]) == hashes(from_jsonl.outputs[key])


def test_parts_cut_at_row_groups_with_about_equal_rows(inputs):
    folder, _ = inputs
    assert open_input(folder / "docs.parquet").plan(1) == [(0, 8)]  # 79 rows in groups of 10: 8 groups
    assert open_input(folder / "docs.parquet").plan(2) == [(0, 4), (4, 8)]
    assert open_input(folder / "docs.parquet").plan(20) == [(i, i + 1) for i in range(8)]  # never an empty part
    ranges = open_input(folder / "shards").plan(3)  # 30 rows in 5 groups, then 49 rows in 4
    assert ranges[0][0] == 0 and ranges[-1][1] == 5 + 4 and len(ranges) == 3
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))


def test_only_the_text_columns_are_read_in_batches_that_know_their_rows(inputs):
    folder, _ = inputs
    batches = list(open_input(folder / "shards").batches(0, None, columns=("text",), batch_bytes=1))
    assert all(set(b.columns) == {"text"} for b in batches)
    assert sum(len(b.columns["text"]) for b in batches) == 79
    second_file = [b for b in batches if b.source.endswith("part-1.parquet")]
    assert second_file[0].first_row == 0 and second_file[0].group == "row group 0"
    assert second_file[1].location(2) == f"{second_file[1].source}: row 15 (row group 1)"


def test_a_null_is_skipped_and_counted_when_asked(tmp_path):
    pq.write_table(pa.table({"text": ["one", None, "three"]}), tmp_path / "in.parquet")
    for workers in (1, 2):  # read by this process, and by a worker
        with pytest.raises(UserError, match=r"in.parquet: row 1 \(row group 0\): column 'text' is null"):
            preprocess(tmp_path / "in.parquet", tmp_path / "out", "bytes", workers=workers, progress=False)
    made = preprocess(tmp_path / "in.parquet", tmp_path / "out", "bytes", skip_bad_records=True, progress=False)
    assert made.documents == 2 and made.skipped == {"null value": 1}


def test_saved_datasets_are_read_as_their_state_lists_them_or_refused_in_one_line(inputs, tmp_path):
    folder, _ = inputs
    assert open_input(folder / "saved").plan(7) == [(0, 1), (1, 2), (2, 3)]  # one record batch per shard
    splits = tmp_path / "splits"
    datasets.DatasetDict({"train": datasets.Dataset.from_dict({"text": ["a"]})}).save_to_disk(str(splits))
    with pytest.raises(UserError, match="DatasetDict.*fix: name one split's folder"):
        preprocess(splits, tmp_path / "out", "bytes", progress=False)
    broken = tmp_path / "broken"
    datasets.Dataset.from_dict({"text": ["a", "b"]}).save_to_disk(str(broken))
    arrow = next(broken.glob("*.arrow"))
    arrow.write_bytes(arrow.read_bytes()[:40])
    with pytest.raises(UserError, match=r"\.arrow: .*fix: copy or write"):
        preprocess(broken, tmp_path / "out", "bytes", progress=False)
    arrow.unlink()
    with pytest.raises(UserError, match="listed in state.json but missing"):
        preprocess(broken, tmp_path / "out", "bytes", progress=False)
    with pytest.raises(UserError, match="matches nothing"):
        preprocess(tmp_path / "nowhere" / "*.parquet", tmp_path / "out", "bytes", progress=False)
    assert not list(tmp_path.glob("out*"))


def test_the_corpus_written_as_parquet_shards_gives_the_bytes_of_its_jsonl(corpus_dir, tmp_path):
    from helpers.corpus.parquet_shards import parquet_folder, write_parquet_shards

    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_bytes((corpus_dir / "docs.jsonl").read_bytes())
    (parquet_folder(jsonl) / "part-00009.parquet").parent.mkdir(parents=True)
    (parquet_folder(jsonl) / "part-00009.parquet").write_bytes(b"left by an earlier run")
    shards = write_parquet_shards(jsonl, rows_per_file=30, rows_per_group=8)
    assert [p.name for p in shards] == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    assert sorted(parquet_folder(jsonl).iterdir()) == shards  # the stale shard is gone, no temporary is left
    assert pq.ParquetFile(shards[0]).metadata.num_row_groups == 4  # 30 rows in groups of 8
    from_jsonl = preprocess(jsonl, tmp_path / "jsonl", "llama3", append_eod=True, progress=False)
    from_shards = preprocess(parquet_folder(jsonl), tmp_path / "shards", "llama3", append_eod=True, workers=2,
                             partitions=2, progress=False)
    assert hashes(from_shards.outputs["text"]) == hashes(from_jsonl.outputs["text"])
