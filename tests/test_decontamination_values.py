"""Decontamination's defaults and limits against values worked out by hand: each entry point's default n-gram (13
words for text, 32 tokens for ids), a window that ends on a document's last word, GPT-3's span removal at exactly
200 characters a piece and exactly ten pieces, and the settings refused."""

from __future__ import annotations

import string

import numpy as np
import pytest

from helpers.audit.eval_overlap import eval_overlap
from helpers.clean.steps.decontaminate import check_decontamination, decontamination_step
from helpers.common.errors import UserError
from helpers.decontamination import TextIndex, TokenIndex
from helpers.decontamination.evals import EvalSet
from helpers.decontamination.spans import cuts, pieces
from helpers.tokenizers.zoo import load_tokenizer
from quality_boundaries import filler

ITEM = filler(20, 7, 9000)  # an evaluation item of 20 made-up words
BENCH = EvalSet("bench", ("item-1",), (" ".join(ITEM),))


def prose(words: int, start: int) -> str:
    return " ".join(filler(words, 6, start))


@pytest.mark.parametrize("shared, found", [(12, False), (13, True), (20, True)])
def test_text_indexes_match_13_words_by_default_up_to_a_document_s_last_word(shared, found):
    text = prose(30, 0) + " " + " ".join(ITEM[:shared])  # the shared words end the document
    for index in (TextIndex([" ".join(ITEM)]), decontamination_step([BENCH]).index):
        matches = index.matches(text)
        assert bool(matches) is found
        if found:
            assert text[matches[0].start:matches[-1].end] == " ".join(ITEM[:shared])
            assert len(matches) == shared - 12 and matches[-1].end == len(text)


@pytest.mark.parametrize("shared, found", [(31, False), (32, True)])
def test_token_indexes_match_32_tokens_by_default(shared, found):
    item = np.arange(1000, 1100, dtype=np.int64)
    document = np.concatenate([np.arange(5, 50), item[:shared]])  # the shared tokens end the stream
    assert bool(TokenIndex([item]).matches(document)) is found


def test_the_audit_s_eval_overlap_reads_32_token_n_grams_by_default():
    tokenizer = load_tokenizer("bytes")
    assert eval_overlap([BENCH], tokenizer).index.n == 32
    assert eval_overlap([BENCH], tokenizer, ngram=20).index.n == 20
    assert eval_overlap([], tokenizer) is None


def test_a_piece_is_kept_from_exactly_200_characters():
    text = "x" * 1000
    assert pieces(text, [(400, 410)]) == ["x" * 200, "x" * 390]  # 0..199 kept: 200 characters
    assert pieces(text, [(401, 410)]) == ["x" * 201, "x" * 390]
    assert pieces(text, [(399, 410)]) == ["x" * 390]  # 0..198: 199 characters, dropped
    assert pieces(text, [(400, 600)]) == ["x" * 200, "x" * 200]


def test_cuts_widen_by_200_and_merge_where_they_touch():
    assert cuts([(500, 510)], 1000) == [(300, 710)]
    assert cuts([(100, 110), (510, 520)], 1000) == [(0, 720)]  # 310 touches 310: one cut
    assert cuts([(100, 110), (511, 520)], 1000) == [(0, 310), (311, 720)]
    assert cuts([(900, 990)], 1000) == [(700, 1000)]


@pytest.mark.parametrize("leaks, kept", [(9, True), (10, False)])
def test_gpt3_mode_keeps_a_document_cut_into_ten_pieces_and_drops_one_cut_into_eleven(leaks, kept):
    step = decontamination_step([BENCH], mode="gpt3")
    parts = [prose(100, 200 * k) for k in range(leaks + 1)]  # 699 characters between two leaks: 299 kept
    text = (" " + " ".join(ITEM[:13]) + " ").join(parts)
    notes = {}
    new, reason = step.apply(text, notes)
    if kept:
        assert reason is None and new.count("\n") == leaks and notes["spans_removed"] == leaks
        assert " ".join(ITEM[:13]) not in new
    else:
        assert reason.endswith("(cut into 11 pieces, more than 10)") and new == text


def test_gpt3_mode_empties_a_document_with_no_piece_of_200_characters_left():
    step = decontamination_step([BENCH], mode="gpt3")
    new, reason = step.apply(prose(10, 0) + " " + " ".join(ITEM), {})
    assert new == "" and reason.endswith("(no piece of 200 characters left)")


@pytest.mark.parametrize("evals, ngram, mode, line", [
    ([], 13, "drop", "--decontaminate: no evaluation set named; fix: name a JSONL or Parquet file, or humaneval"),
    (None, 0, "drop", "--ngram 0: an n-gram has at least one word; fix: e.g. --ngram 13 (GPT-3's)"),
    (None, 13, "cut", "--mode cut: not a mode; fix: one of drop, gpt3")])
def test_settings_that_cannot_decontaminate_are_refused_in_one_line(evals, ngram, mode, line):
    with pytest.raises(UserError) as refused:
        check_decontamination(evals, ngram, mode)
    assert str(refused.value) == line
    check_decontamination(None, 1, "gpt3")  # the least that can


def test_the_byte_tables_class_each_byte_as_str_split_and_string_punctuation_do():
    from helpers.decontamination import text_index

    classes, codes, table = text_index._byte_tables()
    for byte in range(128):
        character = chr(byte)
        expected = text_index.SPACE if character.isspace() else \
            text_index.PUNCTUATION if character in string.punctuation else text_index.WORD
        assert classes[byte] == expected, byte
    leads = {chr(code).encode()[0] for code in range(0x80, 0x110000) if chr(code).isspace()}
    assert leads == {0xC2, 0xE1, 0xE2, 0xE3}  # the first bytes of every other white space str.split splits on
    assert {byte for byte in range(128, 256) if classes[byte] == text_index.LEAD} == leads
    assert all(classes[byte] == text_index.WORD for byte in range(128, 256) if byte not in leads)
    words = [byte for byte in range(256) if classes[byte] in (text_index.WORD, text_index.LEAD)]
    assert all(codes[byte] & np.uint64(0xFFFFFFFF) == 1 for byte in words)  # each byte of a word counts one
    assert len({int(codes[byte]) for byte in words}) == len(words) - 26  # distinct but for case
    assert all(codes[ord(upper)] == codes[ord(upper.lower())] for upper in string.ascii_uppercase)
    assert not codes[classes == text_index.PUNCTUATION].any() and not codes[classes == text_index.SPACE].any()
    assert (table[classes == text_index.SPACE] == text_index.SPACE_CODE).all()
    assert (table[classes != text_index.SPACE] == codes[classes != text_index.SPACE]).all()
    for made, kept in zip((classes, codes, table), (text_index.CLASSES, text_index.CODES, text_index.TABLE)):
        assert (made == kept).all()


def test_the_package_names_its_indexes_lazily_and_nothing_else():
    import helpers.decontamination as package
    from helpers.decontamination import text_index, token_index

    assert (package.Match, package.TextIndex, package.TokenIndex) == (text_index.Match, text_index.TextIndex,
                                                                      token_index.TokenIndex)
    with pytest.raises(AttributeError) as refused:
        package.Index
    assert str(refused.value) == "module 'helpers.decontamination' has no attribute 'Index'"
