"""Decontamination's defaults and limits against values worked out by hand: each entry point's default n-gram (13
words for text, 32 tokens for ids), a window that ends on a document's last word, GPT-3's span removal at exactly
200 characters a piece and exactly ten pieces, and the settings refused."""

from __future__ import annotations

import json
import string

import numpy as np
import pytest

from helpers.audit.eval_overlap import eval_overlap
from helpers.clean.steps.decontaminate import SHOWN_CHARACTERS, check_decontamination, decontamination_step
from helpers.common.errors import UserError
from helpers.decontamination import TextIndex, TokenIndex
from helpers.decontamination.token_index import TokenMatch
from helpers.decontamination.evals import EvalSet
from helpers.decontamination.item_lengths import check_item_lengths
from helpers.decontamination.spans import cuts, pieces
from helpers.decontamination.table import NgramTable, bitmap
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


def words_of(count: int, start: int) -> str:
    return " ".join(filler(count, 5, start))


def test_items_are_counted_against_the_n_gram_and_short_patterns_refused_below_8_words():
    texts = ("", "...", words_of(8, 0), words_of(12, 100), words_of(13, 200), "x" * 50 + " " + words_of(9, 300))
    items = EvalSet("set", tuple(f"q{k}" for k in range(6)), texts)
    counts = [0, 0, 8, 12, 13, 10]
    assert check_item_lengths([items], counts, 13) == [
        'warning: --decontaminate set: 2 of 6 items have no word (empty or punctuation only: q0 "", q1 "..."); an '
        "item with no word matches nothing",
        f'warning: --decontaminate set: 3 of 6 items have fewer than 13 words (the shortest 8; q2 '
        f'"{words_of(8, 0)[:40]}...", q3 "{words_of(12, 100)[:40]}...", q5 "{"x" * 40}..."), each matched whole as '
        "one n-gram"]
    seven = " ".join(filler(7, 4))  # 34 characters: shown whole
    one = EvalSet("one", ("a",), (seven,))
    with pytest.raises(UserError) as refused:
        check_item_lengths([one], [7], 13)
    assert str(refused.value) == (
        f'--decontaminate one: 1 of 1 item has fewer than 8 words (a "{seven}"), and an item shorter than '
        "the n-gram is matched whole, so it matches ordinary text; fix: take those items out, or add "
        "--allow-short-ngrams to match them whole anyway")
    assert check_item_lengths([one], [7], 13, allow_short=True)[0].endswith(
        "each matched whole as one n-gram; under 8 words that matches ordinary text (--allow-short-ngrams)")
    assert check_item_lengths([one], [7], 7, allow_short=True) == [  # an item as long as the n-gram is an n-gram
        "warning: --ngram 7: n-grams of fewer than 8 words match ordinary text; they are matched as asked "
        "(--allow-short-ngrams)"]
    with pytest.raises(UserError, match="^--ngram 7: an n-gram of fewer than 8 words matches ordinary text"):
        check_item_lengths([EvalSet("x", ("a",), (words_of(20, 0),))], [20], 7)
    assert check_item_lengths([EvalSet("x", ("a",), (words_of(20, 0),))], [20], 8) == []
    with pytest.raises(UserError) as refused:
        check_item_lengths([EvalSet("none", ("a", "b"), ("", "!"))], [0, 0], 13)
    assert str(refused.value) == ("--decontaminate none: none of its 2 items has a word (each is empty or punctuation "
                                  "only); fix: name the fields that hold the items' text with --eval-keys")
    many = EvalSet("many", tuple("abcde"), ("",) * 4 + (words_of(13, 0),))
    assert check_item_lengths([many], [0, 0, 0, 0, 13], 13)[0] == (
        'warning: --decontaminate many: 4 of 5 items have no word (empty or punctuation only: a "", b "", c "" and '
        "1 more); an item with no word matches nothing")


