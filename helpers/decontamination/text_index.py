"""An exact index of an evaluation set's word n-grams, and the scan that finds them in a document.

Every window of `n` consecutive words of an item (GPT-3's words: `helpers.decontamination.words`) is a pattern; an
item of fewer than `n` words is one pattern, whole. A document contains an item's n-gram when its words hold the
pattern's words consecutively. No n-gram crosses from one document to the next, or from one item to the next.

The scan is one compiled loop over a document's UTF-8 bytes: it finds the words as `str.split` does (ASCII and
Unicode whitespace), hashes each word's normalised bytes (a rotate and xor of each byte's random code, then mixed),
keys each window by a polynomial of its words' hashes, and looks the key up in an open-addressing table of the
patterns' keys. Each key met is only a
candidate: the document's words there are compared with the item's words, so a match is never reported on a hash
alone, and no match is missed, since equal words give equal keys. A Bloom filter or a table of hashes without this
check can report an n-gram the item does not hold; one that keys the text differently from the check can miss one.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

import numpy as np

from ..common.compiled import jit
from .lengths import TEXT_NGRAM
from .table import BASE, NgramTable, _lookup, _mix
from .words import gpt3_words

WORD, PUNCTUATION, SPACE, LEAD = 0, 1, 2, 3  # what a byte is to the scan; LEAD may start a Unicode space
FIRST_CANDIDATES = 64


def _byte_tables() -> tuple[np.ndarray, np.ndarray]:
    """Each byte's class for the scan, and the 64-bit code its lowercase adds to a word's hash (random, fixed; 0 for
    punctuation)."""
    classes = np.full(256, WORD, np.uint8)
    for character in string.punctuation:
        classes[ord(character)] = PUNCTUATION
    for byte in (9, 10, 11, 12, 13, 28, 29, 30, 31, 32):  # the ASCII characters str.split splits on
        classes[byte] = SPACE
    for byte in (0xC2, 0xE1, 0xE2, 0xE3):  # the lead bytes of U+0085, U+00A0, U+1680, U+2000-U+205F and U+3000
        classes[byte] = LEAD
    lower = np.arange(256)
    lower[65:91] += 32
    codes = np.random.default_rng(20260101).integers(1, 2**63, size=256, dtype=np.int64).astype(np.uint64)[lower]
    codes[classes == PUNCTUATION] = 0  # a deleted byte adds nothing and does not rotate the hash
    return classes, codes


CLASSES, CODES = _byte_tables()


@jit(cache=True)
def _space_length(data, i):
    """The bytes of the Unicode space starting at `data[i]` (a LEAD byte), or 0 when none starts there."""
    size, first = data.size, data[i]
    if first == 0xC2:
        return 2 if i + 1 < size and (data[i + 1] == 0x85 or data[i + 1] == 0xA0) else 0
    if i + 2 >= size:
        return 0
    second, third = data[i + 1], data[i + 2]
    if first == 0xE1:
        return 3 if second == 0x9A and third == 0x80 else 0
    if first == 0xE2:
        if second == 0x80 and (0x80 <= third <= 0x8A or third == 0xA8 or third == 0xA9 or third == 0xAF):
            return 3
        return 3 if second == 0x81 and third == 0x9F else 0
    return 3 if first == 0xE3 and second == 0x80 and third == 0x80 else 0


@jit(cache=True, inline="always")
def _next_word(data, i, classes, codes):
    """The next word from byte `i` on: its start, its end and its hash, and where to go on from; a start of -1 when
    no word is left. A piece of punctuation alone is not a word. A word's hash rotates and adds (xor) each kept
    byte's code, then is mixed; a letter or a punctuation mark takes the same path, without a branch (a mark's code
    is 0, and it rotates by 0)."""
    size, start, value, kept = data.size, i, np.uint64(0), np.uint64(0)
    while i < size:
        byte = data[i]
        kind = classes[byte]
        if kind < SPACE:  # a letter or a mark: inside a piece
            code = codes[byte]
            turn = np.uint64(code != 0)
            value = ((value << turn) | (value >> ((np.uint64(64) - turn) & np.uint64(63)))) ^ code
            kept |= turn
            i += 1
            continue
        step = 1
        if kind == LEAD:
            step = _space_length(data, i)
            if step == 0:  # the lead byte of a character that is not a space
                value = ((value << np.uint64(1)) | (value >> np.uint64(63))) ^ codes[byte]
                kept = np.uint64(1)
                i += 1
                continue
        if kept:
            return start, i, _mix(value), i
        i += step
        start = i
    if kept:
        return start, size, _mix(value), size
    return -1, size, np.uint64(0), size


@jit(cache=True)
def _words(data, classes, codes, hashes, starts, ends):
    """Fill `hashes`, `starts`, `ends` (each at least len(data) // 2 + 1 long) with each word's hash and byte
    span; the number of words."""
    count, i = 0, 0
    while True:
        start, end, value, i = _next_word(data, i, classes, codes)
        if start < 0:
            return count
        hashes[count], starts[count], ends[count] = value, start, end
        count += 1


@jit(cache=True)
def _scan(data, index, found_arrays):
    """The candidates in a document's bytes, in one pass: as each word is read, the window of each length that it
    closes is keyed (rolling, from a ring of the last words) and looked up; for each key in the table, the entry it
    leads to and the window's byte span, in order of the window's end, into `found_arrays` (entries, starts, ends).
    All are counted; as many as fit are written. `index`: the byte tables, the pattern lengths and the table."""
    classes, codes, lengths, table_keys, table_first = index
    found_entry, found_start, found_end = found_arrays
    longest = lengths.max()
    ring = 1
    while ring < longest + 1:
        ring *= 2
    hashes, starts = np.zeros(ring, np.uint64), np.zeros(ring, np.int64)
    tops, values = np.ones(lengths.size, np.uint64), np.zeros(lengths.size, np.uint64)
    for k in range(lengths.size):
        for _ in range(lengths[k]):
            tops[k] *= BASE
    found, count, i = 0, 0, 0
    while True:
        start, end, word, i = _next_word(data, i, classes, codes)
        if start < 0:
            return found
        slot_in_ring = count & (ring - 1)
        hashes[slot_in_ring], starts[slot_in_ring] = word, start
        count += 1
        for k in range(lengths.size):
            length = lengths[k]
            gone = hashes[(count - 1 - length) & (ring - 1)] if count > length else np.uint64(0)
            values[k] = values[k] * BASE + word - gone * tops[k]
            if count < length:
                continue
            first = _lookup(table_keys, table_first, values[k], length)
            if first >= 0:
                if found < found_entry.size:
                    found_entry[found] = first
                    found_start[found] = starts[(count - length) & (ring - 1)]
                    found_end[found] = end
                found += 1


def word_hashes(text: str) -> np.ndarray:
    """The scan's hash of each word of `text` (so an item's patterns are keyed as a document's windows are)."""
    data = _bytes(text)
    capacity = data.size // 2 + 1
    hashes, starts, ends = np.empty(capacity, np.uint64), np.empty(capacity, np.int64), np.empty(capacity, np.int64)
    return hashes[:_words(data, CLASSES, CODES, hashes, starts=starts, ends=ends)].copy()


def _bytes(text: str) -> np.ndarray:
    """A text's UTF-8 bytes (a lone surrogate, which JSON may hold, as its three bytes)."""
    return np.frombuffer(text.encode("utf-8", "surrogatepass"), np.uint8)


@dataclass(frozen=True)
class Match:
    """An item's n-gram found in a document: the item's number in the index, and the span of the document it
    covers (characters, end exclusive), from the first matching word's first character to the last's last."""

    item: int
    start: int
    end: int


class TextIndex:
    """The word n-grams of `items` (texts), for `matches(document)`; `n` words each (an item of fewer, whole)."""

    def __init__(self, items: list[str], n: int = TEXT_NGRAM):
        self.n = n
        self.words = [gpt3_words(text) for text in items]
        hashes = [word_hashes(text) for text in items]
        assert all(h.size == len(w) for h, w in zip(hashes, self.words)), "the scan and gpt3_words split differently"
        self.table = NgramTable(hashes, n)
        self.patterns = self.table.patterns
        self.arrays = (CLASSES, CODES, self.table.lengths, self.table.table_keys, self.table.table_first)

    def candidates(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The scan's candidates in `text`: first entries, byte starts and byte ends."""
        data, room = _bytes(text), FIRST_CANDIDATES
        while True:
            entry, start, end = np.empty(room, np.int64), np.empty(room, np.int64), np.empty(room, np.int64)
            found = _scan(data, self.arrays, (entry, start, end))
            if found <= room:
                return entry[:found], start[:found], end[:found]
            room = found

    def matches(self, text: str, first: bool = False) -> list[Match]:
        """Every window of `text` that is one of the items' n-grams, verified word for word, in order of its start
        (each credited to the first item, in index order, that holds it); with `first`, only the first met."""
        if not self.patterns:
            return []
        entries, starts, ends = self.candidates(text)
        if not entries.size:
            return []
        data = text.encode("utf-8", "surrogatepass")
        characters = _character_offsets(data, text)
        found = []
        for order in np.lexsort((ends, starts)):
            words = gpt3_words(data[starts[order]:ends[order]].decode("utf-8", "surrogatepass"))
            for item, position, length in self.table.entries(int(entries[order])):
                if self.words[item][position:position + length] == words:
                    found.append(Match(item, characters(int(starts[order])), characters(int(ends[order]))))
                    break
            if first and found:
                return found
        return found


def _character_offsets(data: bytes, text: str):
    """A function from a byte offset of `text`'s UTF-8 to its character offset."""
    if len(data) == len(text):
        return lambda offset: offset
    starts = np.frombuffer(data, np.uint8) & 0xC0 != 0x80  # bytes that start a character
    before = np.concatenate([[0], np.cumsum(starts)])
    return lambda offset: int(before[offset])
