"""Decontamination of text is exact: every match the brute-force oracle finds (each document's words against every
window of every item, by GPT-3's rule written out again here), and nothing else, on HumanEval leaks planted into
real code documents (verbatim, case and whitespace changed, across line breaks, at a document's start and end,
split between two documents) with near misses that must not match, and on random texts; the compiled scan splits
words as `str.split` does for every code point; `helpers.clean --decontaminate` drops or cuts them, names each
removal, counts per benchmark and item, and writes the same for 1, 3 and 7 parts (and on Ray: test_clean_ray)."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys

import numpy as np
import pytest
from decontamination_cases import oracle, planted
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.clean import clean
from helpers.decontamination import TextIndex
from helpers.decontamination import text_index as scan
from helpers.decontamination.spans import pieces
from helpers.decontamination.words import gpt3_words


def assert_exact(index: TextIndex, documents: list[str], items: list[str]) -> int:
    """The index finds exactly the oracle's windows, each credited to every item that holds it; how many."""
    expected = oracle(documents, items, index.n)
    for document, hits in zip(documents, expected):
        found: dict[tuple[int, int], set[int]] = {}
        for match in index.matches(document):
            assert match.item not in found.setdefault((match.start, match.end), set()), "an item credited twice"
            found[match.start, match.end].add(match.item)
        assert found == hits, document[:200]
    return sum(map(len, expected))


@pytest.fixture(scope="module")
def index(humaneval):
    return TextIndex(list(humaneval.texts), 13)


def test_planted_leaks_are_found_exactly_as_the_oracle_finds_them(humaneval, index, corpus_dir):
    documents, case = planted(humaneval, corpus_dir)
    assert assert_exact(index, documents, list(humaneval.texts)) > 100
    found = [{match.item for match in index.matches(document)} for document in documents]
    for name in ("verbatim in the middle", "case changed", "whitespace changed", "across line breaks",
                 "at the start", "at the end", "first half of a split item", "second half of a split item"):
        assert found[case[name]], name
    for name in ("12 of 13 words", "a 13-gram broken by one word", "a word changed in every 12", "clean"):
        assert not found[case[name]], name
    at_start = index.matches(documents[case["at the start"]])[0]
    assert at_start.start == 0 and at_start.item == 4


def test_a_scan_with_too_little_room_runs_again_and_finds_the_same(humaneval, index, corpus_dir, monkeypatch):
    documents, _ = planted(humaneval, corpus_dir)
    roomy = index.matches_each(documents)
    monkeypatch.setattr(scan, "FIRST_ROOM", (1, 1))
    assert index.matches_each(documents) == roomy and [index.matches(document) for document in documents] == roomy
    assert sum(map(len, roomy)) > 100


def test_short_items_count_whole_and_shared_n_grams_credit_every_item_that_holds_them():
    items = ["The answer is 42.", "one two three four five", "One, two, three: four five!", "", "!!! ..."]
    index = TextIndex(items, n=4)
    documents = ["we know the answer is 42 today", "ONE two three four", "a b c one two three four five six",
                 "the answer is", "nothing at all", "!!! ... answer is 42"]
    assert assert_exact(index, documents, items) == 4
    assert [match.item for match in index.matches(documents[2])] == [1, 2, 1, 2]  # 1 and 2 share their 4-grams
    assert index.matches("") == [] and TextIndex([], 13).matches("anything") == []


WORDS = ["a", "B", "c.", "d'", "E", "-", "é", "Ä"]
SPACES = [" ", "  ", "\n", "\t", "\u00a0", "\u3000", "\u2028", "\x1c"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SPACES)), max_size=40),
       st.lists(st.lists(st.sampled_from(WORDS), max_size=8), min_size=1, max_size=4), st.integers(1, 4))
def test_random_texts_match_exactly_as_the_oracle(document, items, n):
    text = "".join(word + space for word, space in document)
    item_texts = [" ".join(words) for words in items]
    assert_exact(TextIndex(item_texts, n), [text], item_texts)


def test_the_scan_splits_words_as_str_split_on_every_code_point():
    characters = [chr(code) for code in range(1, 0x110000)]
    text = "a" + "a".join(characters) + "a"
    data = text.encode("utf-8", "surrogatepass")
    _, starts, ends = scan.utf8_word_spans(np.frombuffer(data, np.uint8))
    count = starts.size
    pieces_found = [gpt3_words(data[s:e].decode("utf-8", "surrogatepass"))
                    for s, e in zip(starts.tolist(), ends.tolist())]
    assert all(len(words) == 1 for words in pieces_found)
    assert [words[0] for words in pieces_found] == gpt3_words(text)
    assert count == len(text.split())  # no piece is all punctuation here


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from(list("aZ9 \t\n\x1c.,'-_()") + ["é", "日", "\x00", "\x7f"]), max_size=60))
def test_the_fast_loop_sums_the_words_the_exact_loop_finds(text):
    """Where every space is ASCII, the branch-free loop gives each word the exact loop's sum; a byte that may start
    a Unicode space sends the text to the exact loop."""
    data = np.frombuffer(text.encode("utf-8"), np.uint8)
    size = data.size // 2 + 1
    fast, exact = np.empty(size, np.uint64), np.empty(size, np.uint64)
    count, unicode_spaces = scan._fast_words(data, scan.TABLE, scan.LEADS, fast)
    spans = np.empty(size, np.int64), np.empty(size, np.int64)
    expected = scan._words(data, scan.CLASSES, scan.CODES, exact, *spans)
    assert unicode_spaces == any(byte in (0xC2, 0xE1, 0xE2, 0xE3) for byte in data.tolist())
    if not unicode_spaces:
        assert count == expected == len(gpt3_words(text))
        assert fast[:count].tolist() == exact[:count].tolist()