def test_the_report_counts_each_set_s_items_found_empty_and_short():
    class Run:
        notes = {}

    step = decontamination_step([BENCH, EvalSet("other", ("e", "s", "w"), ("", words_of(9, 0), words_of(15, 50)))],
                                allow_short=False)
    notes = {}
    step.apply(prose(20, 0) + " " + " ".join(ITEM[:13]), notes)
    step.apply(" ".join(ITEM[2:17]), notes)
    Run.notes = {step.name: notes}
    assert step.report(Run()) == {
        "mode": "drop", "ngram": 13, "patterns": step.index.patterns,
        "benchmarks": {"bench": {"items": 1, "items_found": 1, "items_without_words": 0, "items_shorter_than_ngram": 0,
                                 "documents": {"item-1": 2}},
                       "other": {"items": 3, "items_found": 0, "items_without_words": 1,
                                 "items_shorter_than_ngram": 1, "documents": {}}}}
    assert step.report(type("Empty", (), {"notes": {}})())["benchmarks"]["bench"]["items_found"] == 0


def test_the_shared_flags_read_eval_sets_and_keys_and_refuse_a_flag_without_them():
    import argparse

    from helpers.decontamination.flags import add_eval_flags, eval_keys, refuse_without_evals

    parser = argparse.ArgumentParser()
    add_eval_flags(parser, "drops the documents that hold one")
    args = parser.parse_args([])
    assert (args.decontaminate, args.eval_keys) == (None, None)
    refuse_without_evals(args, ngram=None)  # nothing given: nothing refused
    args = parser.parse_args(["--decontaminate", "a.jsonl", "humaneval", "--eval-keys", "question,,answer"])
    assert args.decontaminate == ["a.jsonl", "humaneval"] and eval_keys(args.eval_keys) == ("question", "answer")
    refuse_without_evals(args, ngram=20, allow_short_ngrams=True)
    assert eval_keys(None) == () and eval_keys(["a", "", "b"]) == ("a", "b")
    assert "[--decontaminate EVAL [EVAL ...]] [--eval-keys FIELDS]" in " ".join(parser.format_help().split())
    helps = {action.dest: action.help for action in parser._actions}
    assert helps["decontaminate"] == "evaluation sets, JSONL or Parquet files or humaneval: drops the documents " \
                                     "that hold one"
    assert helps["eval_keys"] == "the evaluation items' fields to protect, comma-separated (default: a named set's " \
                                 "own, else text)"
    for argv, flags, line in (
            (["--eval-keys", "q"], {}, "--eval-keys q: only --decontaminate reads it; fix: add --decontaminate EVAL, "
                                       "or leave --eval-keys out"),
            ([], {"ngram": 20}, "--ngram 20: only --decontaminate reads it; fix: add --decontaminate EVAL, or leave "
                                "--ngram out"),
            ([], {"allow_short_ngrams": True}, "--allow-short-ngrams: only --decontaminate reads it; fix: add "
                                               "--decontaminate EVAL, or leave --allow-short-ngrams out")):
        with pytest.raises(UserError) as refused:
            refuse_without_evals(parser.parse_args(argv), **flags)
        assert str(refused.value) == line


def test_gpt3_words_lowercase_ascii_drop_ascii_punctuation_and_split_on_any_white_space():
    from helpers.decontamination.words import gpt3_word_spans, gpt3_words

    text = "Hello, World!\u00a0It's  ÄÖ--x \u3000 ... ok"
    assert gpt3_words(text) == ["hello", "world", "its", "ÄÖx", "ok"]
    assert gpt3_word_spans(text) == [("hello", 0, 6), ("world", 7, 13), ("its", 14, 18), ("ÄÖx", 20, 25),
                                     ("ok", 32, 34)]
    assert gpt3_word_spans("the cat, the cat") == [("the", 0, 3), ("cat", 4, 8), ("the", 9, 12), ("cat", 13, 16)]


