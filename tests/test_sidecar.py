"""The sidecar: preprocess writes the tokenizer's identity beside the data; check and loaders read it back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.check.command import check_dataset
from helpers.check.damage import copy_dataset
from helpers.common.errors import UserError
from helpers.datasets import sidecar
from helpers.datasets.indexed import IndexedDataset
from helpers.datasets.sidecar import data_facts, read_sidecar, sidecar_path, tokenizer_for, write_sidecar
from helpers.preprocess import preprocess
from helpers.tokenizers.zoo import TrainedBpeZooTokenizer, load_tokenizer, train_bpe

TEXTS = ["Hello world.", "", "def f(x):\n    return x\n", "To be, or not to be.", "caf\u00e9 \U0001f916"]


def write_jsonl(path, texts=TEXTS):
    path.write_text("".join(json.dumps({"text": t, "title": t[:3]}) + "\n" for t in texts), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A small `bytes` dataset with its sidecar, made once (tests that edit files work on copies)."""
    folder = tmp_path_factory.mktemp("made")
    jsonl = write_jsonl(folder / "in.jsonl")
    return Path(preprocess(jsonl, folder / "small", "bytes", append_eod=True, progress=False).outputs["text"])


def with_sidecar(prefix, new_prefix, **changes):
    """A copy of a dataset and its sidecar, the sidecar's top-level or tokenizer fields changed."""
    copy = copy_dataset(prefix, new_prefix)
    content = read_sidecar(prefix)
    for name, value in changes.items():
        if name in content["tokenizer"]:
            content["tokenizer"][name] = value
        else:
            content[name] = value
    write_sidecar(copy, content)
    return copy


def check_cli(*args):
    return subprocess.run([sys.executable, "-m", "helpers.check", *map(str, args)], capture_output=True, text=True)


def test_preprocess_writes_the_facts_beside_the_data(tmp_path, made):
    assert sidecar_path(made).name == "small_text_document.json"
    content = read_sidecar(made)
    data = IndexedDataset(made)
    tokenizer = load_tokenizer("bytes")
    assert content["format"] == "megatron" and content["created_by"] == "helpers.preprocess"
    assert content["tokenizer"] == {"name": "bytes", "fingerprint": tokenizer.fingerprint, "vocab_size": 258,
                                    "eod_id": 257, "bos_id": 256}
    assert content["dtype"] == "uint16" == data.dtype.name
    assert content["append_eod"] is True and content["parse_special_tokens"] is False
    assert content["json_key"] == "text"
    assert [i["bytes"] for i in content["inputs"]] == [(made.parent / "in.jsonl").stat().st_size]
    assert (content["documents"], content["sequences"], content["tokens"]) == (5, 4, data.num_tokens)


def test_every_key_and_the_partitions_path_get_one(tmp_path):
    jsonl = write_jsonl(tmp_path / "in.jsonl", TEXTS * 4)
    outputs = preprocess(jsonl, tmp_path / "p", "llama3", ("text", "title"), workers=2, partitions=2,
                         progress=False).outputs
    for key, prefix in outputs.items():
        content = read_sidecar(prefix)
        data = IndexedDataset(prefix)
        assert content["json_key"] == key and content["append_eod"] is False
        assert content["tokenizer"]["name"] == "llama3" and content["dtype"] == "int32"
        assert (content["documents"], content["sequences"], content["tokens"]) == \
            (20, len(data), data.num_tokens)
    assert sorted(p.name for p in tmp_path.glob("p_*.json")) == ["p_text_document.json", "p_title_document.json"]
    assert not list(tmp_path.glob(".*tmp*"))


