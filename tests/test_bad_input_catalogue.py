"""Every command line against every kind of bad input: one line naming the thing and the fix, the
documented exit code, no traceback, and nothing left behind.

Exit codes, the same for every command: 0 all good, 1 a check (or a notebook) failed, 2 a usage or
input error. Each row writes its inputs under `in/`, runs the command as a user would (a separate
process, from a fresh working directory) and asserts that `out/` holds no file afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import nbformat
import numpy as np
import pytest

from helpers.common.errors import UserError
from helpers.datasets.indexed import HEADER
from helpers.preprocess import preprocess


@dataclass(frozen=True)
class Case:
    """One bad input: how to make it, which command reads it, and what the user must see."""

    name: str
    module: str
    make: Callable[[Path], list[str]]  # writes inputs under the folder it gets; returns the arguments
    code: int
    says: tuple[str, ...]  # every one of these appears in stderr (or stdout for a failed check)


def jsonl(folder: Path, content: bytes | str, name: str = "input.jsonl") -> Path:
    path = folder / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def preprocess_args(content: bytes | str, *extra: str, name: str = "input.jsonl"):
    """Arguments of `helpers.preprocess` on a JSONL file holding `content`, output under out/."""
    def make(folder: Path) -> list[str]:
        source = jsonl(folder, content, name)
        return ["--input", str(source), "--output-prefix", str(folder.parent / "out" / "data"),
                "--tokenizer", "bytes", "--workers", "1", "--no-progress", *extra]
    return make


GOOD = '{"text": "a good record"}\n'
PREPROCESS_SKIPS = "or pass --skip-bad-records to go on without such records (each kind is counted in the summary)"


def zstd_bytes(text: str) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor().compress(text.encode("utf-8"))

def pa_strings():
    """An empty column of strings (a table of no rows)."""
    import pyarrow as pa

    return pa.array([], type=pa.string())


PREPROCESS = [
    Case("missing file", "preprocess", lambda f: ["--input", str(f / "nowhere.jsonl"), "--output-prefix",
                                                  str(f.parent / "out" / "d"), "--tokenizer", "bytes"],
         2, ("nowhere.jsonl", "no such file", "fix:")),
    Case("empty file", "preprocess", preprocess_args(""), 2, ("input.jsonl", "empty", "fix:")),
    Case("blank lines only", "preprocess", preprocess_args("\n\n  \n"), 2, ("input.jsonl", "no document", "fix:")),
    Case("invalid JSON", "preprocess", preprocess_args(GOOD + '{"text": "cut\n'), 2,
         ("input.jsonl:2", "invalid JSON", "fix:", PREPROCESS_SKIPS)),
    Case("truncated last record", "preprocess", preprocess_args(GOOD + GOOD + '{"text": "no end'), 2,
         ("input.jsonl:3", "invalid JSON", "fix:")),
    Case("not an object", "preprocess", preprocess_args(GOOD + "[1, 2]\n"), 2,
         ("input.jsonl:2", "not an object", PREPROCESS_SKIPS)),
    Case("missing key", "preprocess", preprocess_args('{"body": "x"}\n'), 2,
         ("input.jsonl:1", "no 'text' field", "--json-keys", PREPROCESS_SKIPS)),
    Case("number as text", "preprocess", preprocess_args('{"text": 5}\n'), 2,
         ("input.jsonl:1", "'text'", "fix:", PREPROCESS_SKIPS)),
    Case("invalid UTF-8", "preprocess", preprocess_args(GOOD.encode() + b'{"text": "caf\xe9"}\n'), 2,
         ("input.jsonl:2", "UTF-8", "fix:")),
    Case("lone surrogate", "preprocess", preprocess_args(GOOD + '{"text": "lone \\ud800 surrogate"}\n'), 2,
         ("input.jsonl:2", "surrogate", "fix:", PREPROCESS_SKIPS)),
    Case("duplicate key in a record", "preprocess", preprocess_args('{"text": "one", "text": "two"}\n'), 2,
         ("input.jsonl:1", "'text'", "twice", "fix:")),
    Case("the same --json-keys twice", "preprocess", preprocess_args(GOOD, "--json-keys", "text", "text"), 2,
         ("--json-keys", "text", "fix:")),
    Case("unknown tokenizer", "preprocess",
         lambda f: preprocess_args(GOOD)(f)[:-5] + ["--tokenizer", "no-such-tokenizer"], 2,
         ("no-such-tokenizer", "fix:")),
    Case("no workers", "preprocess", preprocess_args(GOOD, "--workers", "0"), 2, ("--workers", "at least 1")),
    Case("no partitions", "preprocess", preprocess_args(GOOD, "--partitions", "0"), 2, ("--partitions", "at least 1")),
    Case("not gzip", "preprocess", preprocess_args(GOOD, name="input.jsonl.gz"), 2, ("input.jsonl.gz", "fix:")),
    Case("not zstd", "preprocess", preprocess_args(GOOD, name="input.jsonl.zst"), 2,
         ("input.jsonl.zst", "not a readable Zstandard file", "fix:")),
    Case("truncated zstd", "preprocess", preprocess_args(zstd_bytes(GOOD * 50)[:-9], name="input.jsonl.zst"), 2,
         ("input.jsonl.zst", "truncated", "fix:")),
    Case("output folder is a file", "preprocess",
         lambda f: ["--input", str(jsonl(f, GOOD)), "--output-prefix", str(jsonl(f, "", "a_file") / "d"),
                    "--tokenizer", "bytes", "--workers", "1"], 2, ("a_file", "fix:")),
    Case("a shard setting without --format shards", "preprocess", preprocess_args(GOOD, "--tokens-per-shard", "50"), 2,
         ("--tokens-per-shard 50: only --format shards reads it", "fix: add --format shards")),
]


def parquet_args(columns: dict | bytes, *extra: str):
    """Arguments of `helpers.preprocess` on `in/input.parquet`: a table of `columns`, or raw bytes."""
    def make(folder: Path) -> list[str]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        source = folder / "input.parquet"
        if isinstance(columns, bytes):
            source.write_bytes(columns)
        else:
            pq.write_table(pa.table(columns), source, row_group_size=2)
        return ["--input", str(source), "--output-prefix", str(folder.parent / "out" / "data"),
                "--tokenizer", "bytes", "--workers", "1", "--no-progress", *extra]
    return make


PREPROCESS += [
    Case("Parquet without the column", "preprocess", parquet_args({"body": ["x"], "id": ["1"]}), 2,
         ("input.parquet", "no column 'text'", "body, id", "--json-keys")),
    Case("Parquet column of numbers", "preprocess", parquet_args({"text": [1, 2]}), 2,
         ("input.parquet", "column 'text'", "not strings", "fix:")),
    Case("Parquet null text", "preprocess", parquet_args({"text": ["a", "b", "c", None]}), 2,
         ("input.parquet: row 3 (row group 1)", "null", "fix:", PREPROCESS_SKIPS)),
    Case("Parquet damaged", "preprocess", parquet_args(b"PAR1 not really parquet PAR1"), 2,
         ("input.parquet", "not a readable Parquet file", "fix:")),
    Case("Parquet empty file", "preprocess", parquet_args(b""), 2, ("input.parquet", "empty", "fix:")),
    Case("Parquet without rows", "preprocess", parquet_args({"text": pa_strings()}), 2,
         ("input.parquet", "no document", "fix:")),
    Case("glob of Parquet and JSONL files", "preprocess",
         lambda f: parquet_args({"text": ["a"]})(f)[:1] + [str(jsonl(f, GOOD).parent / "input.*")] +
         parquet_args({"text": ["a"]})(f)[2:], 2, ("input.*", "input.jsonl", "one kind", "fix:")),
    Case("glob of empty JSONL files", "preprocess",
         lambda f: ["--input", str(jsonl(f, "", "a.jsonl").parent / "*.jsonl"), "--output-prefix",
                    str(f.parent / "out" / "d"), "--tokenizer", "bytes"], 2, ("*.jsonl", "empty", "fix:")),
    Case("folder without Parquet", "preprocess",
         lambda f: ["--input", str(f), "--output-prefix", str(f.parent / "out" / "d"), "--tokenizer", "bytes"], 2,
         ("no .parquet file", "fix:")),
]

def clean_args(content: bytes | str, *extra: str, name: str = "input.jsonl"):
    """Arguments of `helpers.clean` on a JSONL file holding `content`, output in out/clean."""
    def make(folder: Path) -> list[str]:
        return ["--input", str(jsonl(folder, content, name)), "--output-dir", str(folder.parent / "out" / "clean"),
                "--workers", "2", "--parts", "3", "--no-progress", *extra]
    return make


def saved_splits(folder: Path) -> Path:
    """A DatasetDict (a train split) saved by Hugging Face `save_to_disk` under `folder/saved`."""
    import datasets

    datasets.DatasetDict({"train": datasets.Dataset.from_dict({"text": ["a", "b"]})}).save_to_disk(
        str(folder / "saved"))
    return folder / "saved"


def notes_beside_records(folder: Path) -> Path:
    """`folder` holding a JSONL file and a text file that no reader takes."""
    jsonl(folder, GOOD)
    jsonl(folder, "notes for later", "notes.txt")
    return folder


CLEAN = [
    Case("missing file", "clean", lambda f: ["--input", str(f / "nowhere.jsonl"), "--output-dir",
                                             str(f.parent / "out" / "c"), "--exact"], 2,
         ("nowhere.jsonl", "no such file", "fix:")),
    Case("empty file", "clean", clean_args("", "--exact"), 2, ("input.jsonl", "empty", "fix:")),
    Case("invalid JSON", "clean", clean_args(GOOD * 3 + '{"text": "cut\n' + GOOD, "--exact"), 2,
         ("input.jsonl:4", "invalid JSON", "fix:")),
    Case("number as text", "clean", clean_args(GOOD + '{"text": 5}\n', "--fuzzy"), 2,
         ("input.jsonl:2", "'text'", "fix:")),
    Case("lone surrogate", "clean", clean_args(GOOD + '{"text": "lone \\ud800"}\n', "--normalize"), 2,
         ("input.jsonl:2", "surrogate", "fix:")),
    Case("no step", "clean", clean_args(GOOD), 2, ("no step", "--exact", "fix:")),
    Case("threshold out of range", "clean", clean_args(GOOD, "--fuzzy", "--threshold", "0"), 2,
         ("--threshold 0", "fix:")),
    Case("bands x rows over num-perm", "clean", clean_args(GOOD, "--fuzzy", "--bands", "20", "--rows", "7"), 2,
         ("--bands 20 --rows 7", "140 hashes", "--num-perm 128", "fix:")),
    Case("bands without rows", "clean", clean_args(GOOD, "--fuzzy", "--bands", "20"), 2,
         ("--bands 20 --rows None", "give both", "fix:")),
    Case("memory limit below one batch", "clean", clean_args(GOOD, "--fuzzy", "--memory-limit", "10MB"), 2,
         ("--memory-limit 10MB is too small", "fix: --memory-limit 64MB or more")),
    Case("memory limit not a size", "clean", clean_args(GOOD, "--fuzzy", "--memory-limit", "lots"), 2,
         ("--memory-limit 'lots' is not a size", "fix:")),
    Case("two inputs of one name", "clean",
         lambda f: clean_args(GOOD, "--exact")(f) + ["--input", str(jsonl(f, GOOD)), str(jsonl(Path(
             os.makedirs(f / "twin", exist_ok=True) or f / "twin"), GOOD))], 2, ("input.jsonl", "rename", "fix:")),
    Case("Parquet null text", "clean", lambda f: parquet_args({"text": ["a", "b", "c", None]})(f)[:2] + [
        "--output-dir", str(f.parent / "out" / "c"), "--exact"], 2,
         ("input.parquet: row 3 (row group 1)", "null", "fix:")),
    Case("Parquet without the column", "clean", lambda f: parquet_args({"body": ["x"], "id": ["1"]})(f)[:2] + [
        "--output-dir", str(f.parent / "out" / "c"), "--exact"], 2, ("input.parquet", "no column 'text'", "body, id",
                                                                      "--json-key")),
    Case("saved DatasetDict", "clean", lambda f: [
        "--input", str(saved_splits(f)), "--output-dir", str(f.parent / "out" / "c"), "--exact"], 2,
         ("saved", "DatasetDict", "fix: name one split's folder")),
    Case("output folder is a file", "clean",
         lambda f: ["--input", str(jsonl(f, GOOD)), "--output-dir", str(jsonl(f, "", "a_file")), "--exact"], 2,
         ("a_file", "fix:")),
    Case("folder holding a file no reader takes", "clean", lambda f: [
        "--input", str(notes_beside_records(f)), "--output-dir", str(f.parent / "out" / "c"), "--exact"], 2,
         ("notes.txt", "no reader takes", "fix:")),
    Case("--pii of a kind it does not mask", "clean", clean_args(GOOD, "--pii", "fax"), 2,
         ("--pii fax", "email,ip", "fix:")),
    Case("--ngram without --fuzzy or --decontaminate", "clean", clean_args(GOOD, "--exact", "--ngram", "7"), 2,
         ("--ngram 7: only --decontaminate or --fuzzy read it", "fix: add --decontaminate EVAL or --fuzzy")),
    Case("bad record without --skip-bad-records", "clean", clean_args(GOOD + "[1]\n", "--exact"), 2,
         ("input.jsonl:2", "not an object", "--skip-bad-records")),
]

CORPUS = [
    Case("no code", "corpus", lambda f: ["--out", str(f.parent / "out"), "--code-mb", "0"], 2, ("--code-mb",)),
    Case("output is a file", "corpus", lambda f: ["--out", str(jsonl(f, "", "a_file") / "raw"), "--code-mb", "0.01"],
         2, ("a_file", "fix:")),
]

TOKENIZERS = [
    Case("unknown name", "tokenizers", lambda f: ["export", "no-such-tokenizer", str(f.parent / "out" / "t")], 2,
         ("no-such-tokenizer", "fix:")),
    Case("export onto a file", "tokenizers", lambda f: ["export", "bytes", str(jsonl(f, "", "a_file"))], 2,
         ("a_file", "fix:")),
    Case("unknown command", "tokenizers", lambda f: ["frobnicate"], 2, ("invalid choice",)),
]


# --- damaged datasets for helpers.check -----------------------------------------------------------

@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """A small valid dataset written by preprocess with the bytes tokenizer (uint16, sidecar beside it)."""
    folder = tmp_path_factory.mktemp("dataset")
    texts = ["first document", "second, a little longer document", "third"]
    source = jsonl(folder, "".join(json.dumps({"text": t}) + "\n" for t in texts))
    preprocess(source, folder / "d", "bytes", append_eod=True, progress=False)
    return folder / "d_text_document"


def damaged(damage: Callable[[Path], None]):
    """Arguments of `helpers.check` on a copy of the dataset that `damage` then changes in place."""
    def make(folder: Path, original: Path) -> list[str]:
        for suffix in (".bin", ".idx", ".json"):
            shutil.copy(f"{original}{suffix}", folder / f"d{suffix}")
        damage(folder / "d")
        return [str(folder / "d")]
    return make


def rewrite(suffix: str, change: Callable[[bytes], bytes]):
    def damage(prefix: Path) -> None:
        path = Path(f"{prefix}{suffix}")
        path.write_bytes(change(path.read_bytes()))
    return damage


def set_token(position: int, value: int, dtype=np.uint16):
    def change(raw: bytes) -> bytes:
        tokens = np.frombuffer(raw, dtype=dtype).copy()
        tokens[position] = value
        return tokens.tobytes()
    return rewrite(".bin", change)


def set_dtype_code(code: int):
    return rewrite(".idx", lambda raw: raw[:17] + bytes([code]) + raw[18:])


def set_sidecar(**fields):
    def damage(prefix: Path) -> None:
        path = Path(f"{prefix}.json")
        content = json.loads(path.read_text())
        content.update(fields)
        path.write_text(json.dumps(content))
    return damage


CHECK = [
    ("truncated .bin", damaged(rewrite(".bin", lambda raw: raw[:-3])), 1, (".bin size", "fix:")),
    ("longer .bin", damaged(rewrite(".bin", lambda raw: raw + b"\0\0")), 1, (".bin size", "fix:")),
    ("truncated .idx", damaged(rewrite(".idx", lambda raw: raw[:-8])), 1, ("d.idx", "fix:")),
    ("header only", damaged(rewrite(".idx", lambda raw: raw[:HEADER.size - 1])), 1, ("d.idx", "header", "fix:")),
    ("bit-flipped magic", damaged(rewrite(".idx", lambda raw: bytes([raw[0] ^ 0x10]) + raw[1:])), 1,
     ("d.idx", "magic", "fix:")),
    ("unknown dtype code", damaged(set_dtype_code(9)), 1, ("d.idx", "dtype code 9", "fix:")),
    ("dtype code of another integer type", damaged(set_dtype_code(3)), 1, ("dtype", "fix:")),
    ("a float dtype code", damaged(set_dtype_code(6)), 1, ("fix:",)),
    ("sequence count off by one", damaged(rewrite(".idx", lambda raw: raw[:18] + struct.pack(
        "<Q", struct.unpack_from("<Q", raw, 18)[0] + 1) + raw[26:])), 1, ("d.idx", "fix:")),
    ("id beyond the vocabulary", damaged(set_token(1, 60_000)), 1, ("vocab", "fix:")),
    ("sidecar without a tokenizer fingerprint", damaged(set_sidecar(tokenizer={"name": "bytes"})), 1,
     ("d.json", "fingerprint", "fix:")),
    ("sidecar is not JSON", damaged(rewrite(".json", lambda raw: raw[:10])), 1, ("d.json", "fix:")),
    ("missing .bin", damaged(lambda prefix: Path(f"{prefix}.bin").unlink()), 2, ("d.bin", "fix:")),
]


@pytest.mark.parametrize("name, make, code, says", CHECK, ids=[c[0] for c in CHECK])
def test_check_reports_damage(tmp_path, dataset, name, make, code, says):
    (tmp_path / "in").mkdir()
    result = run_module("check", make(tmp_path / "in", dataset), tmp_path)
    assert_one_clear_answer(result, code, says)


def test_check_of_another_tokenizer_than_the_sidecar_is_refused(tmp_path, dataset):
    result = run_module("check", [str(dataset), "--tokenizer", "mistral"], tmp_path)
    assert_one_clear_answer(result, 2, ("mistral", "bytes", "fix:"))


def test_check_without_damage_passes(tmp_path, dataset):
    result = run_module("check", [str(dataset)], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


# --- notebooks run headless ------------------------------------------------------------------------

def probe_notebook(folder: Path) -> Path:
    path = folder / "probe.ipynb"
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x = 1\nname = 'a'\nrate = 0.5", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("print(x, name, rate)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def grid(text: str):
    def make(folder: Path) -> list[str]:
        grid_file = jsonl(folder, text, "grid.yaml")
        return [str(probe_notebook(folder)), "--grid", str(grid_file), "--out", str(folder.parent / "out" / "runs")]
    return make


RUNS = [
    Case("not a notebook", "runs", lambda f: [str(jsonl(f, "{}", "a.txt")), "--out", str(f.parent / "out" / "r")], 2,
         ("a.txt", "fix:")),
    Case("missing notebook", "runs", lambda f: [str(f / "none.ipynb"), "--out", str(f.parent / "out" / "r")], 2,
         ("none.ipynb", "fix:")),
    Case("missing grid file", "runs", lambda f: [str(probe_notebook(f)), "--grid", str(f / "none.yaml"),
                                                 "--out", str(f.parent / "out" / "r")], 2, ("none.yaml",)),
    Case("grid is not YAML", "runs", grid("x: [1, 2\n"), 2, ("grid.yaml", "fix:")),
    Case("grid value is not a list", "runs", grid("x: 3\n"), 2, ("'x'", "list")),
    Case("grid names an unknown parameter", "runs", grid("steps: [1, 2]\n"), 2, ("steps", "probe.ipynb", "fix:")),
    Case("grid value of the wrong type", "runs", grid("x: [1, 'many']\n"), 2, ("'x'", "str", "int", "fix:")),
    Case("grid is a list", "runs", grid("- 1\n- 2\n"), 2, ("grid.yaml", "mapping")),
]

CASES = PREPROCESS + CLEAN + CORPUS + TOKENIZERS + RUNS


def run_module(module: str, args: list[str], workdir: Path) -> subprocess.CompletedProcess:
    """`python -m helpers.MODULE ARGS` from a fresh working directory, as a user would run it."""
    return subprocess.run([sys.executable, "-m", f"helpers.{module}", *args], cwd=workdir, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "TQDM_DISABLE": "1"})


def assert_one_clear_answer(result: subprocess.CompletedProcess, code: int, says: tuple[str, ...]) -> None:
    shown = result.stdout + result.stderr
    assert result.returncode == code, f"exit {result.returncode}, expected {code}:\n{shown}"
    assert "Traceback" not in shown, shown
    text = result.stderr if code == 2 else shown
    for words in says:
        assert words in text, f"{words!r} not in:\n{text}"
    if code == 2:
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:") or ": error:" in line]
        assert len(errors) == 1 and "fix:" in errors[0], result.stderr
        assert "usage:" not in result.stderr, "one line, not a usage block"


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


@pytest.mark.parametrize("case", CASES, ids=[f"{c.module}: {c.name}" for c in CASES])
def test_bad_input_gets_one_line_and_leaves_nothing(tmp_path, case):
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    result = run_module(case.module, case.make(tmp_path / "in"), tmp_path)
    assert_one_clear_answer(result, case.code, case.says)
    assert files_under(tmp_path / "out") == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out"]  # nothing written beside them either


# --- the loader (a Python API: the same errors, raised) ---------------------------------------------

LOADER = [
    ("missing prefix", lambda d: dict(data_path=[str(d.parent / "nowhere")]), ("nowhere", "fix:")),
    ("odd blend", lambda d: dict(data_path=["0.5", str(d), "0.5"]), ("--data-path",)),
    ("negative weight", lambda d: dict(data_path=["-1", str(d), "2", str(d)]), ("non-negative",)),
    ("weight that is a word", lambda d: dict(data_path=["half", str(d), "0.5", str(d)]), ("'half'",)),
    ("all weights zero", lambda d: dict(data_path=["0", str(d)]), ("sum to 0", "fix:")),
    ("split with an empty part", lambda d: dict(data_path=[str(d)], split="90,,10"), ("90,,10", "fix:")),
    ("split with a negative part", lambda d: dict(data_path=[str(d)], split="-5,10,1"), ("-5,10,1", "fix:")),
    ("synthetic without a vocabulary", lambda d: dict(source="synthetic"), ("vocab_size",)),
    ("unknown source", lambda d: dict(data_path=[str(d)], source="random"), ("random", "fix:")),
    ("zero batch size", lambda d: dict(data_path=[str(d)], batch_size=0), ("batch_size",)),
    ("another tokenizer than the sidecar", lambda d: dict(data_path=[str(d)], tokenizer="mistral"),
     ("mistral", "fix:")),
]


@pytest.mark.parametrize("name, arguments, says", LOADER, ids=[row[0] for row in LOADER])
def test_loader_refuses_bad_input_with_one_line(tmp_path, dataset, name, arguments, says):
    from helpers.loading.loader import make_dataloader

    with pytest.raises(UserError) as raised:
        make_dataloader(**{"seq_length": 8, "batch_size": 2, "cache_dir": tmp_path / "cache", **arguments(dataset)})
    message = str(raised.value)
    assert "\n" not in message
    for words in says:
        assert words in message, message


def test_an_os_error_without_a_path_names_no_made_up_file():
    from helpers.common.errors import describe_os_error

    line = describe_os_error(OSError(28, "No space left on device"))
    assert line.startswith("no space left on device; fix:") and "a file" not in line
    assert describe_os_error(OSError(13, "Permission denied", "out/x.bin")).startswith("out/x.bin: permission denied; fix:")
