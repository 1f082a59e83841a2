"""An exact index of an evaluation set's word n-grams, and the scan that finds them in a document.

Every window of `n` consecutive words of an item (GPT-3's words: `helpers.decontamination.words`) is a pattern; an
item of fewer than `n` words is one pattern, whole. A document contains an item's n-gram when its words hold the
pattern's words consecutively. No n-gram crosses from one document to the next, or from one item to the next.

The scan reads a document's UTF-8 bytes, compiled. A word's sum adds a random code for each of its normalised bytes
(its lowercase; punctuation adds nothing), whose low 32 bits count those bytes; its key is the sum times an odd
constant. The sum does not depend on the bytes' order, so the loop over a document's bytes has no branch and each
step waits only on an addition and a mask, where every space is ASCII. A document with a byte that may start a
Unicode space is read again by the exact loop, which finds the words as `str.split` does (ASCII and Unicode
whitespace) and where each one is; so is any document with a candidate, for its spans. Each window is keyed by a
polynomial of its words' keys and, when every one of its words is in the items' vocabulary (a bitmap of their keys),
looked up in an open-addressing table of the patterns' keys. Each key met is only a candidate: the document's words
there are compared with the item's words, so a match is never reported on a key alone (two words of the same bytes
in another order share a key), and no match is missed, since equal words give equal keys. A Bloom filter or a table
of hashes without this check can report an n-gram the item does not hold; one that keys the text differently from
the check can miss one.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

import numpy as np

from ..common.compiled import jit
from .lengths import FIRST_ROOM, TEXT_NGRAM
from .table import MIX_2, NgramTable, bitmap, roll_windows, window_tops
from .words import gpt3_words

WORD, PUNCTUATION, SPACE, LEAD = 0, 1, 2, 3  # what a byte is to the scan; LEAD may start a Unicode space
VOCABULARY_BITS = 17  # a word's key's top bits, marked in a bitmap of the items' words (16 KB)
COUNTED = np.uint64(0xFFFFFFFF)  # the low bits of a word's sum: how many bytes it has
SPACE_CODE = np.uint64(1 << 63)  # an ASCII space in the fast loop's table (a byte's code is below it)
LONGEST_FAST = 1 << 32  # bytes: a longer document is read by the exact loop (the fast one's counts could wrap)


def _byte_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each byte's class; the code its lowercase adds to a word's sum (random above the low 32 bits, 1 in them; 0
    for punctuation); and the fast loop's table: the code, or `SPACE_CODE` for an ASCII space."""
    classes = np.full(256, WORD, np.uint8)
    for character in string.punctuation:
        classes[ord(character)] = PUNCTUATION
    for byte in (9, 10, 11, 12, 13, 28, 29, 30, 31, 32):  # the ASCII characters str.split splits on
        classes[byte] = SPACE
    for byte in (0xC2, 0xE1, 0xE2, 0xE3):  # the lead bytes of U+0085, U+00A0, U+1680, U+2000-U+205F and U+3000
        classes[byte] = LEAD
    lower = np.arange(256)
    lower[65:91] += 32
    random = np.random.default_rng(20260101).integers(0, 2**31, size=256, dtype=np.int64).astype(np.uint64)
    codes = ((random << np.uint64(32)) | np.uint64(1))[lower]
    codes[(classes == PUNCTUATION) | (classes == SPACE)] = 0
    table = codes.copy()
    table[classes == SPACE] = SPACE_CODE
    return classes, codes, table


CLASSES, CODES, TABLE = _byte_tables()
LEADS = (CLASSES == LEAD).astype(np.uint64)


@jit(cache=True)
def _space_length(data, i, end):
    """The bytes of the Unicode space starting at `data[i]` (a LEAD byte), or 0 when none starts there before
    `end`."""
    first = data[i]
    if first == 0xC2:
        return 2 if i + 1 < end and (data[i + 1] == 0x85 or data[i + 1] == 0xA0) else 0
    if i + 2 >= end:
        return 0
    second, third = data[i + 1], data[i + 2]
    if first == 0xE1:
        return 3 if second == 0x9A and third == 0x80 else 0
    if first == 0xE2:
        if second == 0x80 and (0x80 <= third <= 0x8A or third == 0xA8 or third == 0xA9 or third == 0xAF):
            return 3
        return 3 if second == 0x81 and third == 0x9F else 0
    return 3 if first == 0xE3 and second == 0x80 and third == 0x80 else 0