def test_gpt3_span_removal_keeps_long_pieces_and_merges_cuts():
    text = "x" * 1000
    assert pieces(text, [(500, 510)]) == ["x" * 300, "x" * 290]
    assert pieces(text, [(100, 110), (250, 260)]) == ["x" * 540]  # cuts merged; the 0-99 piece is too short
    assert pieces(text, [(0, 1000)]) == []
    many = " ".join(["filler " * 60 + "LEAK"] * 12)
    spans = [(match.start(), match.end()) for match in re.finditer("LEAK", many)]
    assert len(pieces(many, spans, window=0, shortest=200)) == 12


def test_clean_drops_or_cuts_planted_leaks_names_them_and_counts_them(humaneval, corpus_dir, tmp_path):
    documents, case = planted(humaneval, corpus_dir)
    path = tmp_path / "code.jsonl"
    path.write_text("".join(json.dumps({"id": f"doc-{k}", "text": text}) + "\n" for k, text in enumerate(documents)))
    expected = {number for number, hits in enumerate(oracle(documents, list(humaneval.texts), 13)) if hits}
    one = clean([path], tmp_path / "one", decontaminate=["humaneval"], parts=1, progress=False)
    three = clean([path], tmp_path / "three", decontaminate=["humaneval"], parts=3, workers=2, progress=False)
    seven = clean([path], tmp_path / "seven", decontaminate=["humaneval"], parts=7, workers=2, progress=False)
    for folder in ("three", "seven"):
        for name in ("code.jsonl", "removed.jsonl"):
            assert (tmp_path / "one" / name).read_bytes() == (tmp_path / folder / name).read_bytes()
    removed = [json.loads(line) for line in open(tmp_path / "one" / "removed.jsonl")]
    assert {int(entry["id"].split("-")[1]) for entry in removed} == expected
    first = next(entry for entry in removed if entry["id"] == f"doc-{case['verbatim in the middle']}")
    assert first["step"] == "decontaminate" and first["reason"].startswith("humaneval HumanEval/1: \"")
    section = one["decontaminate"]["benchmarks"]["humaneval"]
    assert section["items"] == 164 and section["documents"]["HumanEval/7"] == 3  # line breaks, both halves
    assert one["decontaminate"] == three["decontaminate"] == seven["decontaminate"]

    cut = clean([path], tmp_path / "gpt3", decontaminate=["humaneval"], decontaminate_mode="gpt3", progress=False)
    kept = [json.loads(line)["text"] for line in open(tmp_path / "gpt3" / "code.jsonl")]
    assert all(not TextIndex(list(humaneval.texts), 13).matches(text) for text in kept)
    assert cut["inputs"][0]["steps"][1]["bytes_trimmed"] > 0


def test_the_summary_of_gpt3_mode_says_the_spans_it_cut(tmp_path):
    from helpers.clean.run.report import summary_lines

    item = "the quick brown fox jumps over the lazy dog while the cat sleeps on a warm mat by the door"
    evals = tmp_path / "mine.jsonl"
    evals.write_text(json.dumps({"text": item}) + "\n")
    document = tmp_path / "docs.jsonl"
    around = "a long stretch of ordinary prose that holds nothing of the benchmark at all " * 8
    document.write_text("".join(json.dumps({"text": text}) + "\n" for text in (around + item + " " + around, "other")))
    report = clean([document], tmp_path / "cut", decontaminate=[str(evals)], decontaminate_mode="gpt3", progress=False)
    assert summary_lines(report)[0] == "docs.jsonl: 2 records -> 2 kept (decontaminate -0 and 1 span cut)"


@pytest.mark.heavy
def test_an_eval_file_with_named_fields_and_bad_requests_in_one_line(tmp_path, refused_by_clean):
    evals = tmp_path / "mine.jsonl"
    evals.write_text(json.dumps({"id": "q1", "question": "What is the capital city of the small country Wakanda",
                                 "answer": "Birnin Zana"}) + "\n")
    document = tmp_path / "docs.jsonl"
    document.write_text(json.dumps({"text": "quiz: what is the capital city of the small country wakanda? "
                                            "birnin zana, of course"}) + "\n" + json.dumps({"text": "other"}) + "\n")
    report = clean([document], tmp_path / "kept", decontaminate=[str(evals)], eval_keys="question,answer",
                   progress=False)
    assert report["decontaminate"]["benchmarks"]["mine"]["documents"] == {"q1": 1}
    refused_by_clean(["--decontaminate", str(evals), "--eval-keys", "prompt"], "no 'prompt' field")
    refused_by_clean(["--decontaminate", "nowhere.jsonl"], "no such file")
    refused_by_clean(["--exact", "--mode", "gpt3"], "only --decontaminate reads it")
    done = subprocess.run([sys.executable, "-m", "helpers.clean", "--input", str(document), "--output-dir",
                           str(tmp_path / "both"), "--fuzzy", "--decontaminate", str(evals), "--ngram", "7"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "both --decontaminate and --fuzzy" in done.stderr


def test_a_random_corpus_sample_agrees_with_the_oracle(humaneval, index, corpus_dir):
    lines = open(corpus_dir / "code.jsonl", encoding="utf-8").readlines()
    sample = [json.loads(line)["text"][:20000] for line in random.Random(3).sample(lines, 6)]
    assert_exact(index, sample, list(humaneval.texts))
