"""spaCy's affix algorithm for English, compiled: the runs of characters a text brings for the first time, split
into words in one compiled call per text, as `EnglishWords._split` (and its last phase, `_joined`) splits them in
Python, which stays the reference and takes every run this code leaves to it.

The compiled loop follows `_split` step for step: prefixes and suffixes peeled off in turn until a special case
(then its pieces), letters only or nothing more to peel; the rest whole if a URL, else cut at its infixes. spaCy's
prefix, suffix, infix and URL expressions are run by `helpers.clean.text.affix_machine`. It leaves a run to Python
(-1) where Python's path could do what it does not: a word, or two in a row, that begin a special case spaCy's
last phase would join (`_joined`); a special case whose pieces are not its own text cut; a newline; a backtracking
stack too small; an expression the machine does not run. The special cases and the joinable words and pairs are
kept in open-addressing tables of their code points, a 64-bit hash a key and the code points compared where a
key's hash matches.
"""

from __future__ import annotations

import hashlib
import json
import sys
import unicodedata
from pathlib import Path

import numpy as np

from ...common.compiled import jit
from ...common.files import written_atomically
from ...common.paths import CACHE_DIR
from .affix_expressions import UNANALYSED_FLAGS, parsed, required_characters
from .affix_machine import NO_STACK, next_infix, prefix_length, run_program, suffix_length
from .affix_programs import (CODE_ROWS, EXPRESSION_FIELDS, EXPRESSIONS, Expression, Packed, Programs, Unsupported,
                             pack_expression, pack_machine, parsed_plainly)

SEPARATOR = 0x110000  # between the two tokens of a pair's key: no code point
LEFT_TO_PYTHON = -1
OFFSET, PRIME = 0xCBF29CE484222325, 0x100000001B3  # FNV-1a, over code points
PREFIX, SUFFIX, INFIX = (EXPRESSIONS + number * EXPRESSION_FIELDS for number in range(3))
# after the expressions in the packed rules' header: each key table's fields, then the URL's characters
SLOTS, SLOT_COUNT, KEYS, KEY_STARTS = range(4)
SPECIALS, SINGLES, PAIRS = (EXPRESSIONS + 3 * EXPRESSION_FIELDS + 4 * number for number in range(3))
NEEDED, NEEDED_COUNT, URL, PIECE_STARTS, PIECES = (EXPRESSIONS + 3 * EXPRESSION_FIELDS + 12 + field
                                                    for field in range(5))
HEADER = PIECES + 1


def pack_keys(packed: Packed, base: int, keys: list[list[int]]) -> None:
    """An open-addressing table of code-point sequences: slots holding a key's index or -1, the keys' code points
    laid end to end, where each starts (and one past the last)."""
    size = 16
    while size < 2 * len(keys):
        size *= 2
    slots = [-1] * size
    for index, key in enumerate(keys):
        slot = _hash_of(key) & (size - 1)
        while slots[slot] >= 0:
            slot = (slot + 1) & (size - 1)
        slots[slot] = index
    packed.add(base + SLOTS, slots)
    packed.set(base + SLOT_COUNT, size)
    packed.add(base + KEYS, [code for key in keys for code in key])
    packed.add(base + KEY_STARTS, np.cumsum([0] + [len(key) for key in keys]).tolist())


def _hash_of(key: list[int]) -> int:
    """`key_hash` in Python, for filling a table."""
    value = OFFSET
    for code in key:
        value = ((value ^ code) * PRIME) & 0xFFFFFFFFFFFFFFFF
    return value


@jit(cache=True)
def key_hash(codes, start, end, value):
    """FNV-1a of `codes[start:end]`, carried on from `value`."""
    for index in range(start, end):
        value = (value ^ np.uint64(codes[index])) * np.uint64(PRIME)
    return value


@jit(cache=True)
def table_find(rules, base, codes, span):
    """The index of `codes[start:end]` (followed, where `second_start` >= 0, by SEPARATOR and
    `codes[second_start:second_end]`) among the keys of the table at `base`, or -1; `span` is (start, end,
    second_start, second_end)."""
    start, end, second_start, second_end = span
    value = key_hash(codes, start, end, np.uint64(OFFSET))
    length = end - start
    if second_start >= 0:
        value = (value ^ np.uint64(SEPARATOR)) * np.uint64(PRIME)
        value = key_hash(codes, second_start, second_end, value)
        length += 1 + second_end - second_start
    slots, mask, keys, starts = rules[base + SLOTS], rules[base + SLOT_COUNT] - 1, rules[base + KEYS], \
        rules[base + KEY_STARTS]
    slot = np.int64(value & np.uint64(mask))
    while rules[slots + slot] >= 0:
        key = rules[slots + slot]
        at = keys + rules[starts + key]
        if rules[starts + key + 1] - rules[starts + key] == length and _same(rules, at, codes, span):
            return key
        slot = (slot + 1) & mask
    return -1