def test_the_step_takes_its_settings_from_the_command_s_values_and_refuses_short_items_unless_allowed(tmp_path):
    from helpers.clean.steps.decontaminate import Decontamination

    path = tmp_path / "evals.jsonl"
    path.write_text(json.dumps({"id": "long", "text": " ".join(ITEM)}) + "\n"
                    + json.dumps({"id": "short", "text": "five words make no n-gram"}) + "\n")
    values = {"decontaminate": [str(path)], "eval_keys": None, "decontaminate_ngram": 20, "decontaminate_mode": "gpt3",
              "allow_short_ngrams": True}
    step, = Decontamination.build(values)
    assert (step.mode, step.ngram, step.index.n) == ("gpt3", 20, 20)
    with pytest.raises(UserError, match="fewer than 8 words"):
        Decontamination.build({**values, "allow_short_ngrams": False})
    short = EvalSet("short", ("s",), ("five words make no n-gram",))
    with pytest.raises(UserError, match="fewer than 8 words"):
        decontamination_step([short])
    assert decontamination_step([short], allow_short=True, mode="gpt3").mode == "gpt3"
    from helpers.clean.steps.decontaminate import CutContaminated, DropContaminated

    for step_class in (DropContaminated, CutContaminated):  # each step refuses them unless told otherwise
        with pytest.raises(UserError, match="fewer than 8 words"):
            step_class([short])
    with pytest.raises(ValueError) as refused:
        decontamination_step([BENCH], mode="cut")
    assert str(refused.value) == "mode 'cut': one of drop, gpt3"


def test_matches_are_counted_per_document_and_shown_as_written():
    accented = EvalSet("accents", ("a",), (" ".join(["café"] + filler(15, 6, 7000)),))
    step = decontamination_step([accented])
    notes = {}
    text = "Le " + accented.texts[0]
    first = " ".join(accented.texts[0].split()[:13])  # the first 13-gram, as the text writes it
    assert step.apply(text, notes)[1] == f"accents a: {json.dumps(first[:SHOWN_CHARACTERS], ensure_ascii=False)}"
    assert "café" in step.apply(text, {})[1]
    step.apply(text, notes)
    assert notes["documents_matched"] == 2 and notes["items"] == {"accents a": 2}


def test_gpt3_mode_joins_the_pieces_it_keeps_by_newlines_and_counts_the_cuts_of_every_document():
    step = decontamination_step([BENCH], mode="gpt3")
    parts = [prose(100, 200 * k) for k in range(3)]
    text = (" " + " ".join(ITEM[:13]) + " ").join(parts)
    notes = {}
    new, reason = step.apply(text, notes)
    pieces_kept = pieces(text, [(m.start, m.end) for m in step.index.matches(text)])
    assert reason is None and new == "\n".join(pieces_kept) and len(pieces_kept) == 3
    step.apply(text, notes)
    assert notes["spans_removed"] == 4


def test_the_report_counts_an_item_of_one_word_as_short_and_one_of_exactly_the_n_gram_as_not():
    class Run:
        notes = {}

    sizes = EvalSet("sizes", ("one", "thirteen", "fourteen"),
                    ("word", " ".join(filler(13, 6, 100)), " ".join(filler(14, 6, 200))))
    step = decontamination_step([sizes], allow_short=True)
    assert step.report(Run())["benchmarks"]["sizes"]["items_shorter_than_ngram"] == 1


def test_item_lengths_are_read_set_by_set_and_shown_as_written():
    sets = [EvalSet("a", ("a1",), (" ".join(filler(20, 6)),)), EvalSet("b", ("b1", "b2"), ("x", "")),
            EvalSet("c", ("c1",), ("é" * 40,))]
    lines = check_item_lengths(sets, [20, 1, 0, 1], 13, allow_short=True)
    assert lines == [
        'warning: --decontaminate b: 1 of 2 items has no word (empty or punctuation only: b2 ""); an item with no '
        "word matches nothing",
        'warning: --decontaminate b: 1 of 2 items has fewer than 13 words (the shortest 1; b1 "x"), each matched whole '
        "as one n-gram; under 8 words that matches ordinary text (--allow-short-ngrams)",
        f'warning: --decontaminate c: 1 of 1 item has fewer than 13 words (the shortest 1; c1 "{"é" * 40}"), each '
        "matched whole as one n-gram; under 8 words that matches ordinary text (--allow-short-ngrams)"]
    with pytest.raises(UserError) as refused:
        check_item_lengths(sets, [20, 1, 1, 0], 13, allow_short=True)
    assert str(refused.value).startswith("--decontaminate c: none of its 1 items has a word")
    shown = check_item_lengths([EvalSet("d", ("d1", "d2"), ("é" * 40, "ü" * 41))], [1, 1], 13, allow_short=True)
    assert f'd1 "{"é" * 40}", d2 "{"ü" * 40}..."' in shown[0]


