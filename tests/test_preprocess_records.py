"""Record-level rules of preprocessing: what a JSONL line may hold, how lines are cut, and ids that must fit."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from megatron_reference import core, megatron_preprocess

from helpers.common.errors import UserError
from helpers.corpus.build import read_jsonl
from helpers.datasets.indexed import IndexedDataset, IndexedWriter, bin_path, idx_path
from helpers.preprocess import preprocess
from helpers.preprocess import workers as preprocess_workers
from helpers.tokenizers.token_dtype import optimal_dtype
from helpers.tokenizers.zoo import load_tokenizer

LONE_SURROGATE = b'{"text": "ok"}\n{"text": "lone \\ud800 surrogate"}\n'


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "helpers.preprocess", *map(str, args)], capture_output=True, text=True)


def pair_bytes(prefix):
    return idx_path(prefix).read_bytes(), bin_path(prefix).read_bytes()


@pytest.fixture(scope="module")
def llama3_folder(tmp_path_factory):
    return load_tokenizer("llama3").export(tmp_path_factory.mktemp("llama3"))


# ---------------------------------------------------------------- lone surrogates


@pytest.mark.parametrize("tokenizer", ["bytes", "mistral", "llama3"])
def test_lone_surrogate_is_one_line_naming_file_and_line(tmp_path, tokenizer):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(LONE_SURROGATE)
    result = run_cli("--input", path, "--output-prefix", tmp_path / "out", "--tokenizer", tokenizer,
                     "--workers", "1", "--no-progress")
    message = result.stderr.strip()
    assert result.returncode == 2 and "\n" not in message and "Traceback" not in message
    assert f"{path}:2:" in message and "lone surrogate" in message and "fix:" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


@pytest.mark.parametrize("tokenizer", ["bytes", "mistral", "llama3"])
def test_lone_surrogate_is_counted_under_skip_bad_records(tmp_path, tokenizer):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(LONE_SURROGATE + b'{"text": "pair \\ud83d\\ude00 is fine"}\n')
    summary = preprocess(path, tmp_path / "out", tokenizer, skip_bad_records=True, workers=1, progress=False)
    assert summary.skipped == {"lone surrogate": 1} and summary.documents == 2
    assert summary.first_skipped[0].startswith(f"{path}:2: ")
    ds = IndexedDataset(summary.outputs["text"])
    assert ds[1].tolist() == load_tokenizer(tokenizer).encode("pair \U0001F600 is fine")


def test_lone_surrogate_in_the_corpus_reader(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(LONE_SURROGATE)
    with pytest.raises(UserError, match=rf"{path}:2: .*lone surrogate.*fix:"):
        list(read_jsonl(path))


# ---------------------------------------------------------------- ids that do not fit


@pytest.mark.parametrize("add", [
    lambda w: w.add_documents(np.array([70_000]), np.array([1])),
    lambda w: w.add_documents(np.array([5, -1]), np.array([2])),
    lambda w: w.add_document(np.array([1, 70_000])),
    lambda w: w.add_document([70_000]),
    lambda w: w.add_sequences([np.array([3]), np.array([65_536])]),
])
def test_writer_refuses_ids_its_dtype_cannot_hold(tmp_path, add):
    writer = IndexedWriter(tmp_path / "d", np.uint16)
    with pytest.raises(UserError, match=r"(70000|-1|65536).*uint16.*fix:"):
        add(writer)
    writer.abort()
    assert list(tmp_path.iterdir()) == []


def test_writer_takes_ids_at_the_edges_of_its_dtype(tmp_path):
    with IndexedWriter(tmp_path / "d", np.uint16) as writer:
        writer.add_documents(np.array([0, 65_535], dtype=np.int64), np.array([2]))
        writer.add_document([])
        writer.finalize()
    ds = IndexedDataset(tmp_path / "d")
    assert ds.tokens.tolist() == [0, 65_535] and ds.document_count == 2


def test_writer_refuses_ids_that_are_not_integers(tmp_path):
    writer = IndexedWriter(tmp_path / "d", np.int32)
    with pytest.raises(UserError, match="float64.*fix:"):
        writer.add_documents(np.array([1.5]), np.array([1]))
    writer.abort()


class OutOfVocabulary:
    """A tokenizer whose encoder returns an id past its own vocabulary."""

    vocab_size, eod_id, special_tokens = 100, 0, {}

    def encode(self, text, parse_special=False):
        return [1, 70_000]


def test_preprocessing_refuses_ids_outside_the_vocabulary(monkeypatch):
    settings = preprocess_workers.RunSettings(tokenizer="fake", json_keys=("text",), append_eod=True, parse_special=False,
                                              skip_bad_records=False, dtype="uint16")
    monkeypatch.setattr(preprocess_workers, "_worker", preprocess_workers.WorkerState(settings, OutOfVocabulary(), None))
    with pytest.raises(UserError, match=r"70000.*vocabulary of 100.*fix:"):
        preprocess_workers._encode_batch(("in.jsonl", 1, [b'{"text": "a"}\n']))


def test_optimal_dtype_of_an_unknown_vocabulary_is_megatrons():
    assert optimal_dtype(None) == np.dtype(core().indexed_dataset.DType.optimal_dtype(None)) == np.dtype(np.int32)


# ---------------------------------------------------------------- --json-keys


def test_a_key_named_twice_is_refused_before_anything_is_written(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"text": "a"}\n')
    with pytest.raises(UserError, match="'text' named twice.*fix:"):
        preprocess(path, tmp_path / "out", "bytes", ("text", "text"), progress=False)
    result = run_cli("--input", path, "--output-prefix", tmp_path / "cli", "--tokenizer", "bytes",
                     "--json-keys", "text", "text", "--no-progress")
    assert result.returncode == 2 and "named twice" in result.stderr and "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


# ---------------------------------------------------------------- byte order mark and line ends


def test_a_bom_at_the_start_of_the_file_is_skipped(tmp_path):
    plain, marked = tmp_path / "plain.jsonl", tmp_path / "marked.jsonl"
    plain.write_bytes(b'{"text": "first"}\n{"text": "second"}\n')
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    a = preprocess(plain, tmp_path / "a", "bytes", progress=False)
    b = preprocess(marked, tmp_path / "b", "bytes", progress=False)
    assert pair_bytes(a.outputs["text"]) == pair_bytes(b.outputs["text"])
    assert [r["text"] for r in read_jsonl(marked)] == ["first", "second"]


def test_a_bom_inside_the_file_is_named_as_such(tmp_path):
    path = tmp_path / "joined.jsonl"
    path.write_bytes(b'{"text": "first"}\n\xef\xbb\xbf{"text": "second"}\n')
    result = run_cli("--input", path, "--output-prefix", tmp_path / "out", "--tokenizer", "bytes", "--no-progress")
    assert result.returncode == 2 and f"{path}:2:" in result.stderr and "BOM" in result.stderr
    assert "fix:" in result.stderr and "one JSON object per line" not in result.stderr
    with pytest.raises(UserError, match=f"{path}:2: .*BOM"):
        list(read_jsonl(path))


LINE_ENDS = b'{"text": "one"}\r{"text": "two"}\r\n{"text": "three"}\n{"text": "four"}\r{"text": "five"}'


def test_a_bare_cr_ends_a_line_as_in_megatrons_reader(tmp_path, llama3_folder):
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(LINE_ENDS)
    theirs = megatron_preprocess(str(path), str(tmp_path / "theirs"), str(llama3_folder))
    ours = preprocess(path, tmp_path / "ours", "llama3", append_eod=True, progress=False)
    assert pair_bytes(ours.outputs["text"]) == pair_bytes(theirs)
    assert IndexedDataset(ours.outputs["text"]).document_count == 5
    assert [r["text"] for r in read_jsonl(path)] == ["one", "two", "three", "four", "five"]


def test_a_bad_record_after_a_bare_cr_is_named_by_line_and_place(tmp_path):
    path = tmp_path / "mac.jsonl"
    path.write_bytes(b'{"text": "a"}\n{"text": "b"}\r{"text": 7}\r')
    result = run_cli("--input", path, "--output-prefix", tmp_path / "out", "--tokenizer", "bytes", "--no-progress")
    assert result.returncode == 2 and f"{path}:2 (record 2 of the line, after a bare CR):" in result.stderr


# ---------------------------------------------------------------- a list of strings, as Megatron reads it


LISTS = [["First sentence.", " Second one."], [], ["", ""], ["only one"], ["", "after an empty one", ""],
         "a plain string", ""]


def test_a_list_of_strings_gives_megatrons_sequences(tmp_path, llama3_folder):
    path = tmp_path / "lists.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in LISTS))
    theirs = megatron_preprocess(str(path), str(tmp_path / "theirs"), str(llama3_folder))
    ours = preprocess(path, tmp_path / "ours", "llama3", append_eod=True, workers=2, progress=False)
    assert pair_bytes(ours.outputs["text"]) == pair_bytes(theirs)
    ds = IndexedDataset(ours.outputs["text"])
    assert ds.document_count == len(LISTS) and np.diff(ds.document_indices).tolist() == [2, 0, 0, 1, 1, 1, 0]
    tokenizer = load_tokenizer("llama3")
    assert ds[1].tolist() == tokenizer.encode(" Second one.") + [tokenizer.eod_id]


@pytest.mark.parametrize("value, problem", [([1, "a"], "item 0 is a JSON number"), ({"a": 1}, "JSON object")])
def test_a_list_holding_something_else_is_a_bad_record(tmp_path, value, problem):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"text": "fine"}) + "\n" + json.dumps({"text": value}) + "\n")
    with pytest.raises(UserError, match=rf"{path}:2: field 'text' .*{problem}.*fix:"):
        preprocess(path, tmp_path / "out", "bytes", progress=False)
    summary = preprocess(path, tmp_path / "out", "bytes", skip_bad_records=True, progress=False)
    assert summary.skipped == {"non-string value": 1}


# ---------------------------------------------------------------- a field named twice in one record


def test_a_field_named_twice_in_a_record_is_a_bad_record(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"text": "fine", "meta": {"text": 1}}\n{"text": "one", "id": 2, "text": "two"}\n')
    with pytest.raises(UserError, match=rf"{path}:2: field 'text' appears twice.*fix:"):
        preprocess(path, tmp_path / "out", "bytes", progress=False)
    with pytest.raises(UserError, match=rf"{path}:2: field 'text' appears twice"):
        list(read_jsonl(path))
    summary = preprocess(path, tmp_path / "out", "bytes", skip_bad_records=True, progress=False)
    assert summary.skipped == {"duplicate field": 1} and summary.documents == 1
