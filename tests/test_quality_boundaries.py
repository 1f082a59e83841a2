"""Each rule of the four quality filters at its exact limit and one step either side (`quality_boundaries`): the
verdict each case was built for, held by our filters, by a golden file of datatrove 0.10.1's own verdicts on the
same texts (all four filters on every case, C4's kept text too), and, where datatrove is installed (the `dedup-peer`
extra), by datatrove itself, so that the golden file cannot drift from it."""

from __future__ import annotations

import json

import pytest

from helpers.clean.steps.filters import FILTERS
from quality_boundaries import GOLDEN, boundary_cases, datatrove_verdicts

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


def decide(name: str, text: str) -> tuple[str, str | None]:
    kept, reason = FILTERS[name]().apply(text, {})
    return kept, None if reason is None else reason.split(":")[0]


@pytest.mark.parametrize("case", CASES, ids=[f"{case[1]}: {case[0]}" for case in CASES])
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