@jit(cache=True)
def _fast_words(data, table, leads, sums):
    """Each word's sum, into `sums` (at least len(data) // 2 + 1 long), where every space is ASCII; the number of
    words, and whether a byte may start a Unicode space (then the count is not to be used). Branch-free: every byte
    writes the sum so far where the next word goes, and a space after a byte of a word moves that place on."""
    count, total, lead = 0, np.uint64(0), np.uint64(0)
    for i in range(data.size):
        code = table[data[i]]
        lead |= leads[data[i]]
        space = code >> np.uint64(63)
        sums[count] = total
        count += np.int64(space & np.uint64((total & COUNTED) != 0))
        total = (total + code) & (space - np.uint64(1))
    if total & COUNTED:
        sums[count] = total
        count += 1
    return count, lead != 0


@jit(cache=True)
def _words(data, classes, codes, sums, starts, ends):
    """Each word's sum and byte span, into `sums`, `starts`, `ends` (each at least len(data) // 2 + 1 long), the
    words found as `str.split` finds them (Unicode spaces too); the number of words. A piece of punctuation alone
    is not a word."""
    size = data.size
    count, i, start, total, kept = 0, 0, 0, np.uint64(0), False
    while i < size:
        byte = data[i]
        kind = classes[byte]
        step = 1 if kind == SPACE else _space_length(data, i, size) if kind == LEAD else 0
        if step == 0:
            total += codes[byte]
            kept |= kind != PUNCTUATION
            i += 1
            continue
        if kept:
            sums[count], starts[count], ends[count] = total, start, i
            count += 1
        total, kept = np.uint64(0), False
        i += step
        start = i
    if kept:
        sums[count], starts[count], ends[count] = total, start, size
        count += 1
    return count


@jit(cache=True)
def _keys(sums):
    """Words' keys from their sums, in place: times an odd constant, which keeps them apart (it has an inverse)
    and spreads them over the top bits the vocabulary reads."""
    for w in range(sums.size):
        sums[w] *= MIX_2


@jit(cache=True, inline="always")
def _end(data, bounds, document):
    """Where a document's bytes end: `bounds[document + 1]`, or the end of `data` for -1 (`ONE_TEXT`)."""
    end = bounds[document + 1]
    return data.size if end < 0 else end


ONE_TEXT = np.array([0, -1], np.int64)  # the bounds of one text, all of `data`
ONE_TEXT.flags.writeable = False


