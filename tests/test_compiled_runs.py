"""The compiled splitter of new runs (`helpers.clean.text.compiled_runs`) and the machine under it
(`affix_programs`, `affix_machine`): the machine finds what the standard library's `re` finds, with spaCy's own
prefix, suffix, infix and URL expressions and with small expressions of every construct it runs, and the splitter
cuts runs as the Python algorithm does (itself held to spaCy's tokenizer in `test_affix_expressions.py`), on text
the project did not write: translation catalogues, standard-library sources, licences, man pages."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.clean.text import affix_machine
from helpers.clean.text.affix_programs import (EXPRESSION_FIELDS, EXPRESSIONS, Expression, Packed, Programs,
                                              Unsupported, pack_expression, pack_machine, parsed_plainly)
from helpers.clean.text.compiled_runs import HEADER, CompiledRuns
from helpers.clean.text.words import EnglishWords, english_rules
from helpers.corpus import machine_text

RULES = english_rules()
NAMES = ("prefix", "suffix", "infix")


@pytest.fixture(scope="module")
def outside_runs() -> list[str]:
    texts = [text for kind in ("translations", "code", "licences", "man-pages")
             for text in machine_text.texts(kind, 120_000)]
    runs = sorted({run for text in texts for run in text.split()})
    assert len(runs) > 10_000
    return runs


class Machine:
    """spaCy's three affix expressions and its URL expression, packed as the splitter packs them."""

    def __init__(self):
        programs = Programs()
        expressions = [Expression(programs, RULES[name], last=name == "suffix") for name in NAMES]
        self.url = programs.program(parsed_plainly(RULES["url"]).data)
        packed = Packed(HEADER)
        pack_machine(packed, programs)
        for number, expression in enumerate(expressions):
            pack_expression(packed, number, expression)
        self.rules = packed.array()
        self.bases = dict(zip(NAMES, (EXPRESSIONS + EXPRESSION_FIELDS * number for number in range(3))))
        self.stack = np.empty((4096, 2), np.int64)

    def found(self, string: str, start: int = 0):
        """(prefix length, suffix length, infix spans, URL or not) of `string[start:]`."""
        codes = np.frombuffer(string.encode("utf-32-le", "surrogatepass"), np.uint32).astype(np.int64)
        end, stack = len(string), self.stack
        prefix = affix_machine.prefix_length(self.rules, self.bases["prefix"], codes, start, end, stack)
        suffix = affix_machine.suffix_length(self.rules, self.bases["suffix"], codes, start, end, stack)
        infixes, place = [], start
        while True:
            found, found_end = affix_machine.next_infix(self.rules, self.bases["infix"], codes, start, end, place,
                                                        stack)
            if found < 0:
                break
            infixes.append((found - start, found_end - start))
            place = found_end
        url = affix_machine.run_program(self.rules, self.url, codes, start, end, start, stack) >= 0
        return prefix, suffix, infixes, url


PLAIN = {name: re.compile(*RULES[name]) for name in (*NAMES, "url")}


def expected(string: str):
    prefix, suffix = PLAIN["prefix"].search(string), PLAIN["suffix"].search(string)
    return (prefix and prefix.end() - prefix.start() or 0, suffix and suffix.end() - suffix.start() or 0,
            [match.span() for match in PLAIN["infix"].finditer(string)], bool(PLAIN["url"].match(string)))


@pytest.fixture(scope="module")
def machine() -> Machine:
    return Machine()


def test_the_machine_finds_what_re_finds_with_spacy_s_expressions(outside_runs, machine):
    strings = outside_runs + ["https://example.com/a?b=1", "user@mail.example.org", "10.0.0.1", "192.168.1.20:8080",
                              "a.b.c.d", "...", "x..", "°C.", "5km", "US$", "(╯°□°）╯︵┻━┻"]
    for string in strings:
        assert machine.found(string) == expected(string), string
        if len(string) > 2:  # a string that starts further in, as the splitter searches a run's rest
            assert machine.found("(" + string, 1) == expected(string), string


# affix characters of many kinds, two beyond the Basic Multilingual Plane, a newline, a lone surrogate
ALPHABET = "ab.,:;-/()'\"!?…$%0123456789_–—«»¿「」。、ــ🎉𝐀°FC+*^km²sS’@#:\n\ud800"


@settings(max_examples=3000, deadline=None)
@given(string=st.text(alphabet=ALPHABET, min_size=1, max_size=16))
def test_odd_strings_are_searched_as_re_searches_them(machine, string):
    assert machine.found(string) == expected(string)


