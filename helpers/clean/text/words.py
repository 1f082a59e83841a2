"""Words and sentences of English text as datatrove 0.10.1 splits them, exactly, and many times faster.

datatrove's quality filters split English with spaCy's blank English pipeline: its tokenizer for words (whitespace
tokens dropped, every token stripped) and its sentencizer for sentences. spaCy's tokenizer cuts a text at
whitespace first and tokenizes each run of non-whitespace characters on its own (special cases, then prefixes,
suffixes and infixes), so a run's tokens do not depend on the text around it. Here each distinct run is
tokenized once and remembered, by spaCy's own algorithm written out in Python over spaCy's own rules (its special
cases, prefix, suffix, infix and URL expressions, read from the installed spaCy), which gives the same tokens
without building spaCy's documents and vocabulary entries (several times cheaper for a new run). The rules are read
from spaCy once per version and kept in `data/cache/` (`english_rules`), so a later process starts in milliseconds
instead of importing spaCy (about 2 s). Each expression is searched only where, and with only the alternatives
that, can match (`helpers.clean.text.affix_expressions`); a run whose characters rule out every affix is whole. A
text's new runs are split in one compiled call, the same algorithm (`helpers.clean.text.compiled_runs`).

spaCy's last phase, which joins token sequences back into a special case (`:-)` split by its affix rules), is done
as spaCy does it: every place where a special case's affix tokens occur, the longest first, then the leftmost, each
taken unless its first or last token is in one met before (taken or not); a run holding no first two tokens of a
special case that joining changes is left as it is. (spaCy matches over the whole text, so a sequence across a
space, never joined, can still keep a later one from joining; here each run is matched alone, which the tests find
gives the same words.) The sentencizer's rule is applied to the same tokens: a sentence starts at the first token
that is neither punctuation nor one of its sentence-final characters after one of those characters.

Other languages: the rules are English's (datatrove picks a tokenizer per language; these filters are used with
English). On text without spaces between words (Chinese, Japanese, Thai) a whole run of characters up to the next
space or punctuation is one word, so word counts and mean word lengths there mean nothing.
"""

from __future__ import annotations

import importlib.metadata
import itertools
import json
import re
import unicodedata
from typing import Iterator

from ...common.compiled import numba_loaded
from ...common.errors import UserError
from ...common.files import written_atomically
from ...common.paths import CACHE_DIR
from .affix_expressions import affix_length, edges, infix_finder, suffix_search, url_match
from .compiled_runs import CompiledRuns

RUNS = re.compile(r"\S+|\s+")
ORTH = 65  # spaCy's attribute id of a token's text, the key of each piece of a special case
CACHED_RUNS = 1 << 20  # distinct runs remembered per process
COMPILED_RUNS = 4  # new runs in a text from which they are split by compiled code (a call costs a few microseconds)
# New runs split in Python before a process loads numba for them (`helpers.common.compiled`): about 0.25 s of
# splitting at 4 us a run, numba's start-up; where numba is loaded already, from the first text.
PYTHON_RUNS_FIRST = 60_000
RULES_FORMAT = 1  # of the file `english_rules` keeps
PLAIN_ENDS = frozenset(",;:!?")  # punctuation English's suffixes always cut off
INSTALL = "the quality filters split English words as spaCy's blank English pipeline does; fix: pip install -e " \
          "'.[quality]' (or pip install spacy)"


def _spacy_english():
    try:
        import spacy
    except ImportError:
        raise UserError(INSTALL) from None
    nlp = spacy.blank("en")
    return nlp.tokenizer, set(nlp.add_pipe("sentencizer").punct_chars)