@jit(cache=True)
def _same(rules, at, codes, span):
    start, end, second_start, second_end = span
    for index in range(start, end):
        if rules[at] != codes[index]:
            return False
        at += 1
    if second_start >= 0:
        if rules[at] != SEPARATOR:
            return False
        at += 1
        for index in range(second_start, second_end):
            if rules[at] != codes[index]:
                return False
            at += 1
    return True


@jit(cache=True)
def letters_only(codes, start, end):
    """`str.isascii() and str.isalpha()` of a non-empty string."""
    for index in range(start, end):
        code = codes[index] | 0x20
        if code < 97 or code > 122:
            return False
    return True


@jit(cache=True)
def could_be_url(rules, codes, start, end):
    """Whether the string holds every character a URL must hold (-1 among them: a URL cannot be ruled out)."""
    needed = rules[NEEDED]
    for k in range(rules[NEEDED_COUNT]):
        char = rules[needed + k]
        if char < 0:
            return True
        found = False
        for index in range(start, end):
            if codes[index] == char:
                found = True
                break
        if not found:
            return False
    return True


@jit(cache=True)
def split_one(rules, codes, start, end, tokens, stack):
    """One run's words, as `EnglishWords._split` gives them (with special cases), into `tokens` (rows of start,
    end): how many, or -1 where Python's path must decide (see the module docstring)."""
    prefixes, suffixes = 0, 0  # prefixes fill `tokens` from the top, suffixes from the bottom
    bottom = tokens.shape[0] - 1
    last, special = 0, -1
    while end > start and end - start != last:
        special = table_find(rules, SPECIALS, codes, (start, end, -1, -1))
        if special >= 0 or letters_only(codes, start, end):
            break
        last = end - start
        before = prefix_length(rules, PREFIX, codes, start, end=end, stack=stack)
        if before == NO_STACK:
            return LEFT_TO_PYTHON
        if before and end > start + before:
            special = table_find(rules, SPECIALS, codes, (start + before, end, -1, -1))
            if special >= 0:  # the rest is a special case: the prefix off, and no more
                tokens[prefixes, 0], tokens[prefixes, 1] = start, start + before
                prefixes += 1
                start += before
                break
        after = suffix_length(rules, SUFFIX, codes, start + before, end=end, stack=stack)
        if after == NO_STACK:
            return LEFT_TO_PYTHON
        if after and end - after > start:
            special = table_find(rules, SPECIALS, codes, (start, end - after, -1, -1))
            if special >= 0:  # the rest before the suffix is a special case: the suffix off, and no more
                tokens[bottom - suffixes, 0], tokens[bottom - suffixes, 1] = end - after, end
                suffixes += 1
                end -= after
                break
        if before:
            tokens[prefixes, 0], tokens[prefixes, 1] = start, start + before
            prefixes += 1
        if after and (not before or before + after <= end - start):
            tokens[bottom - suffixes, 0], tokens[bottom - suffixes, 1] = end - after, end
            suffixes += 1
            end -= after
        if before:
            start += before
        if end > start:
            special = table_find(rules, SPECIALS, codes, (start, end, -1, -1))
            if special >= 0:
                break
    count = prefixes
    if end > start:
        if special >= 0:
            count = _pieces(rules, special, start, tokens=tokens, count=count)
        elif letters_only(codes, start, end):
            tokens[count, 0], tokens[count, 1] = start, end
            count += 1
        else:
            count = _url_or_infixed(rules, codes, start, end, tokens=tokens, count=count, stack=stack)
        if count < 0:
            return LEFT_TO_PYTHON
    for k in range(bottom - suffixes + 1, bottom + 1):  # the suffixes, the last peeled first
        tokens[count, 0], tokens[count, 1] = tokens[k, 0], tokens[k, 1]
        count += 1
    return LEFT_TO_PYTHON if _joinable(rules, codes, tokens, count) else count


