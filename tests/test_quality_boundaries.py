"""Each rule of the four quality filters at its exact limit and one step either side (`quality_boundaries`): the
verdict each case was built for, held by our filters, by a golden file of datatrove 0.10.1's own verdicts on the
same texts (all four filters on every case, C4's kept text too), and, where datatrove is installed (the `dedup-peer`
extra), by datatrove itself, so that the golden file cannot drift from it."""

from __future__ import annotations

import json
import re

import pytest

from helpers.clean.steps import filters
from helpers.clean.steps.filters import FILTERS, C4Quality, FineWebQuality, GopherQuality
from quality_boundaries import GOLDEN, boundary_cases, datatrove_verdicts, sentence

CASES = boundary_cases()
RULES = {  # every rule each filter names, as datatrove names it
    "gopher-quality": {"gopher_short_doc", "gopher_long_doc", "gopher_below_avg_threshold",
                       "gopher_above_avg_threshold", "gopher_too_many_hashes", "gopher_too_many_ellipsis",
                       "gopher_too_many_bullets", "gopher_too_many_end_ellipsis", "gopher_below_alpha_threshold",
                       "gopher_enough_stop_words"},
    "gopher-repetition": {"empty", "dup_para_frac", "dup_para_char_frac", "dup_line_frac", "dup_line_char_frac",
                          "top_2_gram", "top_3_gram", "top_4_gram", "duplicated_5_n_grams",
                          "duplicated_10_n_grams"},
    "c4-quality": {"lorem_ipsum", "curly_bracket", "too_few_sentences"},
    "fineweb-quality": {"empty", "line_punct_ratio", "short_line_ratio", "char_dup_ratio", "list_ratio"},
}


REASONS = {  # the whole line each "over" case gets: the rule, the value that failed it, the limit
    "words 49, minimum 50": "gopher_short_doc: 49 words < 50",
    "words 100,001, maximum 100,000": "gopher_long_doc: 100001 words > 100000",
    "mean word length 2.98, minimum 3": "gopher_below_avg_threshold: mean word length 2.98 < 3",
    "mean word length 10.02, maximum 10": "gopher_above_avg_threshold: mean word length 10.02 > 10",
    "7 '#' among 61 words, maximum 0.1 per word": "gopher_too_many_hashes: 0.115 per word > 0.1",
    "7 '...' among 61 words, maximum 0.1 per word": "gopher_too_many_ellipsis: 0.115 per word > 0.1",
    "10 of 10 lines bullets, maximum 0.9": "gopher_too_many_bullets: 1.000 of lines > 0.9",
    "4 of 10 lines end in an ellipsis, maximum 0.3": "gopher_too_many_end_ellipsis: 0.400 of lines > 0.3",
    "39 of 50 words with a letter, minimum 0.8": "gopher_below_alpha_threshold: 0.780 of words with a letter < 0.8",
    "stop words 1 ('the' twice), minimum 2": "gopher_enough_stop_words: 1 stop words < 2",
    "4 repeated paragraphs of 10, maximum 0.3": "dup_para_frac: 0.400 of paragraphs repeated > 0.3",
    "a paragraph of 101 characters repeated in 500, maximum 0.2":
        "dup_para_char_frac: 0.202 of characters in repeated paragraphs > 0.2",
    "4 repeated lines of 10, maximum 0.3": "dup_line_frac: 0.400 of lines repeated > 0.3",
    "a line of 101 characters repeated in 500, maximum 0.2":
        "dup_line_char_frac: 0.202 of characters in repeated lines > 0.2",
    "the top 2-gram covers 50 of 249 characters, maximum 0.2":
        "top_2_gram: the most frequent 2-gram covers 0.201 of characters > 0.2",
    "a 5-word phrase of 30 characters twice in 199, maximum 0.15":
        "duplicated_5_n_grams: repeated 5-grams cover 0.151 of characters > 0.15",
    "4 sentences in kept lines, minimum 5": "too_few_sentences: 4 sentences in kept lines < 5",
    "2 of 25 lines end a sentence, minimum 0.12": "line_punct_ratio: 0.080 of lines end a sentence < 0.12",
    "68 of 100 lines of 30 characters or fewer, maximum 0.67":
        "short_line_ratio: 0.680 of lines of 30 characters or fewer > 0.67",
    "a line of 40 characters twice in 3999, maximum 0.01":
        "char_dup_ratio: 0.010 of characters in repeated lines > 0.01",
    "9 newlines and 29 words, maximum 0.3 per word": "list_ratio: 0.310 newlines per word > 0.3",
}


@pytest.fixture(autouse=True, scope="module")
def words_split_afresh():
    """The splitter and the words' totals made again in this module, so that what they remember from other tests
    (or from the process this one was forked from) is not what these cases are decided by."""
    filters._SPLITTER = None
    filters._TOTALS.clear()


