"""The offline corpus: real text in three domains, and a JSONL reader that names bad lines."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers.common.errors import UserError
from helpers.corpus.build import (
    DOMAINS,
    DomainStats,
    build_corpus,
    corpus_paths,
    read_jsonl,
    split_play,
    write_jsonl_atomic,
)


def test_corpus_has_three_real_domains_over_ten_megabytes(corpus_dir):
    total = 0
    for domain, path in corpus_paths(corpus_dir).items():
        records = list(read_jsonl(path))
        assert len(records) > 50, domain
        ids = [r["id"] for r in records]
        assert len(set(ids)) == len(ids) and ids[0] == f"{domain}-000000"
        assert all(set(r) == {"text", "title", "source", "id"} and r["text"].strip() for r in records)
        total += sum(len(r["text"].encode("utf-8")) for r in records)
    assert total > 10_000_000


def test_domains_hold_the_text_they_claim(corpus_dir):
    paths = corpus_paths(corpus_dir)
    literature = " ".join(r["text"] for r in read_jsonl(paths["literature"]))
    assert "To be, or not to be" in literature and "Romeo" in literature
    docs = {r["title"]: r["text"] for r in read_jsonl(paths["docs"])}
    assert docs["assert"].startswith('The "assert" statement')
    code = list(read_jsonl(paths["code"]))
    assert all(r["title"].endswith(".py") for r in code)
    assert any("def " in r["text"] for r in code)


def test_literature_documents_have_realistic_sizes(corpus_dir):
    lengths = [len(r["text"]) for r in read_jsonl(corpus_paths(corpus_dir)["literature"])]
    assert max(lengths) <= 16_000
    assert min(lengths) >= 100  # no bare headings or title pages as documents
    assert 2_000 < sorted(lengths)[len(lengths) // 2] < 10_000


def test_split_play_cuts_at_scenes_and_keeps_every_line():
    play = "THE PLAY\n\nACT I.\n\nScene I. A room.\n\n" + "A line.\n\n" * 60 + "Scene II. A hall.\n\n" + "B line.\n\n" * 60
    documents = split_play(play)
    assert len(documents) == 2
    assert documents[0].startswith("THE PLAY") and "Scene II" in documents[1]
    assert sum(d.count("line.") for d in documents) == 120


def test_split_play_cuts_long_sections_at_paragraphs():
    text = "\n\n".join(f"Paragraph {i} " + "x" * 90 for i in range(100))
    documents = split_play(text, max_chars=1_000)
    assert all(len(d) <= 1_000 for d in documents)
    assert sum(d.count("Paragraph") for d in documents) == 100


@pytest.mark.parametrize("content, problem", [
    (b'{"text": "ok"}\n{"text": "broken"\n', "invalid JSON"),
    (b'{"text": "ok"}\n["a list"]\n', "not an object"),
    (b'{"text": "ok"}\n{"body": "no text key"}\n', "no 'text' field"),
    (b'{"text": "ok"}\n{"text": 42}\n', "not a string"),
    (b'{"text": "ok"}\n{"text": "caf\xe9"}\n', "invalid UTF-8"),
])
def test_bad_records_name_file_line_and_problem(tmp_path, content, problem):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(UserError) as err:
        list(read_jsonl(path))
    message = str(err.value)
    assert f"{path}:2:" in message and problem in message and "fix:" in message


def test_interrupted_write_leaves_no_file(tmp_path):
    def records():
        yield {"text": "one", "title": "t", "source": "s"}
        raise RuntimeError("interrupted")

    path = tmp_path / "docs.jsonl"
    with pytest.raises(RuntimeError):
        write_jsonl_atomic(records(), path, "docs", DomainStats())
    assert list(tmp_path.iterdir()) == []


def test_missing_corpus_is_an_error_with_the_fix(tmp_path):
    with pytest.raises(UserError, match="python -m helpers.corpus"):
        corpus_paths(tmp_path)


def test_build_keeps_complete_files_and_reports_counts(corpus_dir, capsys):
    summary = build_corpus(corpus_dir)
    assert set(summary) == set(DOMAINS)
    out = capsys.readouterr().out
    assert all(domain in out for domain in DOMAINS) and "documents" in out


def test_cli_rejects_bad_argument_with_one_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "helpers.corpus", "--out", str(tmp_path), "--code-mb", "0"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "--code-mb" in result.stderr
    assert "Traceback" not in result.stderr


def test_blank_lines_are_not_records(tmp_path):
    path = tmp_path / "gaps.jsonl"
    path.write_text('{"text": "a"}\n\n   \n{"text": "b"}\n')
    assert [r["text"] for r in read_jsonl(path)] == ["a", "b"]


def test_training_and_held_out_texts_are_disjoint_whole_documents(tmp_path):
    import json

    from helpers.corpus.build import training_and_held_out_texts

    path = tmp_path / "d.jsonl"
    texts = [f"document {k} " * (k + 1) for k in range(10)]
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    train, held_out = training_and_held_out_texts(path, train_chars=40, held_out_chars=100)
    assert held_out == texts[-len(held_out):] and sum(map(len, held_out)) >= 100
    assert train == texts[:len(train)] and sum(map(len, train[:-1])) < 40
    train, held_out = training_and_held_out_texts(path, train_chars=10**9, held_out_chars=10**9)
    assert train == texts[:1] and held_out == texts[1:]  # a small file: less training text, never a shared document
