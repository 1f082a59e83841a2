"""Gopher's n-gram repetition measures of one document's words, compiled, with their Python twins
(`helpers.common.compiled`).

- `top_characters(n)`: the characters the most frequent n-gram covers (its words joined by spaces, times its
  count; of n-grams equally frequent, the first met);
- `repeated_characters(n)`: the characters of n-grams met again (words joined without spaces, as datatrove joins
  them, so `("ab", "c")` repeats `("a", "bc")`), read left to right, a repeat skipped over whole.

The compiled loops key each n-gram by a 64-bit polynomial hash of its characters (from prefix sums, so each key
costs the same whatever n) in an open-addressing table, and compare the characters themselves whenever two keys
meet, so the answer is exact: should two different n-grams ever share a key, the document is measured again by
the twin. A document of `COMPILED_WORDS` words or more is measured compiled.
"""

from __future__ import annotations

import itertools

import numpy as np

from ...common.compiled import jit

COMPILED_WORDS = 100  # below, the Python twin (numba's start-up is not worth paying for a few such)
BASE = 0x9E3779B97F4A7C15  # odd, so it has an inverse modulo 2**64
INVERSE = pow(BASE, -1, 1 << 64)
COLLISION = -1


class Grams:
    """A document's words, for its n-gram measures."""

    def __init__(self, words: list[str]):
        self.words = words
        self.count = len(words)
        self.lengths = list(map(len, words))
        self._compiled = None

    def compiled(self):
        """The words' characters as code points (joined without and with spaces) and where each word starts."""
        if self._compiled is None:
            bare = np.frombuffer("".join(self.words).encode("utf-32-le", "surrogatepass"), np.uint32)
            spaced = np.frombuffer(" ".join(self.words).encode("utf-32-le", "surrogatepass"), np.uint32)
            starts = np.zeros(self.count + 1, np.int64)
            np.cumsum(self.lengths, out=starts[1:])
            self._compiled = (_Text.of(bare), starts, _Text.of(spaced), starts + np.arange(self.count + 1))
        return self._compiled

    def top_characters(self, n: int) -> int:
        return self._measured(top_characters_python, top=True, n=n)

    def repeated_characters(self, n: int) -> int:
        return self._measured(repeated_characters_python, top=False, n=n)

    def _measured(self, twin, *, top: bool, n: int) -> int:
        """A measure by the compiled loop (over the words joined with spaces for `top`, without for the other), or
        by its twin for a short document or where two n-grams shared a key."""
        if self.count >= COMPILED_WORDS:
            bare, starts, spaced, spaced_starts = self.compiled()
            text, text_starts = (spaced, spaced_starts) if top else (bare, starts)
            found = _measure(text.codes, text.prefix, text.inverse, starts=text_starts, n=n, top=top)
            if found != COLLISION:
                return int(found)
        return twin(self.words, n)


class _Text:
    """Code points, their prefix hashes and the inverse powers of the base, for keys of any substring."""

    def __init__(self, codes: np.ndarray, prefix: np.ndarray, inverse: np.ndarray):
        self.codes, self.prefix, self.inverse = codes, prefix, inverse

    @classmethod
    def of(cls, codes: np.ndarray) -> "_Text":
        powers, inverse = _powers(codes.size + 1)
        prefix = np.zeros(codes.size + 1, np.uint64)
        with np.errstate(over="ignore"):  # arithmetic modulo 2**64
            np.cumsum((codes.astype(np.uint64) + np.uint64(1)) * powers[:codes.size], out=prefix[1:])
        return cls(codes, prefix, inverse)


_POWERS: list[np.ndarray] = [np.ones(1, np.uint64), np.ones(1, np.uint64)]


def _powers(count: int) -> tuple[np.ndarray, np.ndarray]:
    """The first `count` powers of the base and of its inverse, modulo 2**64 (kept, and grown when asked for
    more)."""
    if _POWERS[0].size < count:
        size = max(count, 2 * _POWERS[0].size)
        for index, base in enumerate((BASE, INVERSE)):
            powers = np.full(size, base, np.uint64)
            powers[0] = 1
            with np.errstate(over="ignore"):
                np.cumprod(powers, out=powers)
            _POWERS[index] = powers
    return _POWERS[0], _POWERS[1]


@jit(cache=True)
def _measure(codes, prefix, inverse, starts, n, top):
    """The twins' measures over `codes`, word i starting at `starts[i]`: with `top`, `top_characters` (the words
    joined by spaces: an n-gram ends one before the next word starts); else `repeated_characters` (joined
    without). -1 where two different n-grams share a key."""
    grams = starts.size - n
    if grams <= 0:
        return 0
    trim = 1 if top else 0
    size = 1
    while size < 2 * grams:
        size *= 2
    mask = size - 1
    keys = np.zeros(size, np.uint64)
    firsts = np.full(size, -1, np.int64)
    counts = np.zeros(size, np.int64)
    best, best_first, characters, index = 0, 0, 0, 0
    while index < grams:
        start, end = starts[index], starts[index + n] - trim
        key = (prefix[end] - prefix[start]) * inverse[start]
        slot = np.int64(key & np.uint64(mask))
        while firsts[slot] != -1 and keys[slot] != key:
            slot = (slot + 1) & mask
        met = firsts[slot] != -1
        if not met:
            keys[slot], firsts[slot], counts[slot] = key, index, 1
        else:
            first = firsts[slot]
            if starts[first + n] - trim - starts[first] != end - start:
                return -1
            for k in range(end - start):  # the characters themselves, not only their key
                if codes[starts[first] + k] != codes[start + k]:
                    return -1
            counts[slot] += 1
        if top:
            if counts[slot] > best or (counts[slot] == best and firsts[slot] < best_first):
                best, best_first = counts[slot], firsts[slot]
            index += 1
        elif met:
            characters += end - start
            index += n
        else:
            index += 1
    if top:
        return (starts[best_first + n] - trim - starts[best_first]) * best
    return characters


def load_compiled() -> None:
    """Load the compiled loops now (a process that forks its workers after this spares each the start-up)."""
    Grams(["a"] * COMPILED_WORDS).repeated_characters(5)
    Grams(["a"] * COMPILED_WORDS).top_characters(2)


def top_characters_python(words: list[str], n: int) -> int:
    """The twin: a dict of n-grams (word tuples) to their count and first place."""
    counts: dict[tuple, int] = {}
    for i in range(len(words) - n + 1):
        gram = tuple(words[i:i + n])
        counts[gram] = counts.get(gram, 0) + 1
    if not counts:
        return 0
    best = max(counts.values())
    gram = next(gram for gram, count in counts.items() if count == best)  # dicts keep the order grams were met
    return (sum(map(len, gram)) + n - 1) * best


def repeated_characters_python(words: list[str], n: int) -> int:
    """The twin: the n-grams joined without spaces, in a set."""
    joined = "".join(words)
    offsets = [0, *itertools.accumulate(map(len, words))]
    seen: set[str] = set()
    characters = index = 0
    last = len(offsets) - n
    while index < last:
        gram = joined[offsets[index]:offsets[index + n]]
        if gram in seen:
            characters += len(gram)
            index += n
        else:
            seen.add(gram)
            index += 1
    return characters
