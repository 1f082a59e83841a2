"""Decontamination of tokens is exact for what it claims: in a finished `.bin/.idx` of real code documents with
HumanEval items planted, `TokenIndex` finds every window of 13 tokens equal to one of an item's (encoded alone), and
nothing else, against a brute-force oracle over every document; no window across a document's end. Against the text
oracle it finds the verbatim copies and misses, as documented, the copies whose case or spacing changed.
`helpers.check --decontaminate` fails the data and lists where."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from decontamination_cases import oracle, planted

from helpers.check.command import check_dataset
from helpers.datasets.indexed import IndexedDataset
from helpers.decontamination.token_index import TokenIndex
from helpers.preprocess import preprocess
from helpers.tokenizers.zoo import load_tokenizer


@pytest.fixture(scope="module")
def leaked(humaneval, corpus_dir, tmp_path_factory):
    """The planted documents, tokenized by llama3 with an EOD after each; the prefix, the documents, the cases."""
    documents, case = planted(humaneval, corpus_dir)
    folder = tmp_path_factory.mktemp("leaked")
    (folder / "code.jsonl").write_text("".join(json.dumps({"text": text}) + "\n" for text in documents))
    made = preprocess(folder / "code.jsonl", folder / "code", "llama3", append_eod=True, workers=1, progress=False)
    return made.outputs["text"], documents, case


def token_oracle(documents: list[np.ndarray], items: list[np.ndarray], n: int) -> set[tuple[int, int, int]]:
    """(document, start, first item) of every window of n tokens in a document equal to a window of an item's tokens
    (an item of fewer tokens: all of it), by tuples."""
    grams: dict[tuple, int] = {}
    for number, item in enumerate(items):
        length = min(n, item.size)
        for i in range(item.size - length + 1 if length else 0):
            grams.setdefault(tuple(item[i:i + length].tolist()), number)
    lengths = {len(gram) for gram in grams}
    found = set()
    for d, tokens in enumerate(documents):
        tokens = tokens.tolist()
        for length in lengths:
            for i in range(len(tokens) - length + 1):
                item = grams.get(tuple(tokens[i:i + length]))
                if item is not None:
                    found.add((d, i, item))
    return found


def test_token_matches_are_exactly_the_oracle_s_and_stop_at_document_ends(humaneval, leaked):
    prefix, documents, case = leaked
    tokenizer = load_tokenizer("llama3")
    index = TokenIndex.encoded(list(humaneval.texts), tokenizer, 13)
    dataset = IndexedDataset(prefix)
    starts = np.asarray(dataset.sequence_pointers, np.int64) // dataset.dtype.itemsize
    found = {(int(np.searchsorted(starts, m.start, side="right")) - 1, m.start, m.item)
             for m in index.matches(dataset.tokens, starts)}
    found = {(d, start - int(starts[d]), item) for d, start, item in found}
    expected = token_oracle([dataset.get(d) for d in range(len(dataset))], index.items, 13)
    assert found == expected and len(found) > 100
    # against the text oracle, per document and planted item
    by_tokens = {(d, item) for d, _, item in found}
    by_text = {(d, item) for d, hits in enumerate(oracle(documents, list(humaneval.texts), 13))
               for holding in hits.values() for item in holding}
    for name, item in (("verbatim in the middle", 1), ("at the start", 4), ("at the end", 5),
                       ("first half of a split item", 7), ("second half of a split item", 7)):
        assert (case[name], item) in by_tokens and (case[name], item) in by_text, name
    for name, item in (("whitespace changed", 3), ("across line breaks", 7)):
        assert (case[name], item) in by_text and (case[name], item) not in by_tokens, name  # the documented misses
    # every token match is a verbatim copy of part of its item; in the copy whose case changed, only the parts
    # that have no letter to change (digits, punctuation, spacing)
    tokenizer = load_tokenizer("llama3")
    for d, start, item in found:
        text = tokenizer.decode(dataset.get(d)[start:start + 13].tolist())
        assert text in humaneval.texts[item] or text in humaneval.texts[item].upper()
        if d == case["case changed"]:
            assert text.upper() == text.lower()


def test_no_window_across_a_document_end_is_reported(humaneval):
    index = TokenIndex.encoded(list(humaneval.texts), load_tokenizer("llama3"), 13)
    item = index.items[5]
    stream = np.concatenate([[11, 12, 13], item[:20], item[20:], [14, 15]])  # the item cut between two documents
    starts = np.array([0, 3 + 20])
    across = {m.start for m in index.matches(stream)} - {m.start for m in index.matches(stream, starts)}
    assert across == set(range(3 + 20 - 12, 3 + 20))  # the 12 windows that hold the cut
    assert {m.start for m in index.matches(stream, starts)} == set(range(3, 3 + 20 - 12)) | set(
        range(23, 23 + item.size - 20 - 12))


def test_a_scan_with_too_little_room_runs_again_and_finds_the_same(humaneval, monkeypatch):
    from helpers.decontamination import token_index

    index = TokenIndex.encoded(list(humaneval.texts), load_tokenizer("llama3"), 13)
    stream = np.concatenate([[11, 12, 13], *index.items[:3]])
    roomy = index.matches(stream)
    monkeypatch.setattr(token_index, "FIRST_ROOM", (1, 1))
    assert index.matches(stream) == roomy and len(roomy) > 100


def test_check_fails_data_holding_eval_n_grams_and_lists_them(leaked, humaneval, corpus_dir, tmp_path):
    prefix, _, _ = leaked
    report = check_dataset(prefix, evals=[humaneval])
    failed = [check for check in report.checks if not check.ok]
    assert [check.name for check in failed] == ["no humaneval n-gram"]
    assert report.overlaps and "humaneval HumanEval/1 " in "\n".join(report.overlaps)
    done = subprocess.run([sys.executable, "-m", "helpers.check", prefix, "--decontaminate", "humaneval"],
                          capture_output=True, text=True)
    assert done.returncode == 1 and "FAIL  no humaneval n-gram" in done.stdout and "tokens" in done.stdout
    clean_docs = tmp_path / "clean.jsonl"
    clean_docs.write_text(json.dumps({"text": "a short clean document"}) + "\n")
    clean_prefix = preprocess(clean_docs, tmp_path / "clean", "llama3", append_eod=True, workers=1,
                              progress=False).outputs["text"]
    assert check_dataset(clean_prefix, evals=[humaneval]).ok


def test_check_says_when_its_list_is_cut_and_refuses_ngram_without_decontaminate(leaked, humaneval, monkeypatch):
    from helpers.check import contamination

    prefix, _, _ = leaked
    whole = check_dataset(prefix, evals=[humaneval], ngram=13).overlaps
    assert len(whole) > 4 and not whole[-1].startswith("...")
    monkeypatch.setattr(contamination, "LISTED", 3)
    cut = check_dataset(prefix, evals=[humaneval], ngram=13).overlaps
    assert cut[:3] == whole[:3] and cut[3] == f"... the first 3 of {len(whole):,} (sequence, item) pairs listed; " \
                                              f"{len(whole) - 3:,} more not shown" and len(cut) == 4
    for command in (["helpers.check", prefix], ["helpers.audit", prefix + ".bin", "--vocab-size", "128256"]):
        done = subprocess.run([sys.executable, "-m", *command, "--ngram", "13"], capture_output=True, text=True)
        assert done.returncode == 2 and done.stderr.strip() == (
            "error: --ngram 13: only --decontaminate reads it; fix: add --decontaminate EVAL, or leave --ngram out")