def english_rules() -> dict:
    """spaCy's English tokenizer rules (special cases as their pieces' texts, in spaCy's order; the prefix, suffix,
    infix and URL expressions with their flags) and the sentencizer's sentence-final characters, as plain data: read
    from the installed spaCy the first time, then from `data/cache/spacy-<version>-english-rules.json`."""
    try:
        version = importlib.metadata.version("spacy")
    except importlib.metadata.PackageNotFoundError:
        raise UserError(INSTALL) from None
    path = CACHE_DIR / f"spacy-{version}-english-rules-{RULES_FORMAT}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    tokenizer, sentence_ends = _spacy_english()

    def expression(method) -> list | None:
        return None if method is None else [method.__self__.pattern, method.__self__.flags]

    rules = {"special_cases": {key: [piece[ORTH] for piece in pieces] for key, pieces in tokenizer.rules.items()},
             "prefix": expression(tokenizer.prefix_search), "suffix": expression(tokenizer.suffix_search),
             "infix": expression(tokenizer.infix_finditer), "url": expression(tokenizer.url_match),
             "token": expression(tokenizer.token_match), "faster_heuristics": bool(tokenizer.faster_heuristics),
             "sentence_ends": sorted(sentence_ends)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with written_atomically(path) as handle:
            json.dump(rules, handle, ensure_ascii=False)
    except OSError:  # a read-only install reads spaCy again next time
        pass
    return rules


def _compiled(expression: list | None, method: str):
    return None if expression is None else getattr(re.compile(expression[0], expression[1]), method)


def missing(values: list) -> Iterator[int]:
    """The places of None in `values`, found by list.index (the scan between them runs in C: in a long document
    few runs are new)."""
    index = -1
    while True:
        try:
            index = values.index(None, index + 1)
        except ValueError:
            return
        yield index


class EnglishWords:
    """`words(text)` and `sentence_count(line)` as datatrove's `split_into_words` and `split_into_sentences` give
    them for English (see the module docstring)."""

    def __init__(self):
        rules = english_rules()
        self.rules = {key: tuple(pieces) for key, pieces in rules["special_cases"].items()}
        self.prefix_search, self.suffix_search = _compiled(rules["prefix"], "search"), suffix_search(rules["suffix"])
        # the characters a prefix can start with, a suffix end with, an infix start with: a string without them
        # needs no search (None: any)
        self.prefix_firsts = edges(rules["prefix"], last=False, anchored=True)
        self.suffix_lasts = edges(rules["suffix"], last=True, anchored=True)
        self.infix_firsts = edges(rules["infix"], last=False, anchored=False)
        self.infix_finditer = infix_finder(rules["infix"], self.infix_firsts)
        self._prefix_length = affix_length(self.prefix_search, self.prefix_firsts, last=False)
        self._suffix_length = affix_length(self.suffix_search, self.suffix_lasts, last=True)
        self.url_match, self.token_match = url_match(rules["url"]), _compiled(rules["token"], "match")
        self.sentence_ends = set(rules["sentence_ends"])
        self._tokenizer = None
        self.joins: dict[str, list[tuple]] = {}  # first token -> (the affix tokens of a special case, the case)
        self.changing: set[str] = set()  # the special cases whose affix tokens joining changes
        self.changing_pairs: set[tuple[str, str]] = set()  # the first two tokens of those
        self.changing_singles: set[str] = set()  # and those of one token
        loaded: set[str] = set()
        for key in self.rules:  # in the order spaCy loads them, each split with the special cases loaded before
            loaded.add(key)
            if (not rules["faster_heuristics"] or self._prefix_length(key) or self._infixed_at(key)
                    or self._suffix_length(key) or " " in key):
                pattern = self._split(key, specials=False, known=loaded)
                if pattern:  # spaCy's matcher looks for it
                    self.joins.setdefault(pattern[0], []).append((pattern, key))
                    if pattern != self.rules[key]:
                        self.changing.add(key)
                        if len(pattern) == 1:
                            self.changing_singles.add(pattern[0])
                        else:
                            self.changing_pairs.add(pattern[:2])
        self.runs: dict[str, tuple[str, ...]] = {}
        self.compiled = CompiledRuns.of(self, rules)
        self.split_in_python = 0  # new runs, before the compiled splitter is used
        self.punct: dict[str, bool] = {}
        self.moves: dict[str, tuple] = {}  # run -> what it does to the sentencizer (`_moves`)
        self.last: tuple = (None, [])

    @property
    def tokenizer(self):
        """spaCy's own tokenizer (loaded when asked for: the tests hold the Python algorithm to it)."""
        if self._tokenizer is None:
            self._tokenizer = _spacy_english()[0]
        return self._tokenizer

    def _whole(self, run: str) -> bool:
        """Whether a run is one token for want of anything to peel or cut: no prefix can begin with its first
        character, no suffix end with its last, no infix begin with any, and it is no special case nor one that
        joining makes (a URL or not, it stays whole)."""
        firsts, lasts, infixes = self.prefix_firsts, self.suffix_lasts, self.infix_firsts
        return (firsts is not None and lasts is not None and infixes is not None and run[0] not in firsts
                and run[-1] not in lasts and infixes.isdisjoint(run) and run not in self.rules
                and run not in self.changing_singles)

    def load_compiled(self) -> None:
        """Load the compiled splitter's loops now (a process that forks its workers after this spares each the
        start-up)."""
        if self.compiled is not None:
            self.compiled.split_into(["(a.b)", "c"], {})

    def _infixed_at(self, string: str) -> bool:
        return self.infix_finditer is not None and next(self.infix_finditer(string), None) is not None

    def __getstate__(self) -> dict:
        return {}  # a worker builds its own (spaCy's tokenizer is rebuilt, the cache starts empty)

    def __setstate__(self, state: dict) -> None:
        self.__init__()

    def _tokens(self, run: str) -> tuple[str, ...]:
        """A run of non-whitespace characters as spaCy's tokenizer cuts it."""
        tokens = self.runs.get(run)
        if tokens is None:
            if run.isascii() and run.isalpha() and run not in self.rules:
                tokens = (run,)  # English's prefixes, suffixes, infixes and URLs all need a character not a letter
            elif ((run[-1] in PLAIN_ENDS or (run[-1] == "." and run[-2:-1].islower())) and run[:-1].isascii()
                  and run[:-1].isalpha() and run not in self.rules and run[:-1] not in self.rules):
                tokens = (run[:-1], run[-1])  # these five are always suffixes, and a full stop after a lowercase letter
            elif self._whole(run):
                tokens = (run,)
            else:
                tokens = self._joined(self._split(run, specials=True))
            self._remember(run, tokens)
        return tokens

    def _remember(self, run: str, tokens: tuple[str, ...]) -> None:
        if len(self.runs) >= CACHED_RUNS:
            self.runs.clear()
        self.runs[run] = tokens

    def _split_new(self, runs: list[str]) -> None:
        """Split runs met for the first time (each once) by compiled code where it can
        (`helpers.clean.text.compiled_runs`), and remember them."""
        if len(self.runs) + len(runs) > CACHED_RUNS:
            self.runs.clear()
        for run in self.compiled.split_into(runs, self.runs):
            self._tokens(run)

    def _split(self, run: str, specials: bool, known=None) -> tuple[str, ...]:
        """spaCy's affix algorithm on one run: prefixes and suffixes peeled off in turn (stopping at a special case),
        then the rest as a special case's pieces, one URL, or cut at its infixes. `specials` False: as spaCy splits
        a special case's own text, where `known` are the special cases it has loaded so far."""
        rules, token_match = self.rules, self.token_match
        known = rules if known is None else known
        prefixes: list[str] = []
        suffixes: list[str] = []
        string, last = run, 0
        while string and len(string) != last:
            if token_match is not None and token_match(string):
                break
            if specials and string in rules:
                break
            if string.isascii() and string.isalpha():
                break  # letters only: nothing to peel (as for a whole run of them, `_tokens`)
            last = len(string)
            before = self._prefix_length(string)
            if before:
                prefix, rest = string[:before], string[before:]
                if rest and specials and rest in rules:
                    string = rest
                    prefixes.append(prefix)
                    break
            after = self._suffix_length(string[before:] if before else string)
            if after:
                suffix, rest_before = string[-after:], string[:-after]
                if rest_before and specials and rest_before in rules:
                    string = rest_before
                    suffixes.append(suffix)
                    break
            if before and after and before + after <= len(string):
                string = string[before:-after]
                prefixes.append(prefix)
                suffixes.append(suffix)
            elif before:
                string = rest
                prefixes.append(prefix)
            elif after:
                string = rest_before
                suffixes.append(suffix)
            if string and string in known:
                break
        tokens = prefixes
        if string:
            if specials and string in rules:
                tokens.extend(rules[string])
            elif string.isascii() and string.isalpha():
                tokens.append(string)
            elif ((token_match is not None and token_match(string))
                  or (self.url_match is not None and self.url_match(string))):
                tokens.append(string)
            else:
                tokens.extend(self._infixed(string))
        tokens.extend(reversed(suffixes))
        return tuple(tokens)

    def _infixed(self, string: str) -> list[str]:
        """A string cut at its infixes, each infix a token of its own (empty ones only cut)."""
        pieces, start = [], 0
        if self.infix_finditer is None or (self.infix_firsts is not None and self.infix_firsts.isdisjoint(string)):
            return [string]
        for match in self.infix_finditer(string):
            if match.start() == 0:
                continue
            if match.start() != start:
                pieces.append(string[start:match.start()])
            if match.start() != match.end():
                pieces.append(string[match.start():match.end()])
            start = match.end()
        if string[start:]:
            pieces.append(string[start:])
        return pieces

    def _joined(self, tokens: tuple[str, ...]) -> tuple[str, ...]:
        """spaCy's last phase: the places where a special case's affix tokens occur, longest first, then leftmost,
        each replaced by the special case's own pieces unless its first or last token is in one met before."""
        joins = self.joins
        if self.changing_pairs.isdisjoint(zip(tokens, tokens[1:])) and self.changing_singles.isdisjoint(tokens):
            return tokens  # no special case that joining changes starts here
        found = [(start, start + len(pattern), key) for start, token in enumerate(tokens)
                 for pattern, key in joins.get(token, ()) if tokens[start:start + len(pattern)] == pattern]
        if not any(key in self.changing for _, _, key in found):
            return tokens
        found.sort(key=lambda place: (place[0] - place[1], place[0]))
        met: set[int] = set()
        chosen = []
        for start, end, key in found:
            if start not in met and end - 1 not in met:
                chosen.append((start, end, key))
            met.update(range(start, end))
        joined: list[str] = []
        at = 0
        for start, end, key in sorted(chosen):
            joined += tokens[at:start]
            joined += self.rules[key]
            at = end
        return tuple(joined + list(tokens[at:]))

    def words(self, text: str) -> list[str]:
        """The text's words: its tokens, whitespace dropped, each stripped (the last text's are kept: filters
        that follow one another ask for the same text's words; do not change the list)."""
        if text is self.last[0]:
            return self.last[1]
        words = list(itertools.chain.from_iterable(self._each_run(text)))
        self.last = (text, words)
        return words

    def word_count(self, text: str) -> int:
        """`len(words(text))`, without making the list (the last text's words are counted where kept)."""
        if text is self.last[0]:
            return len(self.last[1])
        return sum(map(len, self._each_run(text)))

    def _each_run(self, text: str) -> list[tuple[str, ...]]:
        """The tokens of each of the text's runs of non-whitespace characters, in order."""
        runs = text.split()  # str.split's whitespace is the regular expression \s's, code point for code point
        found = list(map(self.runs.get, runs))
        if None not in found:
            return found
        new = list(missing(found))
        if self.compiled is None or len(new) < COMPILED_RUNS or not (
                numba_loaded() or self.split_in_python > PYTHON_RUNS_FIRST):
            self.split_in_python += len(new)
            for index in new:
                found[index] = self._tokens(runs[index])
            return found
        self._split_new(list(dict.fromkeys(runs[index] for index in new)))
        known = self.runs
        for index in new:
            found[index] = known[runs[index]]
        return found

    def _is_punct(self, token: str) -> bool:
        """spaCy's `is_punct`: every character of Unicode category P."""
        known = self.punct.get(token)
        if known is None:
            known = self.punct[token] = all(unicodedata.category(char).startswith("P") for char in token)
        return known

    def sentence_count(self, text: str) -> int:
        """How many pieces datatrove's `split_into_sentences` cuts `text` into: the sentences spaCy's
        sentencizer finds, or one piece for a text without a token."""
        sentences, tokens_seen, seen_end = 1, False, False
        known = self.moves
        for run in RUNS.findall(text):
            moves = known.get(run) or self._moves(run)
            added, seen_end = moves[seen_end]
            sentences += added
            tokens_seen = tokens_seen or moves[2]
        return sentences if tokens_seen else 1

    def _moves(self, run: str) -> tuple[tuple[int, bool], tuple[int, bool], bool]:
        """What one run (of white space or not) does to the sentencizer: the sentences it begins and whether it
        leaves a sentence end last, after a run that did not leave one and after one that did; whether it holds a
        token (white space: none for one space, one token for more, less a first space). Remembered per run."""
        if run.isspace():
            token = "" if run == " " else run[1:] if run[0] == " " else run
            tokens: tuple[str, ...] = (token,) if token else ()
        else:
            tokens = self._tokens(run)
        outcomes = []
        for seen_end in (False, True):
            sentences = 0
            for token in tokens:
                ends = token in self.sentence_ends
                if seen_end and not ends and not self._is_punct(token):
                    sentences += 1
                    seen_end = False
                elif ends:
                    seen_end = True
            outcomes.append((sentences, seen_end))
        if len(self.moves) >= CACHED_RUNS:
            self.moves.clear()
        moves = self.moves[run] = (outcomes[0], outcomes[1], bool(tokens))
        return moves