def test_the_scan_reads_every_text_of_a_batch_and_lone_surrogates():
    from helpers.decontamination import text_index

    index = TextIndex([" ".join(ITEM)])
    leak = " ".join(ITEM[:13])
    texts = [f"\ud800 {leak} and {leak}", "nothing here", ""]
    found = index.matches_each(texts)
    assert [len(each) for each in found] == [2, 0, 0]
    assert [len(each) for each in index.matches_each(texts, first=True)] == [1, 0, 0]
    assert [len(index.matches(text)) for text in texts] == [2, 0, 0]
    assert [len(index.matches(text, first=True)) for text in texts] == [1, 0, 0]
    assert TextIndex([]).matches_each(texts) == [[], [], []] and index.matches_each([]) == []
    classes, codes, table = text_index._byte_tables()
    assert (classes.dtype, codes.dtype, table.dtype) == (np.uint8, np.uint64, np.uint64)


def test_an_item_holding_a_lone_surrogate_is_matched_over_it():
    words = [*ITEM[:6], "lone\ud800word", *ITEM[6:12]]  # 13 words, one holding a lone surrogate
    index = TextIndex([" ".join(words), "elsewhere " * 20])
    text = f"{prose(5, 0)} {' '.join(words)} {prose(5, 50)}"
    found = index.matches(text)
    assert [(match.item, text[match.start:match.end]) for match in found] == [(0, " ".join(words))]
    assert index.matches_each([text, text.replace("\ud800", "")]) == [found, []]


def test_matches_come_in_the_order_of_their_first_words():
    """A 13-word window from the text's first word, then an item of three words from its second word: by where
    each begins, not where each ends (the three words end first)."""
    index = TextIndex([" ".join(ITEM), " ".join(ITEM[1:4])])
    text = " ".join(ITEM[:13])
    found = index.matches(text)
    assert [(match.item, match.start) for match in found] == [(0, 0), (1, len(ITEM[0]) + 1)]
    assert [match.item for match in index.matches(text, first=True)] == [0]
    assert [[match.item for match in each] for each in index.matches_each([text, text], first=True)] == [[0], [0]]


def test_a_long_document_is_scanned_whole_with_room_for_its_candidates_by_its_size():
    """The scan's first room for candidates grows with the document (one a KB, from 256): a 300 KB document with
    the item near its end."""
    leak = " ".join(ITEM[:13])
    text = prose(50_000, 0) + " " + leak + " " + prose(20, 7)
    assert len(text.encode()) // 1024 > 256
    found = TextIndex([" ".join(ITEM)]).matches(text)
    assert [text[match.start:match.end] for match in found] == [leak]


def test_a_token_index_of_no_items_matches_nothing_and_a_one_token_item_matches_one_token():
    assert TokenIndex([]).patterns == 0 and TokenIndex([]).matches(np.array([1, 2, 3])) == []
    assert TokenIndex([[7]]).matches(np.array([7])) == [TokenMatch(0, 0, 1)]
    assert TokenIndex([[7]]).matches(np.array([], np.int64)) == []


def test_token_windows_holding_id_0_and_the_ids_at_a_64_bit_word_s_edge_are_matched():
    """The scan looks up only windows of the items' own ids (a bitmap, 64 ids a word): id 0, and 64 as the
    largest (the first id of the bitmap's second word), are among them."""
    index = TokenIndex([[0, 64, 3]], n=2)
    assert index.matches(np.array([9, 0, 64, 3])) == [TokenMatch(0, 1, 3), TokenMatch(0, 2, 4)]
    assert TokenIndex([[63, 64]], n=2).matches(np.array([63, 64])) == [TokenMatch(0, 0, 2)]
    # past 16,384 tokens the scan starts with room for a 64th of them (still whole numbers)
    long = np.concatenate([np.arange(20_000) % 1000 + 100, [0, 64]])
    assert index.matches(long) == [TokenMatch(0, 20_000, 20_002)]


