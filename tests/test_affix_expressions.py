"""spaCy's affix expressions, searched only where a match can be (`helpers.clean.text.affix_expressions`), find
what the plain expressions find, and the English splitter built on them cuts runs as spaCy's tokenizer does, on
text the project did not write: the machine's translation catalogues (many scripts), standard-library sources
and licences."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.clean.text import affix_expressions
from helpers.clean.text.words import EnglishWords, english_rules
from helpers.corpus import machine_text


@pytest.fixture(scope="module")
def outside_runs() -> list[str]:
    texts = [text for kind in ("translations", "code", "licences") for text in machine_text.texts(kind, 150_000)]
    runs = sorted({run for text in texts for run in text.split()})
    assert len(runs) > 10_000
    return runs


def spans(matches) -> list[tuple[int, int]]:
    return [match.span() for match in matches]


def test_suffix_infix_and_url_searches_find_what_the_plain_expressions_find(outside_runs):
    rules = english_rules()
    suffix, infix, url = (re.compile(*rules[name]) for name in ("suffix", "infix", "url"))
    firsts = affix_expressions.edges(rules["infix"], last=False, anchored=False)
    assert firsts is not None  # the infix expression is analysed, so its finder is the fast one
    fast_suffix = affix_expressions.suffix_search(rules["suffix"])
    fast_infix = affix_expressions.infix_finder(rules["infix"], firsts)
    fast_url = affix_expressions.url_match(rules["url"])
    for run in outside_runs + [run[:-1] + "\n" for run in outside_runs[::50]]:
        found = fast_suffix(run)
        assert (found and found.span()) == (suffix.search(run) and suffix.search(run).span()), run
        assert spans(fast_infix(run)) == spans(infix.finditer(run)), run
        assert bool(fast_url(run)) == bool(url.match(run)), run


ALPHABET = "ab.,:;-/()'\"!?…$%0123456789_–—«»¿「」。、ــ🎉𝐀"  # two beyond the Basic Multilingual Plane
RULES = english_rules()
SUFFIX, INFIX = (re.compile(*RULES[name]) for name in ("suffix", "infix"))
FAST_SUFFIX = affix_expressions.suffix_search(RULES["suffix"])
FAST_INFIX = affix_expressions.infix_finder(RULES["infix"], affix_expressions.edges(RULES["infix"], last=False,
                                                                                    anchored=False))


@settings(max_examples=2000, deadline=None)
@given(string=st.text(alphabet=ALPHABET, min_size=1, max_size=14))
def test_odd_strings_of_affix_characters_are_searched_alike(string):
    found, plain = FAST_SUFFIX(string), SUFFIX.search(string)
    assert (found and found.span()) == (plain and plain.span())
    assert spans(FAST_INFIX(string)) == spans(INFIX.finditer(string))


def test_a_character_class_holds_its_characters_and_every_one_beyond_the_plane_and_no_other():
    characters = frozenset("-]^\\abcdz~🎉") | frozenset(map(chr, range(0x400, 0x500)))
    found = re.compile(affix_expressions.character_class(characters)).fullmatch
    assert all(found(char) for char in characters | {"𝐀", "\U0010FFFF"})
    assert not any(found(char) for char in "efy[{!\u03ff\u0500\uffff")


def test_required_characters_are_held_by_every_match():
    parse = affix_expressions.parser().parse
    assert affix_expressions.required_characters(parse(r"ab+(?:c|dc)x?").data) == {"a", "b", "c"}
    assert affix_expressions.required_characters(parse(r"(?:a|b)z*").data) == set()
    assert "." in affix_expressions.required_characters(affix_expressions.parsed(*english_rules()["url"]).data)


def test_runs_of_other_text_are_cut_as_spacy_s_tokenizer_cuts_them(outside_runs):
    words = EnglishWords()
    for run in outside_runs:
        assert tuple(words.words(run)) == tuple(token.text for token in words.tokenizer(run)), run
