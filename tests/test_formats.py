"""npy and shard layouts: same tokens as the indexed form, and back again."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.common.errors import UserError
from helpers.datasets.formats import indexed_to_npy, indexed_to_shards, npy_to_indexed, read_shards, shards_to_indexed
from helpers.datasets.indexed import IndexedDataset, IndexedWriter, bin_path, idx_path

EOD = 9


def write(prefix, documents, dtype=np.uint16):
    with IndexedWriter(prefix, dtype) as writer:
        for d in documents:
            writer.add_document(d)
        writer.finalize()


documents_strategy = st.lists(st.lists(st.integers(0, 8), max_size=20).map(lambda d: d + [EOD]), min_size=1, max_size=25)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(documents=documents_strategy)
def test_npy_round_trip(tmp_path_factory, documents):
    folder = tmp_path_factory.mktemp("npy")
    write(folder / "a", documents)
    npy = indexed_to_npy(folder / "a", folder / "a.npy", eod_id=EOD)
    flat = np.load(npy, mmap_mode="r")
    assert flat.dtype == np.uint16 and flat.tolist() == [t for d in documents for t in d]
    sidecar = json.loads((folder / "a.npy.json").read_text())
    assert sidecar["tokens"] == flat.size and sidecar["eod_id"] == EOD and sidecar["documents"] == len(documents)
    npy_to_indexed(npy, folder / "b", EOD)
    for path in (idx_path, bin_path):
        assert path(folder / "a").read_bytes() == path(folder / "b").read_bytes()


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(documents=documents_strategy, per_shard=st.integers(1, 40), val=st.sampled_from([0.0, 0.1, 0.5]))
def test_shards_round_trip(tmp_path_factory, documents, per_shard, val):
    folder = tmp_path_factory.mktemp("shards")
    write(folder / "a", documents)
    out = indexed_to_shards(folder / "a", folder / "shards", per_shard, val_fraction=val, dtype=np.uint32, eod_id=EOD)
    meta = json.loads((out / "dataset_metadata.json").read_text())
    flat = [t for d in documents for t in d]
    assert meta["tokens"] == len(flat) and meta["dtype"] == "uint32"
    assert all(s["tokens"] <= per_shard for s in meta["shards"])
    assert np.concatenate(read_shards(out)).tolist() == flat
    assert len(read_shards(out, "val")) == meta["val_shards"] and len(read_shards(out, "train")) == meta["train_shards"]
    shards_to_indexed(out, folder / "b", EOD, np.uint16)
    for path in (idx_path, bin_path):
        assert path(folder / "a").read_bytes() == path(folder / "b").read_bytes()


def test_shards_refuse_a_dtype_too_small(tmp_path):
    write(tmp_path / "a", [[70_000, EOD]], np.int32)
    with pytest.raises(UserError, match="cannot hold"):
        indexed_to_shards(tmp_path / "a", tmp_path / "s", 10, dtype=np.uint16)
    assert not (tmp_path / "s").exists()


def test_preprocess_cli_writes_each_layout(tmp_path):
    import subprocess
    import sys

    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text("".join(json.dumps({"text": f"document number {i}"}) + "\n" for i in range(30)))
    run = [sys.executable, "-m", "helpers.preprocess", "--input", str(jsonl), "--tokenizer", "llama3",
           "--append-eod", "--no-progress", "--output-prefix"]
    subprocess.run(run + [str(tmp_path / "m")], check=True, capture_output=True)
    subprocess.run(run + [str(tmp_path / "n"), "--format", "npy"], check=True, capture_output=True)
    subprocess.run(run + [str(tmp_path / "s"), "--format", "shards", "--tokens-per-shard", "50",
                          "--shard-dtype", "uint32"], check=True, capture_output=True)
    indexed = IndexedDataset(tmp_path / "m_text_document")
    flat = np.concatenate([indexed[i] for i in range(len(indexed))])
    assert np.load(tmp_path / "n_text.npy").tolist() == flat.tolist()
    assert np.concatenate(read_shards(tmp_path / "s_text_shards")).tolist() == flat.tolist()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "m_text_document.bin", "m_text_document.idx",
                                                          "m_text_document.json", "n_text.npy", "n_text.npy.json",
                                                          "s_text_shards"]


# ---------------------------------------------------------------- exact or refused, over random data


def random_documents(rng):
    """Documents (each a list of sequences) that are mostly convertible, with now and then an empty one,
    one of two sequences, one without EOD at its end, or one with an EOD inside."""
    documents = []
    for _ in range(rng.integers(0, 10)):
        body = rng.integers(0, EOD, size=rng.integers(0, 7)).tolist()
        kind = rng.choice(["clean", "empty", "two sequences", "no EOD", "inner EOD"], p=[0.84, 0.04, 0.04, 0.04, 0.04])
        if kind == "empty":
            documents.append([])
        elif kind == "two sequences":
            documents.append([body + [1], [2, EOD]])
        elif kind == "no EOD":
            documents.append([body + [1]])
        elif kind == "inner EOD":
            documents.append([body + [EOD, 3, EOD]])
        else:
            documents.append([body + [EOD]])
    return documents


def write_sequences(prefix, documents, dtype):
    with IndexedWriter(prefix, dtype) as writer:
        for sequences in documents:
            writer.add_sequences(sequences)
            writer.end_document()
        writer.finalize()


def expected_refusal(documents):
    """What the conversion must refuse, checked rule by rule in the order the docs state them: the words
    its message holds and the first document concerned, or None when the round trip must be exact."""
    rules = [("empty", lambda d: not d), ("several sequences", lambda d: len(d) > 1),
             ("do not end with EOD", lambda d: d[0][-1] != EOD), ("inside documents", lambda d: EOD in d[0][:-1])]
    for words, breaks in rules:
        first = next((i for i, d in enumerate(documents) if breaks(d)), None)
        if first is not None:
            return words, first
    return None


@pytest.mark.parametrize("layout", ["npy", "shards"])
def test_conversions_are_exact_or_refused_with_the_reason(tmp_path, layout):
    outcomes = set()
    for seed in range(150):
        rng = np.random.default_rng(seed)
        documents = random_documents(rng)
        dtype = np.dtype(rng.choice([np.uint16, np.int32]))
        folder = tmp_path / str(seed)
        write_sequences(folder / "a", documents, dtype)
        out = folder / ("a.npy" if layout == "npy" else "shards")
        expected = expected_refusal(documents)
        try:
            if layout == "npy":
                indexed_to_npy(folder / "a", out, EOD)
                npy_to_indexed(out, folder / "b", EOD)
            else:
                per_shard, val = int(rng.integers(1, 30)), float(rng.choice([0.0, 0.3]))
                indexed_to_shards(folder / "a", out, per_shard, val_fraction=val, dtype=np.uint32, eod_id=EOD)
                shards_to_indexed(out, folder / "b", EOD, dtype)
        except UserError as err:
            assert expected is not None, f"seed {seed}: refused a convertible dataset: {err}"
            words, first = expected
            assert words in str(err) and f"document {first}" in str(err) and "fix:" in str(err), (seed, str(err))
            assert sorted(p.name for p in folder.iterdir()) == ["a.bin", "a.idx"], seed
            outcomes.add("refused")
            continue
        assert expected is None, f"seed {seed}: converted, though it must refuse ({expected})"
        for path in (idx_path, bin_path):
            assert path(folder / "a").read_bytes() == path(folder / "b").read_bytes(), seed
        claims = json.loads(Path(f"{out}.json" if layout == "npy" else out / "dataset_metadata.json").read_text())
        assert claims["documents"] == len(documents) and claims["eod_id"] == EOD
        assert claims["source"] == str(folder / "a")
        outcomes.add("exact")
    assert outcomes == {"exact", "refused"}  # the seeds reach both


def test_no_eod_id_is_refused(tmp_path):
    write(tmp_path / "a", [[1, 2, EOD]])
    with pytest.raises(UserError, match="no EOD id.*fix:"):
        indexed_to_npy(tmp_path / "a", tmp_path / "a.npy", None)
    with pytest.raises(UserError, match="no EOD id.*fix:"):
        indexed_to_shards(tmp_path / "a", tmp_path / "s", 10)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "a.idx"]


def test_shards_back_refuse_a_dtype_that_would_wrap(tmp_path):
    write(tmp_path / "a", [[70_000, EOD]], np.int32)
    out = indexed_to_shards(tmp_path / "a", tmp_path / "s", 10, dtype=np.uint32, eod_id=EOD)
    with pytest.raises(UserError, match="70000.*uint16"):
        shards_to_indexed(out, tmp_path / "b", EOD, np.uint16)
    with pytest.raises(UserError, match=f"EOD {EOD}, not 3"):
        shards_to_indexed(out, tmp_path / "b", 3, np.int32)


def test_old_shards_stay_until_the_new_ones_are_complete(tmp_path, monkeypatch):
    import helpers.datasets.formats as formats

    write(tmp_path / "a", [[1, 2, EOD], [3, EOD]])
    out = indexed_to_shards(tmp_path / "a", tmp_path / "s", 2, eod_id=EOD)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    write(tmp_path / "a", [[4, 5, 6, EOD]])

    def fail(path, content):
        raise OSError("disk full")

    monkeypatch.setattr(formats, "_write_json", fail)
    with pytest.raises(OSError, match="disk full"):
        indexed_to_shards(tmp_path / "a", out, 2, eod_id=EOD)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "a.idx", "s"]
    monkeypatch.undo()
    indexed_to_shards(tmp_path / "a", out, 2, eod_id=EOD)
    assert np.concatenate(read_shards(out)).tolist() == [4, 5, 6, EOD]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "a.idx", "s"]


def cli(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "helpers.preprocess", "--tokenizer", "bytes", "--no-progress",
                           *map(str, args)], capture_output=True, text=True)


@pytest.mark.parametrize("layout", ["npy", "shards"])
def test_preprocess_cli_refuses_a_layout_that_would_lose_documents(tmp_path, layout):
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text('{"text": "one"}\n{"text": ""}\n{"text": "three"}\n')
    without_eod = cli("--input", jsonl, "--output-prefix", tmp_path / "o", "--format", layout)
    assert without_eod.returncode == 2 and "needs --append-eod" in without_eod.stderr
    empty_text = cli("--input", jsonl, "--output-prefix", tmp_path / "o", "--format", layout, "--append-eod")
    message = empty_text.stderr.strip()
    assert empty_text.returncode == 2 and "\n" not in message and "Traceback" not in message
    assert f"{jsonl} ('text')" in message and "empty" in message and "document 1" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_preprocess_cli_sidecar_names_the_input(tmp_path):
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text('{"text": "one"}\n{"text": "two"}\n')
    assert cli("--input", jsonl, "--output-prefix", tmp_path / "n", "--format", "npy", "--append-eod").returncode == 0
    assert cli("--input", jsonl, "--output-prefix", tmp_path / "s", "--format", "shards", "--append-eod").returncode == 0
    sidecar = json.loads((tmp_path / "n_text.npy.json").read_text())
    metadata = json.loads((tmp_path / "s_text_shards" / "dataset_metadata.json").read_text())
    for claims in (sidecar, metadata):
        assert claims["source"] == str(jsonl) and claims["documents"] == 2 and claims["boundaries"]
