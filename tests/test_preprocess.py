"""Preprocessing: byte-identical to Megatron's loop, every bad input one clear line, nothing left behind."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import numpy as np
import pytest
from megatron_reference import megatron_preprocess

from helpers.datasets.indexed import IndexedDataset, bin_path, idx_path
from helpers.preprocess import preprocess
from helpers.tokenizers.zoo import load_tokenizer

VARIED = [
    "Hello world.", "", "x", "   leading spaces", "trailing\n\n\n", "tabs\tand\r\nwindows",
    "unicode: héllo 日本語 🤖 👩‍👩‍👧 e\u0301", "control \x00\x01\x1b[0m\x7f chars",
    "def f(x):\n    return x  # code\n", " ", "\n", "word " * 30_000, "🤖" * 3_000,
    "O, that this too too solid flesh would melt", "numbers 1234567 and 3.14159",
]


def write_jsonl(path, texts, key="text"):
    path.write_text("".join(json.dumps({key: t, "id": i}) + "\n" for i, t in enumerate(texts)), encoding="utf-8")
    return path


def pair_bytes(prefix):
    return idx_path(prefix).read_bytes(), bin_path(prefix).read_bytes()


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folders = {}
    for name in ("llama3", "mistral"):
        folders[name] = load_tokenizer(name).export(tmp_path_factory.mktemp(name))
    return folders


@pytest.mark.parametrize("encoder", ["fast", "reference"])
@pytest.mark.parametrize("name", ["llama3", "mistral"])
def test_byte_identical_to_megatron_on_varied_text(tmp_path, exported, name, encoder):
    jsonl = write_jsonl(tmp_path / "in.jsonl", VARIED)
    theirs = megatron_preprocess(str(jsonl), str(tmp_path / "theirs"), str(exported[name]))
    summary = preprocess(jsonl, tmp_path / "ours", name, workers=2, append_eod=True, progress=False, encoder=encoder)
    assert summary.encoder.startswith("fastokens" if encoder == "fast" else ("tiktoken", "sentencepiece"))
    assert pair_bytes(summary.outputs["text"]) == pair_bytes(theirs)
    ds = IndexedDataset(summary.outputs["text"])
    assert ds.dtype == (np.int32 if name == "llama3" else np.uint16)
    assert ds.document_count == len(VARIED) and len(ds) == len(VARIED) - 1  # the empty text: a boundary only
    tokenizer = load_tokenizer(name)
    assert ds[0].tolist() == tokenizer.encode("Hello world.") + [tokenizer.eod_id]  # no BOS, EOD last


def test_hugging_face_folder_gives_the_same_bytes_as_the_zoo_name(tmp_path, exported):
    jsonl = write_jsonl(tmp_path / "in.jsonl", VARIED)
    by_name = preprocess(jsonl, tmp_path / "a", "llama3", append_eod=True, progress=False)
    by_folder = preprocess(jsonl, tmp_path / "b", str(exported["llama3"]), append_eod=True, progress=False)
    assert pair_bytes(by_name.outputs["text"]) == pair_bytes(by_folder.outputs["text"])


def test_special_token_strings_text_by_default_megatron_with_the_flag(tmp_path, exported):
    texts = ["A tutorial that writes <|end_of_text|> in the middle.", "plain text"]
    jsonl = write_jsonl(tmp_path / "in.jsonl", texts)
    theirs = megatron_preprocess(str(jsonl), str(tmp_path / "theirs"), str(exported["llama3"]))
    default = preprocess(jsonl, tmp_path / "ours", "llama3", append_eod=True, progress=False)
    assert default.special_documents == 1
    assert pair_bytes(default.outputs["text"]) != pair_bytes(theirs)
    assert IndexedDataset(default.outputs["text"])[0].tolist().count(128001) == 1  # only the appended EOD
    parsed = preprocess(jsonl, tmp_path / "parsed", "llama3", append_eod=True, parse_special_tokens=True,
                        progress=False)
    assert pair_bytes(parsed.outputs["text"]) == pair_bytes(theirs)
    assert IndexedDataset(parsed.outputs["text"])[0].tolist().count(128001) == 2  # a silent mid-document EOD


def test_special_token_strings_are_counted_however_the_json_writes_them(tmp_path):
    """The count reads a line's bytes first: a special string written with escapes (`\\u003c|`) is still found."""
    lines = ['{"text": "writes <|end_of_text|> plainly"}', '{"text": "writes \\u003c|end_of_text|> escaped"}',
             '{"text": "\\u00e9 and no special string"}', '{"text": "none at all"}', '{"text": "<| alone"}']
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for encoder in ("fast", "reference"):
        made = preprocess(jsonl, tmp_path / encoder, "llama3", append_eod=True, progress=False, encoder=encoder)
        assert made.special_documents == 2


@pytest.mark.parametrize("encoder", ["fast", "reference"])
def test_corpus_domain_identical_to_megatron(tmp_path, exported, corpus_dir, encoder):
    docs = corpus_dir / "docs.jsonl"
    theirs = megatron_preprocess(str(docs), str(tmp_path / "theirs"), str(exported["llama3"]))
    ours = preprocess(docs, tmp_path / "ours", "llama3", workers=2, append_eod=True, progress=False, encoder=encoder)
    assert pair_bytes(ours.outputs["text"]) == pair_bytes(theirs)