@jit(cache=True)
def _scan(data, bounds, index, found_arrays):
    """The candidates in the documents whose bytes are `data[bounds[d]:bounds[d + 1]]`: each document's words'
    keys, then each window of each length keyed (rolling) and, when all its words are in the items' vocabulary (a
    word outside it cannot be part of a pattern), looked up; for each key in the table, the entry it leads to, its
    document and the window's last word's number in it, in order of document and window end, into `found_arrays`
    (its rows: entries, documents, last words). All are counted; as many as fit are written. `index`: the
    vocabulary, the pattern lengths and the table (the byte tables are the module's, constants to the compiler)."""
    vocabulary, lengths, table_keys, table_first = index
    found_entry, found_document, found_last = found_arrays[0], found_arrays[1], found_arrays[2]
    largest = 0
    for document in range(bounds.size - 1):
        largest = max(largest, _end(data, bounds, document) - bounds[document])
    sums = np.empty(largest // 2 + 1, np.uint64)
    starts, ends = np.empty(largest // 2 + 1, np.int64), np.empty(largest // 2 + 1, np.int64)
    rolling = (lengths, np.zeros(lengths.size, np.uint64), window_tops(lengths), np.full(lengths.size, -1, np.int64))
    shift = np.uint64(64 - VOCABULARY_BITS)
    found = 0
    for document in range(bounds.size - 1):
        text = data[bounds[document]:_end(data, bounds, document)]
        count, unicode_spaces = _fast_words(text, TABLE, LEADS, sums) if text.size < LONGEST_FAST else (0, True)
        if unicode_spaces:
            count = _words(text, CLASSES, CODES, sums, starts=starts, ends=ends)
        rolling[1][:] = 0
        known = 0  # how many of the last words are in the vocabulary
        for w in range(count):
            word = sums[w] * MIX_2
            sums[w] = word
            bit = word >> shift
            known = known + 1 if (vocabulary[bit >> np.uint64(6)] >> (bit & np.uint64(63))) & np.uint64(1) else 0
            if roll_windows(sums, w, mask=-1, known=known, rolling=rolling, table=(table_keys, table_first)):
                for k in range(lengths.size):
                    if rolling[3][k] >= 0:
                        if found < found_entry.size:
                            found_entry[found], found_document[found], found_last[found] = rolling[3][k], document, w
                        found += 1
                        rolling[3][k] = -1
    return found


def utf8_word_spans(data: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The words of a text's UTF-8 bytes: each one's sum, and where it starts and ends (bytes)."""
    capacity = data.size // 2 + 1
    sums, starts, ends = np.empty(capacity, np.uint64), np.empty(capacity, np.int64), np.empty(capacity, np.int64)
    count = _words(data, CLASSES, CODES, sums, starts=starts, ends=ends)
    return sums[:count].copy(), starts[:count], ends[:count]


def word_hashes(text: str) -> np.ndarray:
    """The scan's key of each word of `text` (so an item's patterns are keyed as a document's windows are)."""
    keys = utf8_word_spans(_bytes(text))[0]
    _keys(keys)
    return keys


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
    """The word n-grams of `items` (texts), for `matches(document)` or `matches_each(documents)`; `n` words each (an
    item of fewer, whole)."""

    def __init__(self, items: list[str], n: int = TEXT_NGRAM):
        self.n = n
        self.words = [gpt3_words(text) for text in items]
        hashes = [word_hashes(text) for text in items]
        assert all(h.size == len(w) for h, w in zip(hashes, self.words)), "the scan and gpt3_words split differently"
        self.table = NgramTable(hashes, n)
        self.patterns = self.table.patterns
        top_bits = np.concatenate(hashes) >> np.uint64(64 - VOCABULARY_BITS) if hashes else np.zeros(0, np.uint64)
        self.arrays = (bitmap(top_bits, 1 << VOCABULARY_BITS), self.table.lengths, self.table.table_keys,
                       self.table.table_first)  # the vocabulary: the items' words, by their keys' top bits

    def candidates(self, data: np.ndarray, bounds: np.ndarray) -> np.ndarray:
        """The scan's candidates in the documents `data[bounds[d]:bounds[d + 1]]` (UTF-8 bytes), as rows: first
        entries, documents, and the number of each window's last word in its document."""
        room = min(max(FIRST_ROOM[0], data.size // 1024), FIRST_ROOM[1])
        while True:
            arrays = np.empty((3, room), np.int64)
            found = _scan(data, bounds, self.arrays, arrays)
            if found <= room:
                return arrays[:, :found]
            room = found

    def matches(self, text: str, first: bool = False) -> list[Match]:
        """Every window of `text` that is one of the items' n-grams, verified word for word, in order of its start:
        one match for each item that holds it, in index order (so a shared n-gram credits every item that has it);
        with `first`, only the first met."""
        if not self.patterns:
            return []
        data = text.encode("utf-8", "surrogatepass")
        found = self.candidates(np.frombuffer(data, np.uint8), ONE_TEXT)
        return self._verified(text, data, found[0], found[2], first=first) if found.shape[1] else []

    def matches_each(self, texts: list[str], first: bool = False) -> list[list[Match]]:
        """`matches` of each text, the texts scanned in one compiled call (cheaper than one call each)."""
        found: list[list[Match]] = [[] for _ in texts]
        if not self.patterns or not texts:
            return found
        encoded = [text.encode("utf-8", "surrogatepass") for text in texts]
        bounds = np.zeros(len(texts) + 1, np.int64)
        np.cumsum([len(each) for each in encoded], out=bounds[1:])
        entries, documents, lasts = self.candidates(np.frombuffer(b"".join(encoded), np.uint8), bounds)
        if entries.size:
            for document in np.unique(documents).tolist():
                mine = documents == document
                found[document] = self._verified(texts[document], encoded[document], entries[mine], lasts[mine],
                                                 first=first)
        return found

    def _verified(self, text: str, data: bytes, entries: np.ndarray, lasts: np.ndarray, first: bool) -> list[Match]:
        """The candidates of one text (entries, and the number of each window's last word) whose words are the
        pattern's, the text's words found again with where they are."""
        _, starts, ends = utf8_word_spans(np.frombuffer(data, np.uint8))
        characters = _character_offsets(data, text)
        firsts = lasts + 1 - self.table.entry_length[entries]  # each window's first word, by its first pattern
        order = np.lexsort((ends[lasts], starts[np.maximum(firsts, 0)]))
        found = []
        for entry, last in zip(entries[order].tolist(), lasts[order].tolist()):
            credited = set()
            for item, position, length in self.table.entries(entry):
                if last + 1 - length < 0 or item in credited:
                    continue
                start, end = int(starts[last + 1 - length]), int(ends[last])
                if self.words[item][position:position + length] == gpt3_words(
                        data[start:end].decode("utf-8", "surrogatepass")):
                    found.append(Match(item, characters(start), characters(end)))
                    credited.add(item)
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
