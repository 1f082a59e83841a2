"""The Megatron indexed format: our writer and reader, against megatron-core 0.16.1 in both directions."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.common.errors import UserError
from helpers.datasets.indexed import (
    DTYPE_CODES,
    HEADER,
    IndexedDataset,
    IndexedWriter,
    IndexFormatError,
    bin_path,
    fingerprint,
    idx_path,
    merge,
)
from helpers.tokenizers.token_dtype import optimal_dtype
from megatron_reference import core

TOKEN_DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.int64, np.uint16]


def write_ours(prefix, documents, dtype):
    with IndexedWriter(prefix, dtype) as writer:
        for ids in documents:
            writer.add_document(ids)
        writer.finalize()


def write_megatrons(prefix, documents, dtype):
    """What Megatron's preprocess_data.py does per document: add_document(ids, [len] or [])."""
    builder = core().indexed_dataset.IndexedDatasetBuilder(str(bin_path(prefix)), dtype=dtype)
    for ids in documents:
        builder.add_document(torch.tensor(ids, dtype=torch.int64), [len(ids)] if len(ids) else [])
    builder.finalize(str(idx_path(prefix)))


DOCUMENTS = [[9906, 1917, 13, 128001], [], [1, 2, 3], [7] * 1000, [], [128000]]


def test_header_layout_by_hand(tmp_path):
    write_ours(tmp_path / "x", [[5, 6], [], [7]], np.int32)
    raw = idx_path(tmp_path / "x").read_bytes()
    assert raw[:9] == b"MMIDIDX\x00\x00"
    assert struct.unpack("<Q", raw[9:17]) == (1,)
    assert raw[17] == 4  # int32 is code 4
    assert struct.unpack("<QQ", raw[18:34]) == (2, 4)  # 2 sequences, 3 documents + 1
    assert np.frombuffer(raw, "<i4", 2, 34).tolist() == [2, 1]
    assert np.frombuffer(raw, "<i8", 2, 42).tolist() == [0, 8]
    assert np.frombuffer(raw, "<i8", 4, 58).tolist() == [0, 1, 1, 2]
    assert len(raw) == 58 + 32
    assert bin_path(tmp_path / "x").read_bytes() == np.array([5, 6, 7], np.int32).tobytes()


def test_dtype_codes_match_megatron():
    for code, dtype in DTYPE_CODES.items():
        assert core().indexed_dataset.DType.code_from_dtype(dtype) == code
    for vocab in (258, 32_000, 65_499, 65_500, 100_277, 128_256):
        assert optimal_dtype(vocab) == np.dtype(core().indexed_dataset.DType.optimal_dtype(vocab))


@pytest.mark.parametrize("dtype", [np.uint16, np.int32])
def test_byte_identical_to_megatron_builder(tmp_path, dtype):
    documents = [[i % 30_000 for i in d] for d in DOCUMENTS]
    write_ours(tmp_path / "ours", documents, dtype)
    write_megatrons(tmp_path / "theirs", documents, dtype)
    assert idx_path(tmp_path / "ours").read_bytes() == idx_path(tmp_path / "theirs").read_bytes()
    assert bin_path(tmp_path / "ours").read_bytes() == bin_path(tmp_path / "theirs").read_bytes()


def test_megatron_reads_ours_and_we_read_megatrons(tmp_path):
    write_ours(tmp_path / "ours", DOCUMENTS, np.int32)
    write_megatrons(tmp_path / "theirs", DOCUMENTS, np.int32)
    theirs_reading_ours = core().indexed_dataset.IndexedDataset(str(tmp_path / "ours"))
    ours_reading_theirs = IndexedDataset(tmp_path / "theirs")
    nonempty = [d for d in DOCUMENTS if d]
    assert len(theirs_reading_ours) == len(ours_reading_theirs) == len(nonempty)
    for i, ids in enumerate(nonempty):
        assert theirs_reading_ours[i].tolist() == ids == ours_reading_theirs[i].tolist()
        if len(ids) >= 2:
            assert theirs_reading_ours.get(i, 1, 1).tolist() == ids[1:2] == ours_reading_theirs.get(i, 1, 1).tolist()
    np.testing.assert_array_equal(theirs_reading_ours.document_indices, ours_reading_theirs.document_indices)
    np.testing.assert_array_equal(theirs_reading_ours.sequence_lengths, ours_reading_theirs.sequence_lengths)
    assert ours_reading_theirs.document_count == len(DOCUMENTS)