def test_several_keys_gz_input_and_partitions(tmp_path):
    records = [{"text": f"document {i} " * (i % 7), "title": f"Title {i}"} for i in range(50)]
    plain = tmp_path / "in.jsonl"
    plain.write_text("".join(json.dumps(r) + "\n" for r in records))
    packed = tmp_path / "in.jsonl.gz"
    with gzip.open(packed, "wt") as handle:
        handle.write(plain.read_text())
    a = preprocess(plain, tmp_path / "a", "llama3", ("text", "title"), append_eod=True, progress=False)
    b = preprocess(packed, tmp_path / "b", "llama3", ("text", "title"), append_eod=True, progress=False)
    for key in ("text", "title"):
        assert pair_bytes(a.outputs[key]) == pair_bytes(b.outputs[key])
    assert IndexedDataset(a.outputs["title"]).document_count == 50
    # --partitions cuts the file into contiguous ranges: the documents keep their order (Megatron's
    # round-robin split would interleave them).
    parts = preprocess(plain, tmp_path / "p", "llama3", workers=2, partitions=2, append_eod=True, progress=False)
    ds = IndexedDataset(parts.outputs["text"])
    tokenizer = load_tokenizer("llama3")
    expected = [tokenizer.encode(r["text"]) + [tokenizer.eod_id] for r in records if r["text"]]
    assert [ds[j].tolist() for j in range(len(ds))] == expected
    assert sorted(p.name for p in tmp_path.glob("p_*")) == ["p_text_document.bin", "p_text_document.idx",
                                                           "p_text_document.json"]


BAD_INPUTS = [
    (b'{"text": "ok"}\n{"text": "broken"\n', "invalid JSON", 2),
    (b'{"text": "ok"}\n{"text": "ok"}\n[1, 2]\n', "not an object", 3),
    (b'{"text": "ok"}\n{"body": "no text"}\n', "no 'text' field", 2),
    (b'{"text": 12}\n', "not a string", 1),
    (b'{"text": "ok"}\n{"text": "caf\xe9"}\n', "invalid UTF-8", 2),
]


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "helpers.preprocess", *map(str, args)], capture_output=True, text=True)


@pytest.mark.parametrize("content, problem, line", BAD_INPUTS)
def test_bad_input_is_one_line_with_the_line_number_and_leaves_nothing(tmp_path, content, problem, line):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    result = run_cli("--input", path, "--output-prefix", tmp_path / "out", "--tokenizer", "bytes",
                     "--workers", "2", "--no-progress")
    assert result.returncode == 2
    message = result.stderr.strip()
    assert "\n" not in message and "Traceback" not in message
    assert f"{path}:{line}:" in message and problem in message and "fix:" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_empty_file_and_missing_file(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    for path in (empty, tmp_path / "absent.jsonl"):
        result = run_cli("--input", path, "--output-prefix", tmp_path / "out", "--tokenizer", "bytes", "--no-progress")
        assert result.returncode == 2 and str(path) in result.stderr and "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.jsonl"]


def damaged_gzip_files(folder) -> dict:
    """A `.jsonl.gz` of each kind of damage, and a word its message must hold."""
    packed = gzip.compress(b'{"text": "one"}\n' * 1000)
    flipped = bytearray(packed)
    flipped[len(packed) // 2] ^= 0xFF
    damaged = {"not.jsonl.gz": (b'{"text": "plain JSONL"}\n', "not a gzip file"),
               "truncated.jsonl.gz": (packed[: len(packed) // 2], "truncated"),
               "flipped.jsonl.gz": (bytes(flipped), "damaged")}
    for name, (content, _) in damaged.items():
        (folder / name).write_bytes(content)
    return {folder / name: word for name, (_, word) in damaged.items()}


@pytest.mark.parametrize("workers", [1, 2])
def test_a_damaged_gz_input_is_one_line_naming_it(tmp_path, workers):
    for path, word in damaged_gzip_files(tmp_path).items():
        result = run_cli("--input", path, "--output-prefix", tmp_path / "out", "--tokenizer", "bytes",
                         "--workers", workers, "--no-progress")
        message = result.stderr.strip()
        assert result.returncode == 2 and "\n" not in message and "Traceback" not in message, message
        assert message.startswith(f"error: {path}: ") and word in message and "fix:" in message, message
    assert not [p for p in tmp_path.iterdir() if "out" in p.name]


def test_skip_bad_records_counts_each_kind(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"".join(c for c, _, _ in BAD_INPUTS) + b"\n\n")
    summary = preprocess(path, tmp_path / "out", "bytes", skip_bad_records=True, append_eod=True, progress=False)
    assert summary.skipped == {"invalid JSON": 1, "not an object": 1, "missing key": 1, "non-string value": 1, "invalid UTF-8": 1}
    assert summary.blank_lines == 2
    assert summary.documents == 5  # the "ok" records
    assert summary.first_skipped[0].startswith(f"{path}:2: invalid JSON")
    result = run_cli("--input", path, "--output-prefix", tmp_path / "cli", "--tokenizer", "bytes",
                     "--skip-bad-records", "--no-progress")
    assert result.returncode == 0 and "skipped" in result.stdout and "invalid UTF-8" in result.stdout


def test_summary_reports_what_was_written(tmp_path):
    jsonl = write_jsonl(tmp_path / "in.jsonl", ["one", "", "two three"])
    result = run_cli("--input", jsonl, "--output-prefix", tmp_path / "o", "--tokenizer", "llama3", "--append-eod",
                     "--no-progress")
    assert result.returncode == 0
    for expected in ("documents       3 (1 empty", "tokens          5", "dtype           int32", "bytes written   20",
                     "special-token strings in text: 0"):
        assert expected in result.stdout


def test_log_interval_without_progress_bar(tmp_path):
    jsonl = write_jsonl(tmp_path / "in.jsonl", [f"document {i}" for i in range(25)])
    result = run_cli("--input", jsonl, "--output-prefix", tmp_path / "o", "--tokenizer", "bytes", "--no-progress",
                     "--log-interval", "10")
    assert result.returncode == 0 and "processed 25 documents" in result.stderr