@jit(cache=True)
def _joinable(rules, codes, tokens, count):
    """Whether spaCy's last phase could join some of the words: a word, or two in a row, that begin a special case
    that joining changes."""
    for k in range(count):
        if table_find(rules, SINGLES, codes, (tokens[k, 0], tokens[k, 1], -1, -1)) >= 0:
            return True
        if k + 1 < count and table_find(rules, PAIRS, codes, (tokens[k, 0], tokens[k, 1], tokens[k + 1, 0],
                                                               tokens[k + 1, 1])) >= 0:
            return True
    return False


@jit(cache=True)
def _pieces(rules, special, start, tokens, count):
    """A special case's pieces, from `start`, after `count` tokens: the new count, or -1 for a special case whose
    pieces are not its own text cut."""
    first, last = rules[rules[PIECE_STARTS] + special], rules[rules[PIECE_STARTS] + special + 1]
    if first == last:
        return -1
    for k in range(first, last):
        length = rules[rules[PIECES] + k]
        tokens[count, 0], tokens[count, 1] = start, start + length
        start += length
        count += 1
    return count


@jit(cache=True)
def _url_or_infixed(rules, codes, start, end, tokens, count, stack):
    """The rest one token where it is a URL, else cut at its infixes: the new count, or -1."""
    if could_be_url(rules, codes, start, end):
        if rules[URL] < 0:
            return -1
        url = run_program(rules, rules[URL], codes, start, end=end, place=start, stack=stack)
        if url == NO_STACK:
            return -1
        if url >= 0:
            tokens[count, 0], tokens[count, 1] = start, end
            return count + 1
    return _infixed(rules, codes, start, end, tokens=tokens, count=count, stack=stack)


@jit(cache=True)
def _infixed(rules, codes, start, end, tokens, count, stack):
    """The string cut at its infixes (an infix at its very start only cuts nothing), each infix a token, after
    `count` tokens: the new count, or -1."""
    place, piece = start, start
    while True:
        found, found_end = next_infix(rules, INFIX, codes, start, end=end, place=place, stack=stack)
        if found == NO_STACK:
            return -1
        if found < 0:
            break
        place = found_end
        if found == start:
            continue
        if found != piece:
            tokens[count, 0], tokens[count, 1] = piece, found
            count += 1
        tokens[count, 0], tokens[count, 1] = found, found_end
        count += 1
        piece = found_end
    if piece < end:
        tokens[count, 0], tokens[count, 1] = piece, end
        count += 1
    return count


@jit(cache=True)
def split_runs(rules, codes, run_starts):
    """Every run `codes[run_starts[i]:run_starts[i + 1]]` split: (each run's word count, or -1 where Python's path
    must decide; the places, from each run's start, where its words after the first begin, run after run)."""
    runs = run_starts.size - 1
    longest = 1
    for index in range(runs):
        longest = max(longest, run_starts[index + 1] - run_starts[index])
    tokens = np.empty((2 * longest + 2, 2), np.int64)
    stack = np.empty((2 * longest + rules[CODE_ROWS] + 16, 2), np.int64)
    counts = np.empty(runs, np.int64)
    cuts = np.empty(run_starts[-1] + 1, np.int64)
    at = 0
    for index in range(runs):
        start, end = run_starts[index], run_starts[index + 1]
        newline = False
        for place in range(start, end):
            newline = newline or codes[place] == 10
        count = LEFT_TO_PYTHON if newline else split_one(rules, codes, start, end, tokens=tokens, stack=stack)
        counts[index] = count
        for k in range(1, count):
            cuts[at] = tokens[k, 0] - start
            at += 1
    return counts, cuts[:at]