documents_strategy = st.lists(st.lists(st.integers(0, 127), max_size=50), max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(documents=documents_strategy, dtype=st.sampled_from(TOKEN_DTYPES))
def test_round_trip_any_documents_any_dtype(tmp_path_factory, documents, dtype):
    prefix = tmp_path_factory.mktemp("rt") / "d"
    write_ours(prefix, documents, dtype)
    ds = IndexedDataset(prefix)
    assert ds.dtype == np.dtype(dtype) and ds.document_count == len(documents)
    assert [ds.document(d).tolist() for d in range(len(documents))] == documents
    assert ds.num_tokens == sum(map(len, documents))
    assert bin_path(prefix).stat().st_size == ds.num_tokens * np.dtype(dtype).itemsize


def test_batch_add_equals_one_by_one(tmp_path):
    write_ours(tmp_path / "one", DOCUMENTS, np.int32)
    with IndexedWriter(tmp_path / "batch", np.int32) as writer:
        writer.add_documents(np.concatenate([np.array(d, np.int64) for d in DOCUMENTS]), [len(d) for d in DOCUMENTS])
        writer.finalize()
    for path in (idx_path, bin_path):
        assert path(tmp_path / "one").read_bytes() == path(tmp_path / "batch").read_bytes()


def test_merge_equals_writing_everything_at_once(tmp_path):
    write_ours(tmp_path / "a", DOCUMENTS[:3], np.int32)
    write_ours(tmp_path / "b", DOCUMENTS[3:], np.int32)
    write_ours(tmp_path / "all", DOCUMENTS, np.int32)
    merge([tmp_path / "a", tmp_path / "b"], tmp_path / "merged")
    for path in (idx_path, bin_path):
        assert path(tmp_path / "merged").read_bytes() == path(tmp_path / "all").read_bytes()
    # megatron-core's own merge (add_index) agrees
    builder = core().indexed_dataset.IndexedDatasetBuilder(str(tmp_path / "m.bin"), dtype=np.int32)
    builder.add_index(str(tmp_path / "a"))
    builder.add_index(str(tmp_path / "b"))
    builder.finalize(str(tmp_path / "m.idx"))
    assert (tmp_path / "m.idx").read_bytes() == idx_path(tmp_path / "all").read_bytes()


def test_merge_refuses_mixed_dtypes(tmp_path):
    write_ours(tmp_path / "a", DOCUMENTS[:2], np.int32)
    write_ours(tmp_path / "b", [[1, 2]], np.uint16)
    with pytest.raises(UserError, match="dtype"):
        merge([tmp_path / "a", tmp_path / "b"], tmp_path / "m")
    assert not idx_path(tmp_path / "m").exists() and not bin_path(tmp_path / "m").exists()


def test_interrupted_write_leaves_nothing_and_keeps_the_old_pair(tmp_path):
    write_ours(tmp_path / "d", [[1, 2, 3]], np.int32)
    before = idx_path(tmp_path / "d").read_bytes(), bin_path(tmp_path / "d").read_bytes()
    with pytest.raises(KeyboardInterrupt):
        with IndexedWriter(tmp_path / "d", np.int32) as writer:
            writer.add_document([9, 9])
            raise KeyboardInterrupt
    assert (idx_path(tmp_path / "d").read_bytes(), bin_path(tmp_path / "d").read_bytes()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.bin", "d.idx"]


def _bytes_read_by_this_process() -> int:
    """Bytes this process has read with read() calls so far (Linux); memory-mapped pages do not count."""
    line = next(l for l in open("/proc/self/io") if l.startswith("rchar:"))
    return int(line.split()[1])


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux's /proc/self/io")
def test_reader_opens_without_reading_the_data(tmp_path):
    prefix = tmp_path / "big"
    with IndexedWriter(prefix, np.uint16) as writer:
        writer.add_documents(np.zeros(50_000_000, np.uint16), np.full(50_000, 1000))
        writer.finalize()
    before = _bytes_read_by_this_process()
    ds = IndexedDataset(prefix)
    assert len(ds) == 50_000 and ds[49_999].shape == (1000,)
    assert _bytes_read_by_this_process() - before < 64 * 1024  # the header, not the 100 MB .bin


@pytest.mark.parametrize("damage, message", [
    (lambda raw: b"NOTMAGIC!" + raw[9:], "magic"),
    (lambda raw: raw[:9] + struct.pack("<Q", 2) + raw[17:], "version"),
    (lambda raw: raw[:17] + bytes([9]) + raw[18:], "dtype code 9"),
    (lambda raw: raw[:-8], "need"),
    (lambda raw: raw[:20], "shorter than"),
])
def test_damaged_index_is_a_one_line_error(tmp_path, damage, message):
    write_ours(tmp_path / "d", DOCUMENTS, np.int32)
    path = idx_path(tmp_path / "d")
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(IndexFormatError, match=message) as err:
        IndexedDataset(tmp_path / "d")
    assert str(path) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("pointer", [-4, 10**9])
def test_a_pointer_outside_the_bin_is_a_one_line_error_when_read(tmp_path, pointer):
    write_ours(tmp_path / "d", DOCUMENTS, np.int32)
    path = idx_path(tmp_path / "d")
    raw = bytearray(path.read_bytes())
    count = struct.unpack_from("<Q", raw, 18)[0]
    struct.pack_into("<q", raw, HEADER.size + 4 * count + 8, pointer)  # the second sequence's pointer
    path.write_bytes(bytes(raw))
    dataset = IndexedDataset(tmp_path / "d")
    assert dataset[0].tolist() == list(DOCUMENTS[0])
    with pytest.raises(IndexFormatError, match="sequence 1 points at bytes") as err:
        dataset[1]
    assert str(bin_path(tmp_path / "d")) in str(err.value) and "helpers.check" in str(err.value)


def test_missing_files_name_the_prefix(tmp_path):
    with pytest.raises(IndexFormatError, match="no such file"):
        IndexedDataset(tmp_path / "absent")


def test_fingerprint_sees_a_same_size_rewrite_and_survives_a_copy(tmp_path):
    from helpers.check.damage import copy_dataset, write_token

    write_ours(tmp_path / "a", DOCUMENTS, np.int32)
    before = fingerprint(tmp_path / "a")
    copy = copy_dataset(tmp_path / "a", tmp_path / "elsewhere" / "b")  # new path, new mtime, same bytes
    os.utime(bin_path(copy), ns=(1, 1))
    assert fingerprint(copy) == before
    write_token(copy, 1, 12345)  # the same size, other tokens
    assert fingerprint(copy) != before


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux's /proc/self/io")
def test_fingerprint_reads_a_bounded_sample(tmp_path):
    prefix = tmp_path / "many"
    with IndexedWriter(prefix, np.uint16) as writer:  # a 24 MB .idx: two million one-token documents
        writer.add_documents(np.ones(2_000_000, np.uint16), np.ones(2_000_000, np.int64))
        writer.finalize()
    before = _bytes_read_by_this_process()
    fingerprint(prefix)
    assert _bytes_read_by_this_process() - before < 4 << 20


def test_a_rewrite_killed_between_its_two_moves_leaves_no_prefix_that_looks_valid(tmp_path, monkeypatch):
    """finalize removes the old .idx before the new .bin moves in: a crash between the two moves leaves a
    .bin without an .idx (refused as missing), never the new .bin beside the old .idx (read as valid)."""
    from helpers.datasets import indexed

    prefix = tmp_path / "rewritten"
    write_ours(prefix, [np.arange(5), np.arange(7)], np.int32)
    moves, really_replace = [], os.replace

    def replace_then_die(source, destination):
        moves.append(destination)
        if str(destination).endswith(".idx"):
            raise KeyboardInterrupt  # killed before the index moved in
        really_replace(source, destination)

    monkeypatch.setattr(indexed.os, "replace", replace_then_die)
    with pytest.raises(KeyboardInterrupt):
        write_ours(prefix, [np.arange(3)] * 4, np.int32)
    monkeypatch.undo()
    assert [str(m)[-4:] for m in moves] == [".bin", ".idx"]
    assert bin_path(prefix).exists() and not idx_path(prefix).exists()
    with pytest.raises(IndexFormatError, match="no such file"):
        IndexedDataset(prefix)
