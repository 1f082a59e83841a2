"""Notebook 02's your-turn check (`tokens_and_lengths` on the first documents of the docs domain, against what
preprocessing wrote) passes the worked answer and fails the likely wrong ones: no EOD after each document,
lengths that leave the EOD out, one EOD for the whole batch, the texts joined before tokenizing, a BOS in front."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.preprocess import preprocess
from helpers.tokenizers.zoo import load_tokenizer
from helpers.workshop.exercises.preprocessing import first_documents
from helpers.workshop.your_turn import check

SOLUTION = "solutions/02_solutions.ipynb"
DOCUMENTS = 3  # the notebook's `your_turn_documents`


@pytest.fixture(scope="module")
def docs_llama3(corpus_dir, tmp_path_factory):
    """The notebook's check: the docs domain preprocessed as section 1 does it (llama3, `--append-eod`), and
    the texts and written tokens and lengths of its first documents."""
    made = preprocess(corpus_dir / "docs.jsonl", tmp_path_factory.mktemp("docs-llama3") / "docs", "llama3",
                      workers=2, append_eod=True, progress=False)
    texts, written = first_documents(corpus_dir / "docs.jsonl", made.outputs["text"], DOCUMENTS)
    return load_tokenizer("llama3"), texts, written


def _answer(documents):
    return np.concatenate([np.array(ids, dtype=np.int64) for ids in documents]), np.array([len(d) for d in documents])


def test_the_worked_answer_passes(docs_llama3):
    tokenizer, texts, written = docs_llama3
    documents = [tokenizer.encode(text) + [tokenizer.eod_id] for text in texts]
    assert check("tokens_and_lengths", _answer(documents), written, solution=SOLUTION) is True


def _wrong_answers(tokenizer, texts):
    encoded = [tokenizer.encode(text) for text in texts]
    eod, bos = tokenizer.eod_id, tokenizer.bos_id
    with_eod = [ids + [eod] for ids in encoded]
    joined = tokenizer.encode("".join(texts)) + [eod]
    return {
        "no EOD after each document": _answer(encoded),
        "lengths without the EOD": (_answer(with_eod)[0], np.array([len(ids) for ids in encoded])),
        "one EOD after the last document only": (np.array(sum(encoded, []) + [eod]), np.array([len(ids) for ids in encoded])),
        "the texts joined before tokenizing": (np.array(joined), np.array([len(joined)])),
        "the texts joined with a space, lengths as if apart": (np.array(tokenizer.encode(" ".join(texts)) + [eod]),
                                                               _answer(with_eod)[1]),
        "a BOS in front of each document": _answer([[bos] + ids for ids in with_eod]),
    }


@pytest.mark.parametrize("mistake", ["no EOD after each document", "lengths without the EOD",
                                     "one EOD after the last document only", "the texts joined before tokenizing",
                                     "the texts joined with a space, lengths as if apart",
                                     "a BOS in front of each document"])
def test_a_likely_wrong_answer_fails(docs_llama3, mistake, capsys):
    tokenizer, texts, written = docs_llama3
    assert check("tokens_and_lengths", _wrong_answers(tokenizer, texts)[mistake], written, solution=SOLUTION) is False
    assert capsys.readouterr().out.startswith("differs:")