class CompiledRuns:
    """The compiled splitter for one `EnglishWords` (its rules, special cases and joinable tokens); `of` gives
    None where spaCy's rules hold what the compiled machine does not run."""

    def __init__(self, words, rules: dict):
        programs = Programs()
        expressions = [Expression(programs, rules[name], last=name == "suffix")
                       for name in ("prefix", "suffix", "infix")]
        _check_searches(rules, *expressions)
        try:
            url_program = programs.program(parsed_plainly(rules["url"]).data)
        except Unsupported:  # URLs left to Python
            url_program = -1
        packed = Packed(HEADER)
        pack_machine(packed, programs)
        for number, expression in enumerate(expressions):
            pack_expression(packed, number, expression)
        pack_keys(packed, SPECIALS, [list(map(ord, key)) for key in words.rules])
        pieces = [[len(piece) for piece in pieces] if "".join(pieces) == key and all(pieces) else []
                  for key, pieces in words.rules.items()]  # in the keys' order; none: left to Python
        packed.add(PIECE_STARTS, np.cumsum([0] + [len(lengths) for lengths in pieces]).tolist())
        packed.add(PIECES, [length for lengths in pieces for length in lengths])
        pack_keys(packed, SINGLES, [list(map(ord, token)) for token in sorted(words.changing_singles)])
        pack_keys(packed, PAIRS, [[*map(ord, first), SEPARATOR, *map(ord, second)]
                                  for first, second in sorted(words.changing_pairs)])  # sets: sorted, so the same
        url = rules["url"]
        needed = [-1] if url[1] & UNANALYSED_FLAGS else sorted(map(ord, required_characters(parsed(*url).data)))
        packed.add(NEEDED, needed or [-1])
        packed.set(NEEDED_COUNT, len(needed or [-1]))
        packed.set(URL, url_program)
        self.rules = packed.array()

    @classmethod
    def of(cls, words, rules: dict) -> "CompiledRuns | None":
        """The compiled splitter, its packed rules read from `data/cache` where this code packed these rules
        before (building them takes about 0.15 s), or None where the machine does not run them."""
        if rules["token"] is not None or any(rules[name] is None for name in ("prefix", "suffix", "infix", "url")):
            return None
        path = CACHE_DIR / f"english-machine-{_packing_digest(rules)}.npy"
        found = cls.__new__(cls)
        try:
            found.rules = np.load(path)
            if found.rules.dtype == np.int64 and found.rules.ndim == 1 and found.rules.size > HEADER:
                return found
        except (OSError, ValueError, EOFError):
            pass
        try:
            found = cls(words, rules)
        except Unsupported:
            return None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with written_atomically(path, "wb") as handle:
                np.save(handle, found.rules)
        except OSError:  # a read-only install packs them again next time
            pass
        return found

    def split_into(self, runs: list[str], memory: dict[str, tuple[str, ...]]) -> list[str]:
        """Split distinct runs, each one's words put in `memory`: those left to Python's path, in order."""
        codes = np.frombuffer("".join(runs).encode("utf-32-le", "surrogatepass"), np.uint32).astype(np.int64)
        run_starts = np.zeros(len(runs) + 1, np.int64)
        np.cumsum(np.fromiter(map(len, runs), np.int64, len(runs)), out=run_starts[1:])
        counts, cuts = split_runs(self.rules, codes, run_starts)
        cuts = cuts.tolist()
        left: list[str] = []
        at = 0
        for run, count in zip(runs, counts.tolist()):
            if count == 1:
                memory[run] = (run,)
            elif count == 2:
                cut = cuts[at]
                memory[run] = (run[:cut], run[cut:])
                at += 1
            elif count < 1:
                left.append(run)
            else:
                places = [0, *cuts[at:at + count - 1], len(run)]
                memory[run] = tuple(run[place:following] for place, following in zip(places, places[1:]))
                at += count - 1
        return left


def _packing_digest(rules: dict) -> str:
    """A digest of spaCy's rules, of the code that packs them (this module, the programs, the affix analysis, the
    splitter that derives the joinable words) and of what that code reads from Python (its expression parser,
    Unicode's classes), so that a packed array is read back only where it would be built the same."""
    digest = hashlib.sha256(json.dumps([rules, sys.version_info[:2], unicodedata.unidata_version]).encode())
    for name in ("compiled_runs", "affix_programs", "affix_expressions", "words"):
        digest.update((Path(__file__).parent / f"{name}.py").read_bytes())
    return digest.hexdigest()[:16]


def _check_searches(rules: dict, prefix: Expression, suffix: Expression, infix: Expression) -> None:
    """The forms the machine's searches rely on: a prefix anchored at the start, every suffix alternative at the
    end, no infix alternative that may match nothing."""
    items = parsed(*rules["prefix"]).data
    if not items or str(items[0][0]) != "AT" or str(items[0][1]) not in ("AT_BEGINNING", "AT_BEGINNING_STRING"):
        raise Unsupported("a prefix not anchored at the start")
    if not suffix.all_end_anchored:
        raise Unsupported("a suffix not anchored at the end")
    if min(infix.shortest) < 1 or min(prefix.shortest + suffix.shortest) < 0:
        raise Unsupported("an infix that may match nothing")