def decide(name: str, text: str) -> tuple[str, str | None]:
    kept, reason = FILTERS[name]().apply(text, {})
    return kept, None if reason is None else reason.split(":")[0]


@pytest.mark.parametrize("case", CASES, ids=[re.sub(r"[^a-z0-9]+", "-", f"{case[1]} {case[0]}".lower()).strip("-")
                                             for case in CASES])
def test_each_case_gets_the_verdict_it_was_built_for(case):
    name, filter_name, verdict, text = case
    assert decide(filter_name, text)[1] == verdict


def test_the_cases_reach_every_rule_of_each_filter_and_keep_a_document_at_each_limit():
    for filter_name, rules in RULES.items():
        built = {verdict for _, name, verdict, _ in CASES if name == filter_name}
        assert built == rules | {None}, filter_name
    at_limits = [name for name, _, verdict, _ in CASES if verdict is None]
    assert len(at_limits) >= 30


def test_every_filter_decides_every_case_as_datatrove_s_golden_verdicts():
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))["verdicts"]
    assert [entry["case"] for entry in golden] == [case[0] for case in CASES]
    for (name, filter_name, verdict, text), entry in zip(CASES, golden):
        assert entry[filter_name] == verdict, name  # datatrove agrees with what the case was built for
        for key in FILTERS:
            kept, rule = decide(key, text)
            assert rule == entry[key], (name, key)
            if key == "c4-quality" and rule is None:
                assert kept == entry["c4-quality kept text"], name


def test_c4_keeps_the_lines_it_should_and_removes_citations():
    text = dict((name, text) for name, _, _, text in CASES)["citations are removed from kept lines"]
    kept, rule = decide("c4-quality", text)
    assert rule is None
    assert kept.splitlines()[-1] == "The first and second and third and  notes."


def test_the_golden_file_is_datatrove_s_own_verdicts():
    pytest.importorskip("datatrove", reason="datatrove is not installed (pip install -e '.[dedup-peer]'): the "
                                            "golden file stands in for it")
    assert datatrove_verdicts() == json.loads(GOLDEN.read_text(encoding="utf-8"))["verdicts"]


def test_each_removal_names_its_rule_the_value_that_failed_it_and_the_limit():
    texts = {name: (filter_name, text) for name, filter_name, _, text in CASES}
    for name, line in REASONS.items():
        filter_name, text = texts[name]
        assert FILTERS[filter_name]().apply(text, {})[1] == line, name


def test_settings_other_than_the_defaults_change_what_they_name():
    five = "\n".join(sentence(k) for k in range(5))
    # a Gopher rule off: a text of symbols only has no mean word length, and the hashes decide
    assert GopherQuality(min_doc_words=0).reason("# #") == "gopher_too_many_hashes: 1.000 per word > 0.1"
    # C4: citations kept when asked; a word-length limit of -1 is none; each line rule can be turned off
    kept, rule = C4Quality(remove_citations=False).apply(five + "\nThe first[1] note is here.", {})
    assert rule is None and kept.endswith("The first[1] note is here.")
    long_word = f"The {'x' * 1500} word."
    kept, rule = C4Quality(max_word_length=-1).apply(long_word + "\n" + five, {})
    assert rule is None and kept.startswith(long_word)
    for setting, line in (("filter_lorem_ipsum", "Lorem ipsum dolor sit amet."),
                          ("filter_curly_bracket", "The set {a, b} is small."),
                          ("filter_javascript", "Enable JavaScript to see it."),
                          ("filter_policy", "Read the privacy policy here now.")):
        cut = "No javascript at all." if setting == "filter_policy" else "Read our cookie policy."  # still on
        kept, rule = C4Quality(**{setting: False}).apply("\n".join([line, five, cut]), {})
        assert rule is None and kept == "\n".join([line, five]), setting
    # javascript lines are cut with the other two line rules off
    kept, rule = C4Quality(filter_lorem_ipsum=False, filter_policy=False).apply(
        "\n".join([five, "Enable JavaScript to see it."]), {})
    assert rule is None and kept == five
    # a citation inside "lorem ipsum" is removed before the line is read
    assert C4Quality().apply("\n".join([five, "Lorem[1] ipsum dolor sit amet."]), {})[1] == \
        "lorem_ipsum: a line holds 'lorem ipsum'"
    # FineWeb: the characters that end a line, and a text without any counted as none at all when asked
    assert FineWebQuality(stop_chars=("!",)).reason(five) == "line_punct_ratio: 0.000 of lines end a sentence < 0.12"
    bare = "\n".join(sentence(k)[:-1] + " and more words here" for k in range(5))
    assert FineWebQuality(line_punct_exclude_zero=True).reason(bare) is None
    assert FineWebQuality().reason(bare) == "line_punct_ratio: 0.000 of lines end a sentence < 0.12"
