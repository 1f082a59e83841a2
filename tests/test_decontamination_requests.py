"""Decontamination never wipes out a corpus in silence, on the workshop's real documents: an item shorter than the
n-gram, or an n-gram short enough to match ordinary text, is refused in one line unless `--allow-short-ngrams` says
so (then warned of, with counts); items with no word are counted; `--eval-keys` applies to the files given, never to
humaneval; an empty evaluation file is named as one; the report counts the regions a cut removes and credits every
item that holds a shared n-gram."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers.clean import clean
from helpers.common.errors import UserError
from helpers.decontamination import load_evals


@pytest.fixture(scope="module")
def fifty(corpus_dir, tmp_path_factory):
    """The first 50 documents of the docs domain (the Python reference's prose), as one JSONL file."""
    path = tmp_path_factory.mktemp("fifty") / "docs.jsonl"
    lines = open(corpus_dir / "docs.jsonl", encoding="utf-8").readlines()[:50]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def items_file(folder, name: str, records: list[dict]):
    path = folder / name
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def run_clean(arguments: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "helpers.clean", "--no-progress", "--workers", "1", *arguments],
                          capture_output=True, text=True)


@pytest.mark.heavy
def test_a_one_word_item_or_a_one_word_n_gram_is_refused_and_with_the_flag_warned_of(fifty, tmp_path):
    the = items_file(tmp_path, "the.jsonl", [{"text": "the"}])
    for arguments, said in ((["--decontaminate", str(the)], '1 of 1 item has fewer than 8 words (line 1 "the")'),
                            (["--decontaminate", "humaneval", "--ngram", "1"], "--ngram 1: an n-gram of fewer than 8")):
        done = run_clean(["--input", str(fifty), "--output-dir", str(tmp_path / "refused"), *arguments])
        assert done.returncode == 2 and said in done.stderr and "--allow-short-ngrams" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "refused").exists()
    # asked for by name, it runs, says what it does, and shows why it was refused: nearly every document goes
    done = run_clean(["--input", str(fifty), "--output-dir", str(tmp_path / "allowed"), "--decontaminate", str(the),
                      "--allow-short-ngrams"])
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert done.returncode == 0 and len(warnings) == 1 and "1 of 1 item has fewer than 13 words" in warnings[0]
    report = json.loads((tmp_path / "allowed" / "report.json").read_text())
    assert report["inputs"][0]["steps"][1]["removed"] >= 40
    assert report["decontaminate"]["benchmarks"]["the"]["items_shorter_than_ngram"] == 1
    refused = run_clean(["--input", str(fifty), "--output-dir", str(tmp_path / "x"), "--allow-short-ngrams"])
    assert refused.returncode == 2 and "--allow-short-ngrams: only --decontaminate reads it" in refused.stderr


def test_items_shorter_than_the_n_gram_and_items_with_no_word_are_counted(fifty, tmp_path, capsys):
    sentence = "Python is an easy to learn, powerful programming language."  # 9 words: matched whole, not refused
    evals = items_file(tmp_path, "quiz.jsonl", [
        {"id": "long", "text": "What does the interpreter do when it meets a syntax error in a file it is reading?"},
        {"id": "short", "text": sentence}, {"id": "empty", "text": ""}, {"id": "dots", "text": "... -- !!"}])
    report = clean([fifty], tmp_path / "out", decontaminate=[str(evals)], progress=False)
    warnings = capsys.readouterr().err.strip().splitlines()
    assert warnings == [
        'warning: --decontaminate quiz: 2 of 4 items have no word (empty or punctuation only: empty "", dots '
        '"... -- !!"); an item with no word matches nothing',
        "warning: --decontaminate quiz: 1 of 4 items has fewer than 13 words (the shortest 9; short "
        f'"{sentence[:40]}..."), each matched whole as one n-gram']
    section = report["decontaminate"]["benchmarks"]["quiz"]
    assert section["items_without_words"] == 2 and section["items_shorter_than_ngram"] == 1
    text = "\n".join(json.loads(line)["text"] for line in open(fifty, encoding="utf-8"))
    assert section["documents"].get("short", 0) == ("python is an easy to learn powerful programming language"
                                                    in " ".join(text.lower().replace(",", "").split()))
    nothing = items_file(tmp_path, "blank.jsonl", [{"text": ""}, {"text": "?!"}])
    with pytest.raises(UserError, match="none of its 2 items has a word"):
        clean([fifty], tmp_path / "none", decontaminate=[str(nothing)], progress=False)
    assert not (tmp_path / "none").exists()


