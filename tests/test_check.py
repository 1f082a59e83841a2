"""The dataset check: passes a good dataset, catches each kind of damage, never crashes on garbage."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.check import command as check
from helpers.check.command import check_dataset, main
from helpers.check.damage import copy_dataset, set_dtype_code, truncate_bin, write_token
from helpers.common.errors import run_cli
from helpers.datasets.indexed import IndexedDataset, IndexedWriter, IndexFormatError, bin_path, idx_path
from helpers.preprocess import preprocess


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    folder = tmp_path_factory.mktemp("good")
    jsonl = folder / "in.jsonl"
    texts = ["To be, or not to be, that is the question.", "", "def f(x):\n    return x\n", "Hello world."] * 5
    jsonl.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    with_eod = preprocess(jsonl, folder / "eod", "llama3", append_eod=True, progress=False).outputs["text"]
    without = preprocess(jsonl, folder / "plain", "llama3", progress=False).outputs["text"]
    return with_eod, without


def failed(report):
    return {c.name for c in report.failures()}


def test_good_dataset_passes_and_is_described(good):
    report = check_dataset(good[0], "llama3")
    assert report.ok, report.lines()
    assert "int32" in report.header["dtype"] and "code 4" in report.header["dtype"]
    assert "20 documents + 1" in report.header["document indices"]
    assert "5 empty" in report.stats["documents"]
    assert all("question" in s or "def f" in s or "Hello" in s for s in report.samples)


@pytest.mark.parametrize("damage, caught", [
    (lambda p: truncate_bin(p, 0.8), {".bin size"}),
    (lambda p: set_dtype_code(p, np.uint16), {".bin size"}),
    (lambda p: write_token(p, 3, 200_000), {"ids < vocab"}),
])
def test_each_damage_is_caught(tmp_path, good, damage, caught):
    broken = copy_dataset(good[0], tmp_path / "broken")
    damage(broken)
    report = check_dataset(broken, "llama3")
    assert caught <= failed(report), report.lines()
    assert all("fix:" in c.detail for c in report.failures())


def test_missing_eod_is_caught_unless_not_expected(tmp_path, good):
    assert failed(check_dataset(good[1], "llama3", expect_eod=True)) == {"EOD at document ends"}
    assert check_dataset(good[1], "llama3", expect_eod=False).ok
    assert check_dataset(good[1], "llama3").ok  # its sidecar says: made without --append-eod
    bare = copy_dataset(good[1], tmp_path / "bare")  # no sidecar: EOD expected, as Megatron's --append-eod
    assert failed(check_dataset(bare, "llama3")) == {"EOD at document ends"}


def test_uint16_file_for_a_large_vocabulary_is_an_error(tmp_path):
    with IndexedWriter(tmp_path / "small", np.uint16) as writer:
        writer.add_document([9906, 1917, 60_000])
        writer.finalize()
    assert "dtype vs vocab" in failed(check_dataset(tmp_path / "small", "llama3", expect_eod=False))
    assert check_dataset(tmp_path / "small", "bytes", expect_eod=False).failures()  # ids over 258


def test_cli_exit_codes_and_one_line_per_failure(tmp_path, good):
    ok = subprocess.run([sys.executable, "-m", "helpers.check", str(good[0]), "--tokenizer", "llama3"],
                        capture_output=True, text=True)
    assert ok.returncode == 0 and "all checks passed" in ok.stdout and "documents + 1" in ok.stdout
    broken = copy_dataset(good[0], tmp_path / "broken")
    truncate_bin(broken)
    bad = subprocess.run([sys.executable, "-m", "helpers.check", str(broken)], capture_output=True, text=True)
    assert bad.returncode == 1
    assert [l for l in bad.stdout.splitlines() if "FAIL" in l] == [l for l in bad.stdout.splitlines() if ".bin size" in l and "FAIL" in l]
    missing = subprocess.run([sys.executable, "-m", "helpers.check", str(tmp_path / "absent")], capture_output=True, text=True)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(idx=st.binary(max_size=300), data=st.binary(max_size=300))
def test_random_bytes_are_reported_never_crash(tmp_path_factory, idx, data):
    prefix = tmp_path_factory.mktemp("fuzz") / "x"
    idx_path(prefix).write_bytes(idx)
    bin_path(prefix).write_bytes(data)
    report = check_dataset(prefix, "bytes")
    assert report.checks and not report.ok


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(cut_idx=st.integers(0, 400), cut_bin=st.integers(0, 400), flip=st.integers(0, 399), value=st.integers(0, 255))
def test_truncated_or_flipped_real_files_are_reported(tmp_path_factory, good, cut_idx, cut_bin, flip, value):
    prefix = copy_dataset(good[0], tmp_path_factory.mktemp("cut") / "x")
    original = idx_path(prefix).read_bytes()
    raw = bytearray(original)
    if flip < len(raw):
        raw[flip] = value
    damaged_idx = bytes(raw[: len(raw) - cut_idx % (len(raw) + 1)])
    idx_path(prefix).write_bytes(damaged_idx)
    data = bin_path(prefix).read_bytes()
    bin_path(prefix).write_bytes(data[: len(data) - cut_bin])
    report = check_dataset(prefix, "llama3")  # must return, whatever it finds
    assert report.checks
    assert report.ok == (damaged_idx == original and cut_bin == 0), "damage is found, and only damage"


def run_check(argv, capsys):
    """`python -m helpers.check ARGV` in-process: its exit code and its output (stdout, stderr)."""
    with pytest.raises(SystemExit) as exited:
        run_cli(main, [str(a) for a in argv])
    out = capsys.readouterr()
    return exited.value.code, out.out, out.err


@pytest.fixture()
def int32_dataset(tmp_path):
    """Three documents of byte ids in int32 (the dtype whose itemsize float32 shares), one of them empty."""
    with IndexedWriter(tmp_path / "ids", np.int32) as writer:
        for text in (b"hello world", b"", b"to be or not"):
            writer.add_document(list(text) + [257] if text else [])
        writer.finalize()
    return tmp_path / "ids"


@pytest.mark.parametrize("value", [-5, -(2 ** 31)])
def test_a_negative_id_is_a_failed_check_not_a_crash(int32_dataset, capsys, value):
    write_token(int32_dataset, 1, value)
    code, out, err = run_check([int32_dataset, "--tokenizer", "bytes"], capsys)
    assert code == 1 and "Traceback" not in err, err
    assert "FAIL  ids non-negative" in out and "fix:" in out


@pytest.mark.parametrize("float_dtype, int_dtype", [(np.float32, np.int32), (np.float64, np.int64)])
def test_a_float_dtype_code_is_a_failed_check_not_a_crash(tmp_path, capsys, float_dtype, int_dtype):
    with IndexedWriter(tmp_path / "ids", int_dtype) as writer:
        writer.add_document([104, 105, 257])
        writer.finalize()
    set_dtype_code(tmp_path / "ids", float_dtype)  # same itemsize: the size checks still hold
    code, out, err = run_check([tmp_path / "ids", "--tokenizer", "bytes"], capsys)
    assert code == 1 and not err, err
    assert [l for l in out.splitlines() if "FAIL" in l] == [
        l for l in out.splitlines() if "FAIL  integer ids" in l and np.dtype(float_dtype).name in l and "fix:" in l]
    assert failed(check_dataset(tmp_path / "ids")) == {"integer ids"}  # without a tokenizer too


def test_a_bin_that_is_not_whole_tokens_says_so(int32_dataset):
    with open(bin_path(int32_dataset), "ab") as handle:
        handle.write(b"\x01\x02")
    report = check_dataset(int32_dataset, "bytes")
    assert failed(report) == {".bin size"}
    assert "not a multiple of 4" in next(c.detail for c in report.failures())


def test_an_empty_dataset_is_a_failed_check(tmp_path, capsys):
    with IndexedWriter(tmp_path / "empty", np.uint16) as writer:
        writer.add_document([])  # documents, but not one token
        writer.finalize()
    code, out, err = run_check([tmp_path / "empty", "--tokenizer", "bytes"], capsys)
    assert code == 1 and not err
    assert [l for l in out.splitlines() if "FAIL" in l] == [l for l in out.splitlines() if "FAIL  tokens" in l and "fix:" in l]


@pytest.mark.parametrize("remove", [bin_path, idx_path])
def test_a_missing_file_is_an_input_error(int32_dataset, capsys, remove):
    remove(int32_dataset).unlink()
    code, out, err = run_check([int32_dataset], capsys)
    assert code == 2 and err.count("\n") == 1 and "fix:" in err and remove(int32_dataset).name in err


def test_an_unknown_tokenizer_is_an_input_error(int32_dataset, capsys):
    code, out, err = run_check([int32_dataset, "--tokenizer", "no-such-tokenizer"], capsys)
    assert code == 2 and err.count("\n") == 1 and "fix:" in err


def test_an_unexpected_exception_is_reported_as_unfinished_not_as_a_verdict(int32_dataset, capsys, monkeypatch):
    def broken(*args):
        raise ValueError("something no check foresaw")

    monkeypatch.setattr(check, "_scan_ids", broken)
    with pytest.raises(ValueError):  # the library call hides nothing
        check_dataset(int32_dataset, "bytes")
    code, out, err = run_check([int32_dataset, "--tokenizer", "bytes"], capsys)
    assert code == 1 and "Traceback" not in err
    assert [l for l in out.splitlines() if "FAIL" in l] == [
        l for l in out.splitlines() if "FAIL  checks finished" in l and "ValueError: something no check foresaw" in l]
    assert "all checks passed" not in out


def test_a_folder_in_place_of_a_file_is_refused_in_one_line(int32_dataset, capsys):
    bin_path(int32_dataset).unlink()
    bin_path(int32_dataset).mkdir()
    with pytest.raises(IndexFormatError, match="a folder, not a file; fix:"):
        IndexedDataset(int32_dataset)
    code, out, err = run_check([int32_dataset], capsys)
    assert code == 2 and err.count("\n") == 1 and "fix:" in err