def test_a_failed_run_leaves_no_sidecar(tmp_path):
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_text('{"text": "fine"}\n{"text": "broken"\n')
    with pytest.raises(UserError, match="bad.jsonl:2"):
        preprocess(jsonl, tmp_path / "out", "bytes", progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_a_failed_rerun_never_leaves_a_stale_sidecar_beside_new_data(tmp_path, monkeypatch):
    def disk_full(*args):
        raise OSError("disk full")

    jsonl = write_jsonl(tmp_path / "in.jsonl")
    prefix = preprocess(jsonl, tmp_path / "out", "bytes", progress=False).outputs["text"]
    monkeypatch.setattr("helpers.preprocess.outputs.write_sidecar", disk_full)
    with pytest.raises(OSError):
        preprocess(jsonl, tmp_path / "out", "bytes", append_eod=True, progress=False)
    assert read_sidecar(prefix) is None  # new data in place, the old sidecar gone with the old data


def test_tokenizer_for_reads_the_sidecar(made):
    assert tokenizer_for(made) is load_tokenizer("bytes")
    assert tokenizer_for(made, "bytes") is load_tokenizer("bytes")
    assert tokenizer_for(made, load_tokenizer("bytes")) is load_tokenizer("bytes")


def test_a_name_that_disagrees_is_refused(made):
    with pytest.raises(UserError, match=r"made with tokenizer 'bytes', not 'llama3'.*fix:"):
        tokenizer_for(made, "llama3")
    with pytest.raises(UserError, match="not 'llama3'"):
        data_facts(made, "llama3")


def test_a_changed_fingerprint_is_refused(tmp_path, made):
    edited = with_sidecar(made, tmp_path / "edited", fingerprint="0123456789abcdef")
    for call in (lambda: tokenizer_for(edited), lambda: tokenizer_for(edited, "bytes"), lambda: check_dataset(edited)):
        with pytest.raises(UserError, match="changed since the data was made.*re-run helpers.preprocess"):
            call()


def test_a_bpe_retrained_on_other_text_is_caught(tmp_path):
    """What the fingerprint is for: same name, same vocab size, different vocabulary."""
    before = TrainedBpeZooTokenizer("bpe-264", train_bpe(["the cat sat on the mat"] * 20, 264))
    after = TrainedBpeZooTokenizer("bpe-264", train_bpe(["import os\nprint(os.sep)"] * 20, 264))
    assert before.fingerprint != after.fingerprint and before.vocab_size == after.vocab_size
    prefix = preprocess(write_jsonl(tmp_path / "in.jsonl"), tmp_path / "d", "bytes", progress=False).outputs["text"]
    content = read_sidecar(prefix)
    content["tokenizer"] = sidecar.tokenizer_identity(before)  # as if `before` had made the data
    write_sidecar(prefix, content)
    assert tokenizer_for(prefix, before) is before
    with pytest.raises(UserError, match="'bpe-264' changed since the data was made"):
        tokenizer_for(prefix, after)


def test_data_without_a_sidecar_needs_a_name(tmp_path, made):
    bare = copy_dataset(made, tmp_path / "bare")  # as Megatron's own tool leaves it: .bin/.idx only
    assert read_sidecar(bare) is None
    assert tokenizer_for(bare, "bytes") is load_tokenizer("bytes")
    for call in (lambda: tokenizer_for(bare), lambda: data_facts(bare)):
        with pytest.raises(UserError, match="no sidecar.*fix: pass --tokenizer"):
            call()
    facts = data_facts(bare, "bytes")
    assert facts.source == "named" and facts.vocab_size == 258 and facts.eod_id == 257
    assert facts.dtype == "uint16" and facts.tokenizer == "bytes"


def test_data_facts_from_the_sidecar_load_no_tokenizer(made, monkeypatch):
    def refuse(name):
        raise AssertionError(f"loaded {name}")

    monkeypatch.setattr(sidecar, "load_tokenizer", refuse)
    facts = data_facts(made)
    assert (facts.tokenizer, facts.vocab_size, facts.eod_id, facts.dtype) == ("bytes", 258, 257, "uint16")
    assert facts.append_eod is True and facts.source == str(sidecar_path(made))


@pytest.mark.parametrize("text, problem", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "not an object"),
    ('{"format": "megatron", "tokenizer": {"name": "bytes"}}', "'tokenizer.fingerprint' is missing"),
])
def test_a_malformed_sidecar_names_the_file_and_the_fix(tmp_path, made, text, problem):
    copy = copy_dataset(made, tmp_path / "broken")
    sidecar_path(copy).write_text(text)
    with pytest.raises(UserError, match=problem) as caught:
        read_sidecar(copy)
    assert str(sidecar_path(copy)) in str(caught.value) and "fix:" in str(caught.value)
    report = check_dataset(copy, "bytes")
    assert [c.name for c in report.failures()] == ["sidecar"]


def test_check_catches_data_rewritten_after_its_sidecar(tmp_path, made):
    edited = with_sidecar(made, tmp_path / "edited", tokens=1)
    assert [c.name for c in check_dataset(edited).failures()] == ["sidecar matches data"]


def test_check_cli_uses_the_sidecar(tmp_path, made):
    result = check_cli(made)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tokenizer bytes (from the sidecar small_text_document.json)" in result.stdout
    assert "ids < vocab" in result.stdout and "EOD at document ends" in result.stdout
    assert check_cli(made, "--tokenizer", "bytes").returncode == 0
    refused = check_cli(made, "--tokenizer", "llama3")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.count("\n") == 1 and "made with tokenizer 'bytes'" in refused.stderr


def test_check_cli_without_a_sidecar(tmp_path, made):
    bare = copy_dataset(made, tmp_path / "bare")
    structural = check_cli(bare)
    assert structural.returncode == 0 and "structural checks only" in structural.stdout
    assert "ids < vocab" not in structural.stdout
    named = check_cli(bare, "--tokenizer", "bytes")
    assert named.returncode == 0 and "ids < vocab" in named.stdout and "no sidecar" in named.stdout


FINGERPRINTS = "from helpers.tokenizers.zoo import load_tokenizer as t; print(*(t(n).fingerprint for n in ('bytes', 'llama3', 'mistral')))"


def test_fingerprint_is_stable_across_processes_and_tells_vocabularies_apart():
    runs = [subprocess.run([sys.executable, "-c", FINGERPRINTS], capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    assert runs[0] == runs[1]
    prints = runs[0].split()
    assert len(set(prints)) == 3 and all(len(p) == 16 and int(p, 16) >= 0 for p in prints)
    assert prints[0] == load_tokenizer("bytes").fingerprint
