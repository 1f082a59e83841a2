"""Notebook 03's check of `read_idx` fails on the likely wrong readings of an `.idx` and passes the worked answer."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from helpers.datasets.indexed import idx_path
from helpers.preprocess import preprocess
from helpers.workshop.exercises.idx_reading import expected_idx
from helpers.workshop.your_turn import check


@pytest.fixture(scope="module")
def docs_prefix(corpus_dir, tmp_path_factory):
    """The docs domain as notebook 02 writes it (llama3, an EOD after each document), which 03's check reads."""
    made = preprocess(corpus_dir / "docs.jsonl", tmp_path_factory.mktemp("docs-llama3") / "docs", "llama3",
                      append_eod=True, workers=1, progress=False)
    return made.outputs["text"]


def read_idx(path, mistake=None):
    """The worked solution of 03, with one learner's mistake switched on by name."""
    raw = path.read_bytes()
    version = struct.unpack("<Q", raw[9:17])[0]
    dtype_code = struct.unpack("<B", raw[17:18])[0]
    sequences = struct.unpack("<Q", raw[18:26])[0]
    document_index_count = struct.unpack("<Q", raw[26:34])[0]
    lengths = np.frombuffer(raw, dtype="<i4", count=sequences, offset=34)
    pointers = np.frombuffer(raw, dtype="<i8", count=sequences, offset=34 + 4 * sequences)
    indices_count, indices_offset = document_index_count, 34 + 12 * sequences
    if mistake == "pointers in tokens":
        pointers = np.concatenate([[0], np.cumsum(lengths[:-1], dtype=np.int64)])
    elif mistake == "pointers after 8-byte lengths":
        pointers = np.frombuffer(raw, dtype="<i8", count=sequences, offset=34 + 8 * sequences)
    elif mistake == "documents, not document indices":
        document_index_count -= 1
    elif mistake == "one document index too few":
        indices_count = sequences
    elif mistake == "document indices one entry late":
        indices_offset += 8
        indices_count -= 1
    elif mistake == "dtype code as bytes":
        dtype_code = raw[17:18]
    elif mistake == "dtype code one byte early":
        dtype_code = raw[16]
    elif mistake == "dtype code as u64":
        dtype_code = struct.unpack("<Q", raw[17:25])[0]
    elif mistake == "dtype instead of its code":
        dtype_code = np.dtype("int32")
    indices = np.frombuffer(raw, dtype="<i8", count=indices_count, offset=indices_offset)
    return {"magic": raw[:9], "version": version, "dtype_code": dtype_code, "sequences": sequences,
            "document_index_count": document_index_count, "sequence_lengths": lengths,
            "sequence_pointers": pointers, "document_indices": indices}


MISTAKES = ["pointers in tokens", "pointers after 8-byte lengths", "documents, not document indices",
            "one document index too few", "document indices one entry late", "dtype code as bytes",
            "dtype code one byte early", "dtype code as u64", "dtype instead of its code"]


@pytest.mark.parametrize("mistake", MISTAKES)
def test_the_check_fails_on_a_likely_wrong_reading(docs_prefix, mistake, capsys):
    answer = read_idx(idx_path(docs_prefix), mistake)
    assert check("read_idx", answer, expected_idx(docs_prefix), solution="s") is False
    assert capsys.readouterr().out.startswith("differs: read_idx")


def test_the_check_passes_the_worked_answer(docs_prefix, capsys):
    assert check("read_idx", read_idx(idx_path(docs_prefix)), expected_idx(docs_prefix), solution="s") is True
    assert capsys.readouterr().out == "pass: read_idx matches helpers\n"
