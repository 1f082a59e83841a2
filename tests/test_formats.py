"""npy and shard layouts: same tokens as the indexed form, and back again."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.errors import UserError
from helpers.formats import indexed_to_npy, indexed_to_shards, npy_to_indexed, read_shards, shards_to_indexed
from helpers.indexed import IndexedDataset, IndexedWriter, bin_path, idx_path

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