def test_token_matches_at_one_start_come_in_the_order_of_their_items():
    """Two items shorter than the n-gram, whole patterns, one the other's first tokens: both match at token 0,
    the first item first (though the second's window ends first)."""
    assert TokenIndex([[5, 6, 7], [5, 6]]).matches(np.array([5, 6, 7])) == [TokenMatch(0, 0, 3), TokenMatch(1, 0, 2)]


@pytest.mark.parametrize("entries, slots", [(0, 16), (1, 16), (8, 16), (9, 32), (16, 32), (17, 64)])
def test_the_table_keeps_at_least_twice_its_entries_in_slots_and_no_fewer_than_16(entries, slots):
    table = NgramTable([np.arange(1, entries + 1, dtype=np.uint64)], 1) if entries else NgramTable([], 1)
    assert table.table_keys.size == table.table_first.size == slots
    assert np.count_nonzero(table.table_keys) == entries  # every window of one unit has a key of its own
    assert np.all(table.table_first[table.table_keys == 0] == -1)
    assert np.all(table.following == -1)
    assert [a.dtype for a in (table.entry_item, table.entry_position, table.entry_length)] == [np.int32] * 3


def test_the_table_s_arrays_have_the_dtypes_the_scans_are_compiled_for():
    table = NgramTable([np.array([5, 6, 7], np.uint64), np.array([5, 6], np.uint64), np.array([], np.uint64)], 2)
    assert [a.dtype for a in (table.entry_item, table.entry_position, table.entry_length)] == [np.int32] * 3
    assert (table.table_keys.dtype, table.table_first.dtype, table.following.dtype) == (np.uint64, np.int64, np.int64)
    assert table.entry_item.tolist() == [0, 0, 1] and table.entry_position.tolist() == [0, 1, 0]
    assert table.entry_length.tolist() == [2, 2, 2] and table.lengths.tolist() == [2]
    assert table.following.tolist() == [2, -1, -1]  # item 1's window (5, 6) is item 0's first: chained after it


def test_a_one_unit_item_is_a_pattern_of_one_and_an_n_gram_of_no_unit_is_refused():
    table = NgramTable([np.array([9], np.uint64), np.array([1, 2, 3], np.uint64)], 2)
    assert table.entry_length.tolist() == [1, 2, 2] and table.lengths.tolist() == [1, 2]
    with pytest.raises(ValueError, match="^an n-gram has at least one unit$"):
        NgramTable([np.array([9], np.uint64)], 0)


@pytest.mark.parametrize("bits, words", [(0, 1), (1, 1), (64, 1), (65, 2), (128, 2), (129, 3)])
def test_a_bitmap_has_one_64_bit_word_for_each_64_bits_begun(bits, words):
    positions = np.array([bits - 1] if bits else [], np.int64)
    got = bitmap(positions, bits)
    assert got.dtype == np.uint64 and got.size == words
    if bits:
        assert int(got[(bits - 1) // 64]) == 1 << ((bits - 1) % 64) and np.count_nonzero(got) == 1


def test_the_step_reads_its_settings_into_tuples_and_shows_them_in_report_json_as_lists():
    from helpers.clean.steps.decontaminate import Decontamination

    values = {"decontaminate": ["humaneval"], "eval_keys": "prompt,canonical_solution", "decontaminate_ngram": 13,
              "decontaminate_mode": "drop", "allow_short_ngrams": False}
    read = Decontamination.read(values)
    assert (read["decontaminate"], read["eval_keys"]) == (("humaneval",), ("prompt", "canonical_solution"))
    assert Decontamination.shown(read) == {**values, "decontaminate": ["humaneval"],
                                           "eval_keys": ["prompt", "canonical_solution"]}
    with pytest.raises(UserError, match=r"^--decontaminate: no evaluation set named; fix: name a JSONL or Parquet "
                                        r"file, or humaneval$"):
        Decontamination.read({**values, "decontaminate": []})
