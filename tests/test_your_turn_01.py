"""Notebook 01's your-turn check (`measure_bytes_per_token` on the held-out docs sample) passes the worked answer
and fails the likely wrong ones: characters for bytes, a BOS counted per text, integer division, the ratio
upside down, and a mean of per-text ratios."""

from __future__ import annotations

import pytest

from helpers.corpus.build import corpus_paths, training_and_held_out_texts
from helpers.tokenizers.costs import measure_encoding
from helpers.tokenizers.zoo import load_tokenizer
from helpers.workshop.your_turn import check

SOLUTION = "solutions/01_solutions.ipynb"


@pytest.fixture(scope="module")
def llama3_docs(corpus_dir):
    """The notebook's check: llama3 (the first of `tokenizer_names`) on the docs domain's held-out last documents
    (its defaults `bpe_train_mb = 1.0`, `sample_chars = 200_000`), against the table's value."""
    _, texts = training_and_held_out_texts(corpus_paths(corpus_dir)["docs"], 1_000_000, 200_000)
    tokenizer = load_tokenizer("llama3")
    return tokenizer, texts, measure_encoding(tokenizer, texts).bytes_per_token


def _sums(tokenizer, texts):
    text_bytes = sum(len(text.encode("utf-8")) for text in texts)
    ids = sum(len(tokenizer.encode(text)) for text in texts)
    return text_bytes, ids


def test_the_sample_has_characters_of_more_than_one_byte(llama3_docs):
    _, texts, _ = llama3_docs
    assert sum(len(t.encode("utf-8")) for t in texts) > sum(map(len, texts))


def test_the_worked_answer_passes(llama3_docs):
    tokenizer, texts, expected = llama3_docs
    text_bytes, ids = _sums(tokenizer, texts)
    assert check("measure_bytes_per_token", text_bytes / ids, expected, solution=SOLUTION) is True


def _wrong_answers(tokenizer, texts):
    text_bytes, ids = _sums(tokenizer, texts)
    return {
        "characters, not UTF-8 bytes": sum(len(text) for text in texts) / ids,
        "a BOS counted in front of each text": text_bytes / (ids + len(texts)),
        "integer division": text_bytes // ids,
        "tokens per byte": ids / text_bytes,
        "the mean of per-text ratios": sum(len(t.encode("utf-8")) / len(tokenizer.encode(t)) for t in texts) / len(texts),
    }


@pytest.mark.parametrize("mistake", ["characters, not UTF-8 bytes", "a BOS counted in front of each text",
                                     "integer division", "tokens per byte", "the mean of per-text ratios"])
def test_a_likely_wrong_answer_fails(llama3_docs, mistake, capsys):
    tokenizer, texts, expected = llama3_docs
    assert check("measure_bytes_per_token", _wrong_answers(tokenizer, texts)[mistake], expected,
                 solution=SOLUTION) is False
    assert capsys.readouterr().out.startswith("differs:")
