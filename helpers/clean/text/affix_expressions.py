"""What spaCy's prefix, suffix, infix and URL expressions can match, read from their parsed form, so that the
English word splitter (`helpers.clean.text.words`) searches with them only where, and only as much as, a match
can be, and finds the very match a plain search would.

- `edges`: the characters a match can begin with (or end with), for a whole expression: a string without one
  needs no search at all.
- `ByEdge`: an alternation split by the characters its alternatives' matches can begin (or end) with. spaCy's
  suffix and infix expressions are alternations of hundreds of alternatives, every one tried at every place a
  search looks, mostly in vain: at a place whose character is c, only the alternatives that can begin (end) with
  c can match, so an expression of those alone, in their order, finds the same match there, trying a few.
- `suffix_search`: spaCy's suffix search (every alternative ends at the string's end), made to look only near
  the end, with the alternatives that can end with the string's last character.
- `infix_finder`: spaCy's infix `finditer`, trying the alternatives that can begin with a character only where a
  character one can begin with stands.
- `required_characters`: characters every match holds (a URL holds a full stop): a string without one of them
  cannot match.
- `affix_length`: the length of a prefix or suffix, searched only where the string's edge character allows one.
"""

from __future__ import annotations

import functools
import re
from typing import Callable, Iterator

ZERO_WIDTH = ("AT", "ASSERT", "ASSERT_NOT")
UNANALYSED_FLAGS = re.IGNORECASE | re.VERBOSE | re.MULTILINE | re.DOTALL  # they change what a literal matches


def parser():
    """The standard library's regular-expression parser."""
    try:
        from re import _parser as found
    except ImportError:  # Python 3.10
        import sre_parse as found
    return found


@functools.lru_cache(maxsize=16)
def parsed(pattern: str, flags: int):
    """A regular expression's parsed form (spaCy's are long: each is parsed once per process)."""
    return parser().parse(pattern, flags)


@functools.lru_cache(maxsize=64)
def compiled(pattern: str, flags: int) -> re.Pattern:
    """A regular expression compiled (once per process: the long ones take tens of milliseconds)."""
    return re.compile(pattern, flags)


def top_branches(pattern: str) -> list[str]:
    """The top-level alternatives of a regular expression's source (escapes and character classes skipped)."""
    branches, depth, start, i = [], 0, 0, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            i += 2 if pattern[i + 1:i + 2] != "^" else 3
            while pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            branches.append(pattern[start:i])
            start = i + 1
        i += 1
    return branches + [pattern[start:]]


def edge_characters(items, last: bool) -> set[str] | None:
    """The characters a match of the parsed sequence `items` can begin with (`last`: end with), or None where
    that cannot be said (a match that may be empty, a negated or category class, any character)."""
    found: set[str] = set()
    for op, argument in reversed(items) if last else items:
        op = str(op)
        if op in ZERO_WIDTH:
            continue
        if op == "LITERAL":
            return found | {chr(argument)}
        if op == "IN":
            for kind, value in argument:
                kind = str(kind)
                if kind == "LITERAL":
                    found.add(chr(value))
                elif kind == "RANGE":
                    found.update(map(chr, range(value[0], value[1] + 1)))
                else:
                    return None
            return found
        if op in ("MAX_REPEAT", "MIN_REPEAT") and argument[0] >= 1:
            inner = edge_characters(argument[2].data, last)
            return None if inner is None else found | inner
        if op == "SUBPATTERN":
            inner = edge_characters(argument[-1].data, last)
            return None if inner is None else found | inner
        if op == "BRANCH":
            for branch in argument[1]:
                inner = edge_characters(branch.data, last)
                if inner is None:
                    return None
                found |= inner
            return found
        return None
    return None  # nothing consumed: the match may be empty


def edges(expression: list | None, *, last: bool, anchored: bool) -> frozenset[str] | None:
    """`edge_characters` of a whole expression, as read from spaCy (`[pattern, flags]`); with `anchored`, only
    where every alternative of it is anchored at the string's start (`last`: its end), so that a match begins
    with the string's first character (ends with its last). None where that cannot be said."""
    if expression is None or expression[1] & UNANALYSED_FLAGS:
        return None
    items = parsed(*expression).data
    if anchored:
        anchor = "AT_END" if last else "AT_BEGINNING"
        branches = items[0][1][1] if len(items) == 1 and str(items[0][0]) == "BRANCH" else [items]
        if not all(branch and str(branch[-1 if last else 0][1]) == anchor for branch in branches):
            return None
    found = edge_characters(items, last)
    return None if found is None else frozenset(found)


def required_characters(items) -> set[str]:
    """Characters every match of the parsed sequence `items` holds (a sound part of them: an empty set says
    nothing)."""
    found: set[str] = set()
    for op, argument in items:
        op = str(op)
        if op == "LITERAL":
            found.add(chr(argument))
        elif op in ("MAX_REPEAT", "MIN_REPEAT") and argument[0] >= 1:
            found |= required_characters(argument[2].data)
        elif op == "SUBPATTERN":
            found |= required_characters(argument[-1].data)
        elif op == "BRANCH":
            found |= set.intersection(*(required_characters(branch.data) for branch in argument[1]))
    return found


def url_match(expression: list | None) -> Callable | None:
    """`match` of spaCy's URL expression, which gives up at once on a string without a character every URL holds
    (a full stop): the same answer, without running an expression of thousands of characters."""
    if expression is None:
        return None
    if expression[1] & UNANALYSED_FLAGS:
        return compiled(*expression).match
    needed = tuple(required_characters(parsed(*expression).data))
    match = compiled(*expression).match
    if len(needed) == 1:
        (char,) = needed
        return lambda string: match(string) if char in string else None
    return lambda string: match(string) if all(char in string for char in needed) else None


