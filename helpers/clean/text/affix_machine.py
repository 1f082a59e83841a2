"""The compiled machine that runs spaCy's affix expressions as programs (`helpers.clean.text.affix_programs`):
one alternative at a place, a prefix's length, a suffix's length and the next infix, each as the standard
library's `re` finds it (tests hold them to `re` on spaCy's expressions).

A string is `codes[start:end]` (code points): an anchor or a lookbehind sees nothing outside it, as `re` sees
nothing outside the string it is given. `rules` is the packed array (`Packed`) of the machine and the
expressions; `base` names an expression's fields in its header (`EXPRESSIONS + number * EXPRESSION_FIELDS`). One
array rather than a tuple of tables: numba counts references to every array a call passes, a cost per call that
dozens of arrays would make larger than the work. -2 anywhere means the backtracking stack was too small: the
caller leaves the string to `re`.
"""

from __future__ import annotations

import numpy as np

from ...common.compiled import jit
from .affix_programs import (AHEAD, ALTERNATIVE_COUNT, ALTERNATIVES, ANYWHERE, AT_END, AT_END_STRING, AT_START,
                             BEHIND, CHAR, CLASS, CLASS_STARTS, CODE, FAR_CODES, FAR_COUNT, FAR_LISTS, JUMP,
                             LIST_STARTS, LISTS, LOOK_END, MATCH, NEAR, NEAR_LISTS, NOT_AHEAD, NOT_BEHIND, RANGES,
                             SPLIT)

NO_STACK = -2


@jit(cache=True)
def in_class(rules, index, code):
    """Whether code point `code` is in class `index` (its ranges sorted and apart: a binary search)."""
    starts, ranges = rules[CLASS_STARTS], rules[RANGES]
    low, high = rules[starts + index], rules[starts + index + 1]
    end = high
    while low < high:
        middle = (low + high) >> 1
        if rules[ranges + 2 * middle + 1] < code:
            low = middle + 1
        else:
            high = middle
    return low < end and rules[ranges + 2 * low] <= code


@jit(cache=True)
def run_program(rules, pc, codes, start, end, place, stack):
    """Where the first match of the program at `pc` ends, tried at `place` (-1: none; -2: no stack left).

    The stack holds the places to go back to, each (pc, place), and a mark (-1 - the lookaround's pc, place) where
    a lookaround's program began: reaching its LOOK_END, the lookaround matched, and what its program left on the
    stack is dropped (a lookaround is tried once); going back to its mark, it did not."""
    code = rules[CODE]
    depth = 0
    while True:
        row = code + 3 * pc
        op, a, b = rules[row], rules[row + 1], rules[row + 2]
        held = True
        if op == MATCH:
            return place
        elif op == CHAR or op == CLASS:
            held = place < end and (codes[place] == a if op == CHAR else in_class(rules, a, codes[place]))
            place += 1
        elif op == SPLIT or op == BEHIND or op == NOT_BEHIND or op == AHEAD or op == NOT_AHEAD:
            if depth == stack.shape[0]:
                return NO_STACK
            stack[depth, 0], stack[depth, 1] = (b, place) if op == SPLIT else (-1 - pc, place)
            depth += 1
            if op == SPLIT:
                pc = a
                continue
            if place - b >= start:  # else a lookbehind wider than what is before: it cannot match
                pc, place = a, place - b
                continue
            held = False
        elif op == JUMP:
            pc = a
            continue
        elif op == AT_START:
            held = place == start
        elif op == AT_END:  # `$`: at the end, or before a newline that ends the string
            held = place == end or (place == end - 1 and codes[place] == 10)
        elif op == AT_END_STRING:
            held = place == end
        elif op == LOOK_END:
            depth -= 1
            while stack[depth, 0] >= 0:
                depth -= 1
            look, place = -1 - stack[depth, 0], stack[depth, 1]
            if rules[code + 3 * look] == BEHIND or rules[code + 3 * look] == AHEAD:
                pc = look + 1
                continue
            held = False
        if held:
            pc += 1
            continue
        depth, pc, place = _gone_back(rules, stack, depth)
        if depth < 0:
            return -1


