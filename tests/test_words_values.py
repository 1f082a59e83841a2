"""Words and sentences of English against a table of datatrove 0.10.1's own answers (`split_into_words`,
`split_into_sentences`, spaCy's tokenizer and sentencizer underneath), written down here so that they hold without
datatrove installed: sentence ends, quotes and brackets after them, runs of white space that spaCy makes tokens of
(which can start a sentence), text without a token; each asked of a new splitter, whose remembered runs are empty."""

from __future__ import annotations

import importlib.metadata
import json
import sys

import pytest

from helpers.clean.text.words import EnglishWords, missing

SENTENCES = {  # line: (datatrove's sentences, datatrove's words)
    "": (1, []), " ": (1, []), "   ": (1, []), "\t": (1, []),
    "Hello.": (1, ["Hello", "."]), "Hello. World.": (2, ["Hello", ".", "World", "."]),
    "Hello.  World.": (2, ["Hello", ".", "World", "."]), " Hello. World! ": (2, ["Hello", ".", "World", "!"]),
    "Hi!!! Yes?? No...": (3, ["Hi", "!", "!", "!", "Yes", "?", "?", "No", "..."]),
    'He said "Stop." Then left.': (2, ["He", "said", '"', "Stop", ".", '"', "Then", "left", "."]),
    "Wait... what? Fine.": (2, ["Wait", "...", "what", "?", "Fine", "."]),
    "(Really.) Yes.": (2, ["(", "Really", ".", ")", "Yes", "."]),
    "a.b.c. d": (2, ["a.b.c", ".", "d"]), "End.\tStart.": (2, ["End", ".", "Start", "."]),
    "One.\n\nTwo.": (2, ["One", ".", "Two", "."]),
    "  Two leading spaces. Then more.": (2, ["Two", "leading", "spaces", ".", "Then", "more", "."]),
    "Dr. Smith went home. He slept.": (2, ["Dr.", "Smith", "went", "home", ".", "He", "slept", "."]),
    "!!!": (1, ["!", "!", "!"]), ". . .": (1, [".", ".", "."]),
    "Is it? It is! It was.": (3, ["Is", "it", "?", "It", "is", "!", "It", "was", "."]),
    "“Quoted.” Next one.": (2, ["“", "Quoted", ".", "”", "Next", "one", "."]),
    "x ... y": (1, ["x", "...", "y"]), "Hello .World": (1, ["Hello", ".World"]),
    "Hello.  ": (2, ["Hello", "."]), "Hello.   ": (2, ["Hello", "."]), "Hello. \t": (2, ["Hello", "."]),
    "Hello.\t\t": (2, ["Hello", "."]), "A.  \t B.": (1, ["A.", "B."]), "A. \n B.": (1, ["A.", "B."]),
    "A.\u00a0B.": (1, ["A.", "B."]), "A.\u00a0 B.": (1, ["A.", "B."]), " x": (1, ["x"]), "  x": (1, ["x"]),
    "x  ": (1, ["x"]), "Hello!  !": (2, ["Hello", "!", "!"]), "Hi. ) Yes": (2, ["Hi", ".", ")", "Yes"]),
    "Hello.\t": (2, ["Hello", "."]), "Hi. )": (1, ["Hi", ".", ")"]), "Hello. ": (1, ["Hello", "."]),
    "Wow! ?!": (1, ["Wow", "!", "?", "!"]), "Hi.\t)": (2, ["Hi", ".", ")"]),
    "Hi.Yes.No": (3, ["Hi", ".", "Yes", ".", "No"]),  # one run, cut at full stops before capitals: two sentences begun
    "one.Two.Three. four": (4, ["one", ".", "Two", ".", "Three", ".", "four"]),
    # special cases that spaCy's affix rules split and its last phase joins again, where two could overlap
    "''(-:": (1, ["''", "(-:"]), "(-:(((": (1, ["(", "-", ":((("]), "x-and/or": (1, ["x", "-", "and/or"]),
    "Ph.D.s": (2, ["Ph", ".", "D.s"]), "https://example.com/a-b,": (1, ["https://example.com/a-b", ","]),
}


@pytest.mark.parametrize("line", list(SENTENCES), ids=[f"line-{k}" for k in range(len(SENTENCES))])
def test_a_new_splitter_counts_sentences_and_words_as_datatrove(line):
    sentences, words = SENTENCES[line]
    splitter = EnglishWords()
    assert splitter.sentence_count(line) == sentences
    assert splitter.words(line) == words and splitter.word_count(line) == len(words)
    assert splitter.sentence_count(line) == sentences  # again, from what it remembers
    assert EnglishWords().word_count(line) == len(words)


def test_a_splitter_counts_the_text_it_was_last_asked_for_from_its_words():
    splitter = EnglishWords()
    text = "Hello. World."
    words = splitter.words(text)
    assert splitter.words(text) is words and splitter.word_count(text) == 4
    assert splitter.words("Other text.") == ["Other", "text", "."]