class ByEdge:
    """An alternation (`[pattern, flags]`, one alternative after another at its top level) split by the
    characters its alternatives' matches can begin with (`last`: end with): `for_character(c)` is the compiled
    expression of the alternatives that can (with those that cannot be analysed), in their order, or None where
    none can. At a place whose character is c it finds what the whole expression finds: the others cannot match
    there."""

    def __init__(self, expression: list, *, last: bool):
        self.flags = expression[1]
        self.sources = top_branches(expression[0])
        items = parsed(*expression).data
        alternatives = items[0][1][1] if len(items) == 1 and str(items[0][0]) == "BRANCH" else [items]
        if expression[1] & UNANALYSED_FLAGS or len(alternatives) != len(self.sources):
            self.sources, alternatives = [expression[0]], [None]  # one alternative: the whole, tried everywhere
        self.alternatives = alternatives
        self.edges = [None if alternative is None else edge_characters(alternative.data, last)
                      for alternative in alternatives]
        self.widths = [None if alternative is None else alternative.getwidth()[1] for alternative in alternatives]
        self.by_character: dict[str, tuple] = {}
        self.by_choice: dict[tuple, tuple] = {}

    def for_character(self, char: str) -> tuple:
        """(the compiled expression of the alternatives that can begin (end) with `char`, or None; the widest
        match of the bounded ones; the compiled expression of the unbounded ones, or None)."""
        found = self.by_character.get(char)
        if found is None:
            chosen = tuple(index for index, edge in enumerate(self.edges) if edge is None or char in edge)
            found = self.by_choice.get(chosen)
            if found is None:
                found = self.by_choice[chosen] = self._compiled(chosen)
            self.by_character[char] = found
        return found

    def _compiled(self, chosen: tuple) -> tuple:
        if not chosen:
            return None, 0, None
        bounded = [index for index in chosen if self.widths[index] is not None
                   and self.widths[index] < parser().MAXREPEAT]
        unbounded = [self.sources[index] for index in chosen if index not in bounded]
        widest = max((self.widths[index] for index in bounded), default=0)
        rest = compiled("|".join(unbounded), self.flags) if unbounded else None
        return compiled("|".join(self.sources[index] for index in chosen), self.flags), widest, rest


def suffix_search(expression: list | None) -> Callable | None:
    """`search` of spaCy's suffix expression, the same match, many times cheaper: every alternative of it ends at
    the string's end, so only those that can end with the string's last character are tried; of those, all but a
    few are at most `widest` characters long, so a match starts in the last `widest` characters, or where one of
    the unbounded few (`\\.\\.+$`) starts, whichever is first, and is searched from there (its lookbehinds still
    see what is before)."""
    if expression is None:
        return None
    split = ByEdge(expression, last=True)
    anchored = all(alternative is not None and alternative.data and str(alternative.data[-1][1]) == "AT_END"
                   for alternative in split.alternatives)
    if not anchored:
        return compiled(*expression).search

    def search(string: str):
        if not string or "\n" in string:  # `$` also matches before a last newline
            return compiled(*expression).search(string)
        chosen, widest, rest = split.for_character(string[-1])
        if chosen is None:
            return None
        start = max(len(string) - widest, 0)
        if rest is not None and start:
            found = rest.search(string)
            if found is not None and found.start() < start:
                start = found.start()
        return chosen.search(string, start)
    return search


def affix_length(search: Callable | None, characters: frozenset[str] | None, *, last: bool) -> Callable[[str], int]:
    """How long the prefix (`last`: suffix) `search` finds is, 0 for none, without searching a string whose first
    (last) character no match can begin (end) with (`characters`, from `edges`; None: any)."""
    edge = -1 if last else 0

    def length(string: str) -> int:
        if search is None or not string or (characters is not None and string[edge] not in characters):
            return 0
        found = search(string)
        return 0 if found is None else found.end() - found.start()
    return length


def character_class(characters: frozenset[str]) -> str:
    """A regular expression's class holding `characters`, and any character beyond the Basic Multilingual Plane:
    as ranges, with one for all of those, so that the standard library's engine tests a character against a table
    rather than a list (a few of spaCy's characters beyond the plane would make it a list of ranges, ten times
    slower). A place it finds is a place where one of `characters` may stand."""
    ranges: list[list[int]] = []
    for code in sorted(map(ord, characters)):
        if code > 0xFFFF:
            break
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    ranges.append([0x10000, 0x10FFFF])
    return "[" + "".join(re.escape(chr(low)) + ("" if low == high else "-" + re.escape(chr(high)))
                         for low, high in ranges) + "]"


def infix_finder(expression: list | None, firsts: frozenset[str] | None) -> Callable[[str], Iterator] | None:
    """`finditer` of spaCy's infix expression: the same matches, found by trying, at each place whose character
    can begin one (`firsts`, from `edges`; no match of it is empty), the alternatives that can begin with that
    character, from the end of the last match on."""
    if expression is None:
        return None
    if firsts is None:
        return compiled(*expression).finditer
    split = ByEdge(expression, last=False)
    next_first = re.compile(character_class(firsts)).search

    def finditer(string: str) -> Iterator:
        at = next_first(string)
        while at is not None:
            start = at.start()
            found = split.for_character(string[start])[0]
            match = found.match(string, start) if found is not None else None
            if match is not None:
                yield match
            at = next_first(string, start + 1 if match is None else match.end())
    return finditer