@jit(cache=True)
def _gone_back(rules, stack, depth):
    """The last place to go back to: (the stack's new depth, pc, place), depth -1 where there is none. A
    lookaround's mark reached means its program did not match: a negative lookaround then holds."""
    code = rules[CODE]
    while depth > 0:
        depth -= 1
        pc, place = stack[depth, 0], stack[depth, 1]
        if pc >= 0:
            return depth, pc, place
        look = -1 - pc
        if rules[code + 3 * look] == NOT_BEHIND or rules[code + 3 * look] == NOT_AHEAD:
            return depth, look + 1, place
    return -1, 0, 0


@jit(cache=True)
def alternatives_of(rules, base, char):
    """Where, in the expression's lists, the alternatives to try for a character stand: (from, to)."""
    if char < NEAR:
        found = rules[rules[base + NEAR_LISTS] + char]
    else:
        far, count = rules[base + FAR_CODES], rules[base + FAR_COUNT]
        index = np.searchsorted(rules[far:far + count], char)
        found = rules[rules[base + FAR_LISTS] + index] if index < count and rules[far + index] == char else \
            rules[base + ANYWHERE]
    if found < 0:
        return 0, 0
    starts = rules[base + LIST_STARTS]
    return rules[starts + found], rules[starts + found + 1]


@jit(cache=True)
def alternative(rules, base, k):
    """The k-th alternative of a list: (its program's start, its shortest match, its longest or -1)."""
    index = rules[rules[base + LISTS] + k]
    row = rules[base + ALTERNATIVES] + 3 * index
    return rules[row], rules[row + 1], rules[row + 2]


@jit(cache=True)
def prefix_length(rules, base, codes, start, end, stack):
    """The length of the prefix at the string's start (0: none): the first alternative, in order, that
    matches there."""
    if end <= start:
        return 0
    found = first_match(rules, base, codes, start, end=end, place=start, stack=stack)
    return found if found == NO_STACK else max(found - start, 0)


@jit(cache=True)
def first_match(rules, base, codes, start, end, place, stack):
    """Where the first alternative, in order, of those that can begin with the character at `place` ends when
    tried there (-1: none matches; -2: no stack left)."""
    first, last = alternatives_of(rules, base, codes[place])
    for k in range(first, last):
        found = run_program(rules, alternative(rules, base, k)[0], codes, start, end=end, place=place, stack=stack)
        if found != -1:
            return found
    return -1


@jit(cache=True)
def suffix_length(rules, base, codes, start, end, stack):
    """The length of the suffix (0: none): the match that starts leftmost, of the alternatives that can end with
    the string's last character (every alternative ends at the string's end), each tried only where its length
    allows."""
    if end <= start:
        return 0
    if codes[end - 1] == 10:  # `$` also matches before it: every alternative at every place, as `re` tries them
        return _searched(rules, base, codes, start, end=end, stack=stack)
    first, last = alternatives_of(rules, base, codes[end - 1])
    best, best_end = end, end
    for k in range(first, last):
        pc, shortest, longest = alternative(rules, base, k)
        place = start if longest < 0 else max(start, end - longest)
        while place <= end - max(shortest, 1) and place < best:
            found = run_program(rules, pc, codes, start, end=end, place=place, stack=stack)
            if found == NO_STACK:
                return NO_STACK
            if found >= 0:
                best, best_end = place, found
                break
            place += 1
    return best_end - best


@jit(cache=True)
def _searched(rules, base, codes, start, end, stack):
    """The length of the first match of any alternative, leftmost first, then in order (0: none)."""
    for place in range(start, end + 1):
        for index in range(rules[base + ALTERNATIVE_COUNT]):
            found = run_program(rules, rules[rules[base + ALTERNATIVES] + 3 * index], codes, start, end=end,
                                place=place, stack=stack)
            if found == NO_STACK:
                return NO_STACK
            if found >= 0:
                return found - place
    return 0


@jit(cache=True)
def next_infix(rules, base, codes, start, end, place, stack):
    """The next infix at or after `place`: (its start, its end), (-1, -1) for none, (-2, -2) for no stack."""
    while place < end:
        found = first_match(rules, base, codes, start, end=end, place=place, stack=stack)
        if found == NO_STACK:
            return NO_STACK, NO_STACK
        if found >= 0:
            return place, found
        place += 1
    return -1, -1