def test_missing_finds_every_none_in_order():
    assert list(missing([None, 1, None, None, 2, None])) == [0, 2, 3, 5]
    assert list(missing([1, 2])) == [] and list(missing([])) == []
    assert list(missing([1, None])) == [1]


def test_spacy_s_rules_are_read_once_kept_in_the_cache_and_read_from_it_after(tmp_path, monkeypatch):
    from helpers.clean.text import words

    monkeypatch.setattr(words, "CACHE_DIR", tmp_path / "data" / "cache")  # made, with its parent, when written
    rules = words.english_rules()  # read from spaCy
    version = importlib.metadata.version("spacy")
    kept = tmp_path / "data" / "cache" / f"spacy-{version}-english-rules-1.json"
    assert list(tmp_path.rglob("*.json")) == [kept] and json.loads(kept.read_text(encoding="utf-8")) == rules
    assert "\u0589" in kept.read_text(encoding="utf-8")  # Armenian's full stop, written as itself
    assert sorted(rules) == ["faster_heuristics", "infix", "prefix", "sentence_ends", "special_cases", "suffix",
                             "token", "url"]
    cases = rules["special_cases"]
    assert cases["can't"] == ["ca", "n't"] and cases["a.m."] == ["a.m."] and cases[":-)"] == [":-)"]
    assert len(cases) > 1000 and rules["faster_heuristics"] is True and rules["token"] is None
    assert {".", "!", "?"} <= set(rules["sentence_ends"]) and all(rules[key][0] for key in ("prefix", "suffix", "infix"))
    monkeypatch.setattr(words, "_spacy_english", lambda: pytest.fail("spaCy read again"))
    assert words.english_rules() == rules  # from the file
    splitter = words.EnglishWords()
    assert splitter.words("It can't be 3 a.m. :-)") == ["It", "ca", "n't", "be", "3", "a.m.", ":-)"]
    assert splitter.words("see www.example.com/a-b/c.html, x-and/or") == ["see", "www.example.com/a-b/c.html", ",",
                                                                           "x", "-", "and/or"]


def test_rules_are_read_from_spacy_every_time_where_the_cache_cannot_be_written(tmp_path, monkeypatch):
    from helpers.clean.text import words

    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the cache folder should be: it cannot be made
    monkeypatch.setattr(words, "CACHE_DIR", blocked / "cache")
    assert words.english_rules()["special_cases"]["can't"] == ["ca", "n't"]
    assert not (blocked / "cache").exists()


def test_the_splitter_s_shortcuts_are_built_from_english_s_rules_and_no_wider():
    """The characters a prefix can begin with, a suffix end with and an infix begin with are known (a run of
    letters is whole without a search), each set holds no character that cannot begin (end) a match, and the
    special cases that joining changes are known by their first two tokens (a run holding none is not matched)."""
    splitter = EnglishWords()
    firsts, lasts, infixes = splitter.prefix_firsts, splitter.suffix_lasts, splitter.infix_firsts
    assert {"(", "$", "U", '"', "«", "§"} <= firsts and not {"a", "b", "1", "-"} & firsts
    assert {")", ",", ".", "s", "m", "%"} <= lasts and not {"c", "1", "-"} & lasts
    assert {"-", "/", ":", "+", "…"} <= infixes and not {"a", "1", "(", ")", "'"} & infixes
    for code in range(0x20, 0x3000):  # outside the sets, no prefix begins, no suffix ends, no infix begins
        char = chr(code)
        assert char in firsts or not splitter.prefix_search(char + "ab"), char
        assert char in lasts or not splitter.suffix_search("ab" + char), char
        assert char in infixes or not next(splitter.infix_finditer(f"a{char}b"), None), char
    assert all(splitter._whole(run) for run in ("hello", "ab1", "Привет", "naïve"))
    assert not any(splitter._whole(run) for run in ("(a", "a)", "a-b", "can't", "a.m."))
    assert splitter.changing_singles == set()
    assert {("(", ":"), ("'", "s"), (">", ":o"), ("(", ".")} <= splitter.changing_pairs
    assert ("(", "._.") not in splitter.changing_pairs  # each case split with only the cases loaded before it
    assert {"(:", "'s", ">:o"} <= splitter.changing and "can't" not in splitter.changing
    assert (("(", ":"), "(:") in splitter.joins["("] and (("'", "s"), "'s") in splitter.joins["'"]


def test_without_spacy_the_splitter_says_how_to_install_it(monkeypatch):
    from helpers.clean.text import words
    from helpers.common.errors import UserError

    monkeypatch.setitem(sys.modules, "spacy", None)  # `import spacy` fails as where it is not installed
    with pytest.raises(UserError) as refused:
        words._spacy_english()
    line = ("the quality filters split English words as spaCy's blank English pipeline does; fix: pip install -e "
            "'.[quality]' (or pip install spacy)")
    assert str(refused.value) == line

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(words.importlib.metadata, "version", not_installed)  # no spaCy's version to key the cache
    with pytest.raises(UserError) as refused:
        words.english_rules()
    assert str(refused.value) == line