def test_eval_keys_name_the_files_fields_and_humaneval_keeps_its_own(fifty, tmp_path, refused_by_clean):
    question = "What is the name of the function that returns the length of an object in the language?"
    mine = items_file(tmp_path, "mine.jsonl", [{"id": "q1", "question": question, "answer": "len"}])
    report = clean([fifty], tmp_path / "both", decontaminate=["humaneval", str(mine)], eval_keys="question,answer",
                   progress=False)
    benchmarks = report["decontaminate"]["benchmarks"]
    assert benchmarks["humaneval"]["items"] == 164 and benchmarks["mine"]["items"] == 1
    assert report["decontaminate"]["patterns"] > 164 * 10  # humaneval's prompt and solution, not a missing field
    refused_by_clean(["--decontaminate", "humaneval", "--eval-keys", "prompt"],
                     "--eval-keys prompt: names the fields of evaluation files, and none is given")
    named, given = load_evals(["humaneval", str(mine)], ("question", "answer"))
    assert named.texts[0].startswith("from typing import List") and given.texts == (question + "\nlen",)


def test_an_empty_eval_file_is_named_as_the_evaluation_set(tmp_path, refused_by_clean):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    refused_by_clean(["--decontaminate", str(empty)],
                     f"--decontaminate {empty}: an empty file, so the evaluation set has no item")
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n\n")
    refused_by_clean(["--decontaminate", str(blank)], f"--decontaminate {blank}: no item in it")


def test_cut_regions_are_counted_and_a_shared_n_gram_credits_every_item(humaneval, corpus_dir, tmp_path):
    code = [json.loads(line)["text"] for line in open(corpus_dir / "code.jsonl", encoding="utf-8")]
    long = next(text for text in code if len(text) > 12000)
    leak = humaneval.texts[1]
    document = long[:3000] + "\n" + leak + "\n" + long[3000:9000] + "\n" + leak + "\n" + long[9000:12000]
    path = items_file(tmp_path, "code.jsonl", [{"text": document}])
    report = clean([path], tmp_path / "cut", decontaminate=["humaneval"], decontaminate_mode="gpt3", progress=False)
    counts = report["inputs"][0]["steps"][1]["counts"]
    assert counts == {"documents_matched": 1, "spans_removed": 2}  # two pasted copies, hundreds of windows each
    # two items share a sentence of the Python reference; a document holding it credits both
    docs = [json.loads(line)["text"] for line in open(corpus_dir / "docs.jsonl", encoding="utf-8")]
    sentence = next(line for text in docs for line in text.splitlines() if 20 <= len(line.split()) <= 40)
    shared = items_file(tmp_path, "shared.jsonl", [{"id": "a", "text": "Question one. " + sentence},
                                                   {"id": "b", "text": sentence + " Question two."}])
    source = items_file(tmp_path, "docs.jsonl", [{"text": text} for text in docs if sentence in text])
    report = clean([source], tmp_path / "shared", decontaminate=[str(shared)], progress=False)
    found = report["decontaminate"]["benchmarks"]["shared"]["documents"]
    assert found["a"] == found["b"] >= 1


def test_where_the_janitor_differs_ours_does_what_the_doc_says(humaneval, corpus_dir, tmp_path):
    """docs/decontamination.md's differences from lm-eval-harness's janitor, on our side: a window holding a piece of
    punctuation alone is found; the 200-character boundaries; a short document without a match is kept whole."""
    from helpers.decontamination import TextIndex
    from helpers.decontamination.spans import pieces

    index = TextIndex(list(humaneval.texts), 13)
    words = humaneval.texts[0].split()
    dashed = " ".join(word + (" -" if k % 6 == 5 else "") for k, word in enumerate(words))  # a lone "-" every 6 words
    code = [json.loads(line)["text"] for line in open(corpus_dir / "code.jsonl", encoding="utf-8")]
    document = code[0][:2000] + "\n" + dashed + "\n" + code[0][2000:4000]
    windows = [document[match.start:match.end].split() for match in index.matches(document)]
    assert len(windows) > 50 and all("-" in window for window in windows)
    text = next(each for each in code[1:] if len(each) > 3000)[:3000]
    assert pieces(text, [(400, 450)]) == [text[:200], text[650:]]  # a first piece of exactly 200 is kept
    assert pieces(text, [(400, 450)], shortest=201) == [text[650:]]
    middle = pieces(text, [(400, 450), (1100, 1150)])  # the cuts end 200 characters past a match's last one
    assert middle == [text[:200], text[650:900], text[1350:]] and len(middle[1]) == 250
    short = next(line for text in code for line in text.splitlines() if 60 < len(line.strip()) < 200).strip()
    path = items_file(tmp_path, "short.jsonl", [{"text": short}, {"text": document}])
    clean([path], tmp_path / "cut", decontaminate=["humaneval"], decontaminate_mode="gpt3", progress=False)
    kept = [json.loads(line)["text"] for line in open(tmp_path / "cut" / "short.jsonl", encoding="utf-8")]
    assert kept[0] == short and len(kept) == 2 and dashed not in kept[1]
