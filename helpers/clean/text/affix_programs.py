"""spaCy's prefix, suffix, infix and URL expressions as small programs that compiled code runs, each alternative
of an affix expression a program of its own, found by the character a match of it can begin (prefix, infix) or
end (suffix) with, so that the compiled splitter (`helpers.clean.text.compiled_runs`) finds the match the standard
library's `re` finds without calling it.

A program is a list of instructions `(op, a, b)` for a backtracking machine (`helpers.clean.text.affix_machine`):
a character, a class (ranges of code points; `\\d`, `\\s`, `\\w` as `re` reads them in a str pattern; negated or
not), `SPLIT` (try `a`, then `b`), `JUMP`, the string's start and end, a lookbehind or lookahead (its own program,
jumped over, ending in `LOOK_END`), and `MATCH`. Alternatives are tried in their order and repeats greedily (or
lazily), as `re` tries them, so the first match found is `re`'s. What the machine does not run (flags that change
matching, back-references, a lookbehind of no fixed width, a repeat that may match nothing) raises
`Unsupported`: the splitter then leaves the text to Python.

All of it is packed into one int64 array (`Packed`): a header of fixed places, then the sections they point to.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata

import numpy as np

from ...common.files import written_atomically
from ...common.paths import CACHE_DIR
from .affix_expressions import edge_characters, parsed, parser

CHAR, CLASS, SPLIT, JUMP, MATCH, AT_START, AT_END, AT_END_STRING, BEHIND, NOT_BEHIND, AHEAD, NOT_AHEAD, LOOK_END = \
    range(13)
LOOKS = {("ASSERT", -1): BEHIND, ("ASSERT_NOT", -1): NOT_BEHIND, ("ASSERT", 1): AHEAD, ("ASSERT_NOT", 1): NOT_AHEAD}
AT_OPS = {"AT_BEGINNING": AT_START, "AT_BEGINNING_STRING": AT_START, "AT_END": AT_END, "AT_END_STRING": AT_END_STRING}
MOST_COPIES = 256  # of a bounded repeat's item
NEAR = 0x3000  # characters below this find their alternatives by direct index
LAST_CODE = 0x10FFFF
FLAG_TEMPLATE = 1  # sre's own bit, set on no expression of spaCy's; harmless
CATEGORIES = {"CATEGORY_DIGIT": (r"\d", False), "CATEGORY_NOT_DIGIT": (r"\d", True), "CATEGORY_SPACE": (r"\s", False),
              "CATEGORY_NOT_SPACE": (r"\s", True), "CATEGORY_WORD": (r"\w", False), "CATEGORY_NOT_WORD": (r"\w", True)}


class Unsupported(ValueError):
    """An expression the machine does not run."""


class Programs:
    """The instructions of every alternative of several expressions, and the classes they test."""

    def __init__(self):
        self.code: list[tuple[int, int, int]] = []
        self.classes: list[list[tuple[int, int]]] = []

    def add_class(self, items) -> int:
        """A class of parsed members (literals, ranges, categories; negated or not) as sorted ranges apart: its
        index."""
        ranges, negated = [], False
        for kind, value in items:
            kind = str(kind)
            if kind == "LITERAL":
                ranges.append((value, value))
            elif kind == "RANGE":
                ranges.append(tuple(value))
            elif kind == "NEGATE":
                negated = True
            elif kind == "CATEGORY" and str(value) in CATEGORIES:
                ranges.extend(category_ranges(*CATEGORIES[str(value)]))
            else:
                raise Unsupported(f"a class member {kind}")
        merged = _merged(ranges)
        self.classes.append(_complement(merged) if negated else merged)
        return len(self.classes) - 1

    def program(self, items) -> int:
        """The instructions of a parsed sequence, then MATCH: where they start."""
        start = len(self.code)
        self._sequence(items)
        self._emit(MATCH)
        return start

    def _emit(self, op: int, a: int = 0, b: int = 0) -> int:
        self.code.append((op, a, b))
        return len(self.code) - 1

    def _patch(self, at: int, a: int, b: int) -> None:
        self.code[at] = (self.code[at][0], a, b)

    def _sequence(self, items) -> None:
        for op, argument in items:
            self._item(str(op), argument)

    def _item(self, op: str, argument) -> None:
        if op == "LITERAL":
            self._emit(CHAR, argument)
        elif op == "IN":
            self._emit(CLASS, self.add_class(argument))
        elif op == "NOT_LITERAL":
            self._emit(CLASS, self.add_class([("NEGATE", None), ("LITERAL", argument)]))
        elif op == "ANY":  # any character but a newline (no DOTALL: flags are refused)
            self._emit(CLASS, self.add_class([("NEGATE", None), ("LITERAL", 10)]))
        elif op == "AT" and str(argument) in AT_OPS:
            self._emit(AT_OPS[str(argument)])
        elif op == "SUBPATTERN" and not argument[1] and not argument[2]:
            self._sequence(argument[-1].data)
        elif op == "BRANCH":
            self._branch(argument[1])
        elif op in ("MAX_REPEAT", "MIN_REPEAT"):
            self._repeat(*argument, greedy=op == "MAX_REPEAT")
        elif op in ("ASSERT", "ASSERT_NOT") and (op, argument[0]) in LOOKS:
            self._look(LOOKS[op, argument[0]], argument[1])
        else:
            raise Unsupported(op)

    def _branch(self, alternatives) -> None:
        jumps = []
        for index, alternative in enumerate(alternatives):
            if index == len(alternatives) - 1:
                self._sequence(alternative.data)
                break
            split = self._emit(SPLIT)
            self._sequence(alternative.data)
            jumps.append(self._emit(JUMP))
            self._patch(split, split + 1, len(self.code))
        for jump in jumps:
            self._patch(jump, len(self.code), 0)

    def _repeat(self, least: int, most: int, item, *, greedy: bool) -> None:
        if item.getwidth()[0] == 0:
            raise Unsupported("a repeat that may match nothing")
        for _ in range(least):
            self._sequence(item.data)
        if most == parser().MAXREPEAT:
            split = self._emit(SPLIT)
            self._sequence(item.data)
            self._emit(JUMP, split)
            self._order(split, len(self.code), greedy)
            return
        if most - least > MOST_COPIES:
            raise Unsupported("a long bounded repeat")
        splits = []
        for _ in range(most - least):
            splits.append(self._emit(SPLIT))
            self._sequence(item.data)
        for split in splits:
            self._order(split, len(self.code), greedy)

    def _order(self, split: int, exit: int, greedy: bool) -> None:
        self._patch(split, split + 1, exit) if greedy else self._patch(split, exit, split + 1)

    def _look(self, op: int, body) -> None:
        """A lookaround: LOOK (its program next but one, and for a lookbehind its width), a JUMP over its program,
        the program ending in LOOK_END. The machine runs the program from the place (a lookbehind's from as far
        back as its width) and goes on after the JUMP where the assertion holds."""
        low, high = body.getwidth()
        if op in (BEHIND, NOT_BEHIND) and low != high:
            raise Unsupported("a lookbehind of no fixed width")
        look = self._emit(op, 0, low if op in (BEHIND, NOT_BEHIND) else 0)
        jump = self._emit(JUMP)
        self._patch(look, len(self.code), self.code[look][2])
        self._sequence(body.data)
        self._emit(LOOK_END)
        self._patch(jump, len(self.code), 0)


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[list[int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    return [(low, high) for low, high in merged]


def _complement(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    found, start = [], 0
    for low, high in ranges:
        if low > start:
            found.append((start, low - 1))
        start = high + 1
    if start <= LAST_CODE:
        found.append((start, LAST_CODE))
    return found


@functools.lru_cache(maxsize=8)
def category_ranges(escape: str, negated: bool) -> tuple[tuple[int, int], ...]:
    """The code points `re` matches with `\\d`, `\\s` or `\\w` in a str pattern (or, negated, the others), as ranges:
    found by searching every code point once, then kept in `data/cache` for this version of Unicode."""
    path = CACHE_DIR / f"unicode-{unicodedata.unidata_version}-{escape.strip(chr(92))}.json"
    try:
        ranges = [tuple(pair) for pair in json.loads(path.read_text(encoding="utf-8"))]
    except (OSError, ValueError):
        every = "".join(map(chr, range(LAST_CODE + 1)))
        ranges = [(match.start(), match.end() - 1) for match in re.finditer(escape + "+", every)]
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with written_atomically(path) as handle:
                json.dump(ranges, handle)
        except OSError:
            pass
    return tuple(_complement(ranges) if negated else ranges)


class Expression:
    """One of spaCy's affix expressions as programs: its alternatives (in order), each with its start in the
    shared code, its shortest and longest match (-1: unbounded) and the class of the characters its match can
    begin (`last`: end) with, and the alternatives to try for a character."""

    def __init__(self, programs: Programs, expression: list, *, last: bool):
        whole = parsed_plainly(expression)
        items = list(whole.data)
        leading = []
        while items and str(items[0][0]) == "AT":
            leading.append(items.pop(0))
        alternatives = list(items[0][1][1]) if len(items) == 1 and str(items[0][0]) == "BRANCH" else [
            parser().SubPattern(whole.state, items)]
        self.all_end_anchored = all(alternative.data and str(alternative.data[-1][0]) == "AT" and str(
            alternative.data[-1][1]) in ("AT_END", "AT_END_STRING") for alternative in alternatives)
        self.starts, self.shortest, self.longest, edge_sets = [], [], [], []
        for alternative in alternatives:
            self.starts.append(programs.program(leading + list(alternative.data)))
            low, high = alternative.getwidth()
            self.shortest.append(low)
            self.longest.append(-1 if high >= parser().MAXREPEAT else high)
            edge_sets.append(edge_characters(alternative.data, last))
        self.lists = _alternatives_by_character(edge_sets)


def parsed_plainly(expression: list):
    """An expression's parsed form, where its flags (given or written in it) change nothing but `re`'s default
    for a str pattern (Unicode classes)."""
    whole = parsed(*expression)
    if (expression[1] | whole.state.flags) & ~(re.UNICODE | FLAG_TEMPLATE):
        raise Unsupported("flags")
    return whole


def _alternatives_by_character(edge_sets: list) -> tuple[list[int], list[int], list[int], int, list[tuple]]:
    """For a character, the alternatives to try, in order: (for each code point below NEAR the index of its list
    or -1; the code points above it that have one, in order; their lists' indices; the list of a character not
    found there (those whose edge characters cannot be said), or -1; the lists)."""
    anywhere = [index for index, edge in enumerate(edge_sets) if edge is None]
    by_character: dict[int, list[int]] = {}
    for index, edge in enumerate(edge_sets):
        for char in edge or ():
            by_character.setdefault(ord(char), []).append(index)
    unique: dict[tuple, int] = {}

    def list_of(code: int) -> int:
        found = tuple(sorted(by_character.get(code, []) + anywhere))
        return unique.setdefault(found, len(unique)) if found else -1

    near = [list_of(code) for code in range(NEAR)]
    far_codes = sorted(code for code in by_character if code >= NEAR)
    far = [list_of(code) for code in far_codes]
    anywhere_list = list_of(-1)
    return near, far_codes, far, anywhere_list, sorted(unique, key=unique.get)


class Packed:
    """Sections of int64 values laid end to end in one array, after a header that holds, at a section's fixed
    place, where it starts (or, for a value, the value): compiled code takes one array however many tables."""

    def __init__(self, header_size: int):
        self.header = [0] * header_size
        self.sections: list[list[int]] = []
        self.length = header_size

    def add(self, place: int, values) -> None:
        values = list(values)
        self.header[place] = self.length
        self.sections.append(values)
        self.length += len(values)

    def set(self, place: int, value: int) -> None:
        self.header[place] = value

    def array(self) -> np.ndarray:
        return np.array(self.header + [value for values in self.sections for value in values], np.int64)


# The header of the splitter's packed rules: the machine's sections, then each expression's (EXPRESSIONS + its
# number * EXPRESSION_FIELDS + a field), then each key table's.
CODE, CODE_ROWS, RANGES, CLASS_STARTS = range(4)
EXPRESSIONS, EXPRESSION_FIELDS = 4, 9
ALTERNATIVES, NEAR_LISTS, FAR_CODES, FAR_LISTS, FAR_COUNT, ANYWHERE, LIST_STARTS, LISTS, ALTERNATIVE_COUNT = \
    range(EXPRESSION_FIELDS)


def pack_machine(packed: Packed, programs: Programs) -> None:
    """The instructions and classes."""
    packed.add(CODE, [value for row in programs.code for value in row])
    packed.set(CODE_ROWS, len(programs.code))
    packed.add(RANGES, [value for ranges in programs.classes for low, high in ranges for value in (low, high)])
    packed.add(CLASS_STARTS, np.cumsum([0] + [len(ranges) for ranges in programs.classes]).tolist())


def pack_expression(packed: Packed, number: int, expression: Expression) -> None:
    base = EXPRESSIONS + number * EXPRESSION_FIELDS
    packed.add(base + ALTERNATIVES, [value for row in zip(expression.starts, expression.shortest, expression.longest)
                                     for value in row])
    packed.set(base + ALTERNATIVE_COUNT, len(expression.starts))
    near, far_codes, far, anywhere, lists = expression.lists
    packed.add(base + NEAR_LISTS, near)
    packed.add(base + FAR_CODES, far_codes)
    packed.add(base + FAR_LISTS, far)
    packed.set(base + FAR_COUNT, len(far_codes))
    packed.set(base + ANYWHERE, anywhere)
    packed.add(base + LIST_STARTS, np.cumsum([0] + [len(found) for found in lists]).tolist())
    packed.add(base + LISTS, [index for found in lists for index in found])