SMALL = [(r"(?<!a)b", ["b", "ab", "cb", "bb"]), (r"(?<=ab|cd)x", ["abx", "cdx", "adx", "x"]),
         (r"a(?=b|cd)", ["ab", "acd", "ac", "a"]), (r"a(?!(?:b|c)\d)\w", ["ab1", "abx", "ad", "ac2"]),
         (r"\w+\s\d{2,3}", ["ab 12", "ab 1", "ab 1234", "é\u00a0٣٤"]), (r"[^\W\d_]+", ["abc1", "_a", "ß9"]),
         (r"\S+?@", ["ab@c", "@", "a b@"]), (r"[^a-c]x", ["dx", "ax", "\nx"]), (r".+$", ["ab\n", "ab", "\n"]),
         (r"a{2,4}?b", ["aab", "aaaaab", "ab"]), (r"(?:ab|a)(?:bc|c)$", ["abc", "abbc", "ac"]),
         (r"x[^y]z", ["xaz", "xyz", "x\nz"]), (r"\D\W\s", ["a. ", "1. ", "a.x"])]


@pytest.mark.parametrize("pattern, strings", SMALL, ids=[pattern for pattern, _ in SMALL])
def test_every_construct_it_runs_matches_as_re_matches(pattern, strings):
    programs = Programs()
    start = programs.program(parsed_plainly([pattern, re.UNICODE]).data)
    packed = Packed(HEADER)
    pack_machine(packed, programs)
    rules, stack = packed.array(), np.empty((256, 2), np.int64)
    for string in strings:
        codes = np.frombuffer(string.encode("utf-32-le"), np.uint32).astype(np.int64)
        found = re.match(pattern, string)
        assert affix_machine.run_program(rules, start, codes, 0, len(string), 0, stack) == (
            found.end() if found else -1), (pattern, string)


@pytest.mark.parametrize("expression", [[r"ab", re.IGNORECASE], [r"(?i)ab", re.UNICODE], [r"(a)\1", re.UNICODE],
                                        [r"(?<=a+)b", re.UNICODE], [r"(?:a?)*b", re.UNICODE]])
def test_what_it_does_not_run_is_refused(expression):
    with pytest.raises(Unsupported):
        Programs().program(parsed_plainly(expression).data)


def test_new_runs_are_cut_as_the_python_algorithm_cuts_them(outside_runs):
    words = EnglishWords()
    compiled = CompiledRuns.of(words, RULES)
    assert compiled is not None  # spaCy's English rules hold nothing it does not run
    found: dict[str, tuple[str, ...]] = {}
    left = compiled.split_into(outside_runs, found)
    assert len(left) < len(outside_runs) / 10  # words that spaCy's last phase may join, and the like
    assert sorted(left + list(found)) == outside_runs
    for run, tokens in found.items():
        assert tokens == words._joined(words._split(run, specials=True)), run


@settings(max_examples=2000, deadline=None)
@given(runs=st.lists(st.text(alphabet=ALPHABET.replace("\n", "") + "IOtn'", min_size=1, max_size=12), min_size=1,
                     max_size=6))
def test_odd_runs_are_cut_as_the_python_algorithm_cuts_them(runs):
    found: dict[str, tuple[str, ...]] = {}
    runs = list(dict.fromkeys(runs))
    left = COMPILED.split_into(runs, found)
    assert sorted(left + list(found)) == sorted(runs)
    for run, tokens in found.items():
        assert tokens == WORDS._joined(WORDS._split(run, specials=True)), run


WORDS = EnglishWords()
COMPILED = CompiledRuns.of(WORDS, RULES)


def test_a_text_s_words_are_the_same_with_the_compiled_splitter_or_without():
    texts = [text for kind in ("translations", "code", "licences") for text in machine_text.texts(kind, 60_000)]
    compiled, plain = EnglishWords(), EnglishWords()
    compiled.load_compiled()
    plain.compiled = None
    for text in texts:
        assert compiled.words(text) == plain.words(text)
    assert compiled.runs == plain.runs and compiled.split_in_python < len(compiled.runs) / 2


def test_the_packed_rules_read_back_are_those_built_afresh():
    words = EnglishWords()
    assert words.compiled is not None
    CompiledRuns.of(words, RULES)  # written where it was not
    assert np.array_equal(CompiledRuns.of(words, RULES).rules, CompiledRuns(words, RULES).rules)


def test_a_text_with_lone_surrogates_is_split_and_measured():
    """A JSON escape can bring a lone surrogate into a text: it is a character like another, as spaCy takes it."""
    from helpers.clean.steps.filters import FILTERS

    text = " ".join(["wo\ud800rd", "(the\udfff)", "cat,", "sat."] * 40)
    compiled, plain = EnglishWords(), EnglishWords()
    compiled.load_compiled()
    plain.compiled = None
    assert compiled.words(text) == plain.words(text) and "wo\ud800rd" in plain.words(text)
    assert FILTERS["gopher-repetition"]().apply(text, {})[1].startswith("top_2_gram")  # measured compiled
