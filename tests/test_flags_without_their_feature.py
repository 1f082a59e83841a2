"""A flag that only one other flag reads, given without it, is refused in one line naming both and the fix, exit 2,
before anything is read or written; given with it, it is taken. `helpers.check` and `helpers.audit` have such
flags only beside `--decontaminate`, refused the same way."""

from __future__ import annotations

import importlib

import pytest

from helpers.common.errors import run_cli

CLEAN = ["--input", "in.jsonl", "--output-dir", "out", "--no-progress"]
PREPROCESS = ["--input", "in.jsonl", "--output-prefix", "out/data", "--tokenizer", "bytes", "--no-progress"]

REFUSED = [
    ("clean", [*CLEAN, "--ngram", "7"], "--ngram 7: only --decontaminate or --fuzzy read it; fix: add "
                                        "--decontaminate EVAL or --fuzzy, or leave --ngram out"),
    ("clean", [*CLEAN, "--exact", "--threshold", "0.5"], "--threshold 0.5: only --fuzzy reads it; fix: add --fuzzy,"),
    ("clean", [*CLEAN, "--exact", "--num-perm", "64"], "--num-perm 64: only --fuzzy reads it"),
    ("clean", [*CLEAN, "--exact", "--bands", "8", "--rows", "4"], "--bands 8: only --fuzzy reads it"),
    ("clean", [*CLEAN, "--exact", "--rows", "4"], "--rows 4: only --fuzzy reads it"),
    ("clean", [*CLEAN, "--exact", "--memory-limit", "1GB"], "--memory-limit 1GB: only --fuzzy reads it"),
    ("clean", [*CLEAN, "--exact", "--line-min-count", "3"], "--line-min-count 3: only --lines reads it; fix: add "
                                                            "--lines, or leave --line-min-count out"),
    ("clean", [*CLEAN, "--exact", "--line-min-chars", "5"], "--line-min-chars 5: only --lines reads it"),
    ("clean", [*CLEAN, "--exact", "--language-threshold", "0.3"],
     "--language-threshold 0.3: only --languages reads it; fix: add --languages CODES"),
    ("clean", [*CLEAN, "--exact", "--mode", "gpt3"], "--mode gpt3: only --decontaminate reads it"),
    ("preprocess", [*PREPROCESS[:-1], "--log-interval", "10"], "--log-interval 10: only --no-progress reads it; fix: "
                                                               "add --no-progress, or leave --log-interval out"),
    ("preprocess", [*PREPROCESS, "--tokens-per-shard", "50"], "--tokens-per-shard 50: only --format shards reads it; "
                                                              "fix: add --format shards"),
    ("preprocess", [*PREPROCESS, "--format", "npy", "--append-eod", "--val-fraction", "0.1"],
     "--val-fraction 0.1: only --format shards reads it"),
    ("preprocess", [*PREPROCESS, "--shard-dtype", "uint32"], "--shard-dtype uint32: only --format shards reads it"),
    ("check", ["prefix", "--ngram", "8"], "--ngram 8: only --decontaminate reads it"),
    ("check", ["prefix", "--eval-keys", "question"], "--eval-keys question: only --decontaminate reads it"),
    ("audit", ["batch.pt", "--vocab-size", "258", "--tokenizer", "bytes"], "--tokenizer bytes: only --decontaminate"),
    ("audit", ["batch.pt", "--vocab-size", "258", "--ngram", "8"], "--ngram 8: only --decontaminate reads it"),
]


@pytest.mark.parametrize("command, arguments, line", REFUSED, ids=[" ".join(r[1][-2:]) for r in REFUSED])
def test_a_flag_without_the_flag_that_reads_it_is_refused(command, arguments, line, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.jsonl").write_text('{"text": "a record"}\n', encoding="utf-8")
    main = importlib.import_module(f"helpers.{command}.command").main
    with pytest.raises(SystemExit) as stopped:
        run_cli(main, arguments)
    said = capsys.readouterr()
    assert stopped.value.code == 2 and said.err.startswith("error: ") and said.err.count("\n") == 1, said.err
    assert line in said.err and "Traceback" not in said.err and said.out == ""
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command, arguments", [
    ("clean", [*CLEAN, "--fuzzy", "--ngram", "3", "--threshold", "0.5", "--workers", "1"]),
    ("clean", [*CLEAN, "--lines", "--line-min-count", "3", "--workers", "1"]),
    ("preprocess", [*PREPROCESS, "--log-interval", "10", "--workers", "1"]),
])
def test_the_same_flag_beside_the_flag_that_reads_it_is_taken(command, arguments, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.jsonl").write_text('{"text": "a record"}\n' * 3, encoding="utf-8")
    main = importlib.import_module(f"helpers.{command}.command").main
    with pytest.raises(SystemExit) as stopped:
        run_cli(main, arguments)
    assert stopped.value.code == 0, capsys.readouterr().err
