"""An exact index of an evaluation set's token n-grams, for data that is already tokens: a finished `.bin/.idx`
(`helpers.check --decontaminate`) and the batches a run is fed (`helpers.audit`'s `eval-overlap`).

Each item's text is encoded alone with the data's tokenizer, and every window of `n` of its tokens is a pattern
(an item of fewer tokens, whole). A window of the data is reported when its tokens equal a pattern's, checked token
for token, and it lies within one document (a window that runs across a document's end is never reported).

What a token match can miss, and the text check (`helpers.clean --decontaminate`, on GPT-3's words) does not:

- **Edges.** BPE pieces a string by its context: an item encoded alone starts a text, while a copy of it inside a
  document follows a space or other text, so its first token or two, and its last if text runs on, may differ.
  Windows that avoid the edges still match, so a copy of `n` tokens plus the edges is found; a copy barely longer
  than `n` tokens may not be.
- **Short leaks.** `n` is counted in tokens (`TOKEN_NGRAM`, 32 by default), not GPT-3's 13 words.
- **Any change of bytes.** Case, spacing, line breaks and punctuation changed give other tokens; the text check's
  words forgive them.
So the token path claims this much: every verbatim copy of an item's tokens, `n` or more in a row as the item alone
encodes them, within one document, and nothing else. The tests measure what it misses on planted copies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..common.compiled import jit
from .lengths import TOKEN_NGRAM
from .table import BASE, NgramTable, _lookup, _mix

FIRST_CANDIDATES = 256


@jit(cache=True)
def _token_hashes(tokens):
    hashes = np.empty(tokens.size, np.uint64)
    for i in range(tokens.size):
        hashes[i] = _mix(np.uint64(tokens[i]) + np.uint64(1))
    return hashes


@jit(cache=True)
def _scan(tokens, index, found_arrays):
    """For each window of `tokens` (of each length) whose key is in the table, its first entry and start, in order of
    the window's end, into `found_arrays` (entries, starts); all are counted, as many as fit are written. `index`: the
    pattern lengths and the table."""
    lengths, table_keys, table_first = index
    found_entry, found_start = found_arrays
    longest = lengths.max()
    ring = 1
    while ring < longest + 1:
        ring *= 2
    hashes = np.zeros(ring, np.uint64)
    tops, values = np.ones(lengths.size, np.uint64), np.zeros(lengths.size, np.uint64)
    for k in range(lengths.size):
        for _ in range(lengths[k]):
            tops[k] *= BASE
    found = 0
    for i in range(tokens.size):
        unit = _mix(np.uint64(tokens[i]) + np.uint64(1))
        hashes[i & (ring - 1)] = unit
        for k in range(lengths.size):
            length = lengths[k]
            gone = hashes[(i - length) & (ring - 1)] if i >= length else np.uint64(0)
            values[k] = values[k] * BASE + unit - gone * tops[k]
            if i + 1 < length:
                continue
            first = _lookup(table_keys, table_first, values[k], length)
            if first >= 0:
                if found < found_entry.size:
                    found_entry[found], found_start[found] = first, i + 1 - length
                found += 1
    return found


@dataclass(frozen=True)
class TokenMatch:
    """An item's token n-gram found in the data: the item's number, and the window `[start, end)` of tokens."""

    item: int
    start: int
    end: int


class TokenIndex:
    """The token n-grams of `items` (arrays of token ids), `n` tokens each (an item of fewer, whole)."""

    def __init__(self, items: list[np.ndarray], n: int = TOKEN_NGRAM):
        self.n = n
        self.items = [np.asarray(item, np.int64) for item in items]
        self.table = NgramTable([_token_hashes(item) for item in self.items], n)
        self.patterns = self.table.patterns

    @classmethod
    def encoded(cls, texts: list[str], tokenizer, n: int = TOKEN_NGRAM) -> "TokenIndex":
        """The index of `texts`, each encoded alone by `tokenizer` (a zoo tokenizer: no BOS, no EOD added)."""
        return cls([np.asarray(ids, np.int64) for ids in tokenizer.encode_batch(list(texts))], n)

    def matches(self, tokens: np.ndarray, document_starts: np.ndarray | None = None) -> list[TokenMatch]:
        """Every window of `tokens` that equals a pattern, checked token for token, in order of its start; with
        `document_starts` (ascending offsets into `tokens`), only windows that lie within one document."""
        if not self.patterns or tokens.size == 0:
            return []
        table, room = self.table, FIRST_CANDIDATES
        while True:
            entries, starts = np.empty(room, np.int64), np.empty(room, np.int64)
            found = _scan(tokens, (table.lengths, table.table_keys, table.table_first), (entries, starts))
            if found <= room:
                break
            room = found
        matches = []
        for order in np.lexsort((entries[:found], starts[:found])):
            start = int(starts[order])
            for item, position, length in table.entries(int(entries[order])):
                if np.array_equal(tokens[start:start + length], self.items[item][position:position + length]):
                    if document_starts is None or _within_one(document_starts, start, start + length):
                        matches.append(TokenMatch(item, start, start + length))
                    break
        return matches


def _within_one(document_starts: np.ndarray, start: int, end: int) -> bool:
    """Whether tokens `[start, end)` lie within one document."""
    first = np.searchsorted(document_starts, start, side="right")
    return first == np.searchsorted(document_starts, end - 1, side="right")
