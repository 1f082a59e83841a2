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
from .lengths import FIRST_ROOM, TOKEN_NGRAM
from .table import NgramTable, bitmap, roll_windows, splitmix64, window_tops


@jit(cache=True)
def _token_hashes(tokens):
    hashes = np.empty(tokens.size, np.uint64)
    for i in range(tokens.size):
        hashes[i] = splitmix64(np.uint64(tokens[i]) + np.uint64(1))
    return hashes


@jit(cache=True)
def _scan(tokens, index, found_arrays):
    """For each window of `tokens` (of each length) whose key is in the table, its first entry and start, in order of
    the window's end, into `found_arrays` (entries, starts); all are counted, as many as fit are written. Only a
    window whose every token is one of the items' (`vocabulary`, a bitmap of their ids) is looked up; every token
    is keyed, without a branch, which is cheaper than skipping the half that are not the items'.
    `index`: the vocabulary, the pattern lengths and the table."""
    vocabulary, lengths, table_keys, table_first = index
    found_entry, found_start = found_arrays
    longest = lengths.max()
    ring = 1
    while ring < longest + 1:
        ring *= 2
    hashes = np.zeros(ring, np.uint64)
    rolling = (lengths, np.zeros(lengths.size, np.uint64), window_tops(lengths), np.full(lengths.size, -1, np.int64))
    known_ids = vocabulary.size * 64
    found, known = 0, 0  # how many of the last tokens are the items'
    for i in range(tokens.size):
        token = tokens[i]
        inside = token >= 0 and token < known_ids
        bit = np.uint64(token & 63) if inside else np.uint64(0)
        ours = inside and (vocabulary[token >> 6 if inside else 0] >> bit) & np.uint64(1) != 0
        known = known + 1 if ours else 0
        hashes[i & (ring - 1)] = splitmix64(np.uint64(token) + np.uint64(1))
        if roll_windows(hashes, i, mask=ring - 1, known=known, rolling=rolling, table=(table_keys, table_first)):
            for k in range(lengths.size):
                if rolling[3][k] >= 0:
                    if found < found_entry.size:
                        found_entry[found], found_start[found] = rolling[3][k], i + 1 - lengths[k]
                    found += 1
                    rolling[3][k] = -1
    return found


@jit(cache=True)
def _verified(tokens, candidates, items, table_entries):
    """Of the candidates (rows: first entries, starts), each one's item and length where the window's tokens are a
    pattern's, checked token for token (the first pattern of the key that is), or -1. `items`: all items' tokens
    one after another, and where each starts; `table_entries`: each entry's item, position and length, and the
    entry after it under the same key."""
    flat, item_starts = items
    entry_item, entry_position, entry_length, following = table_entries
    found_item, found_length = np.full(candidates.shape[1], -1, np.int64), np.zeros(candidates.shape[1], np.int64)
    for c in range(candidates.shape[1]):
        entry, start = candidates[0, c], candidates[1, c]
        while entry >= 0:
            item, length = entry_item[entry], entry_length[entry]
            at = item_starts[item] + entry_position[entry]
            same = start + length <= tokens.size
            for k in range(length):
                if not same or tokens[start + k] != flat[at + k]:
                    same = False
                    break
            if same:
                found_item[c], found_length[c] = item, length
                break
            entry = following[entry]
    return found_item, found_length


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
        ids = np.concatenate(self.items) if self.items else np.zeros(0, np.int64)
        ids = ids[ids >= 0]
        self.arrays = (bitmap(ids, int(ids.max()) + 1 if ids.size else 1), self.table.lengths, self.table.table_keys,
                       self.table.table_first)  # the vocabulary: the ids the items use
        sizes = [item.size for item in self.items]
        self.flat_items = (np.concatenate(self.items) if self.items else np.zeros(0, np.int64),
                           np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))
        self.table_entries = (self.table.entry_item.astype(np.int64), self.table.entry_position.astype(np.int64),
                              self.table.entry_length.astype(np.int64), self.table.following)

    @classmethod
    def encoded(cls, texts: list[str], tokenizer, n: int = TOKEN_NGRAM) -> "TokenIndex":
        """The index of `texts`, each encoded alone by `tokenizer` (a zoo tokenizer: no BOS, no EOD added)."""
        return cls([np.asarray(ids, np.int64) for ids in tokenizer.encode_batch(list(texts))], n)

    def matches(self, tokens: np.ndarray, document_starts: np.ndarray | None = None) -> list[TokenMatch]:
        """Every window of `tokens` that equals a pattern, checked token for token, in order of its start; with
        `document_starts` (ascending offsets into `tokens`), only windows that lie within one document."""
        if not self.patterns or tokens.size == 0:
            return []
        room = min(max(FIRST_ROOM[0], tokens.size // 64), FIRST_ROOM[1])
        while True:
            candidates = np.empty((2, room), np.int64)
            found = _scan(tokens, self.arrays, (candidates[0], candidates[1]))
            if found <= room:
                break
            room = found
        candidates = candidates[:, :found][:, np.lexsort((candidates[0, :found], candidates[1, :found]))]
        items, lengths = _verified(tokens, candidates, self.flat_items, self.table_entries)
        starts = candidates[1][items >= 0]
        ends = starts + lengths[items >= 0]
        items = items[items >= 0]
        if document_starts is not None and starts.size:
            within = (np.searchsorted(document_starts, starts, side="right")
                      == np.searchsorted(document_starts, ends - 1, side="right"))
            items, starts, ends = items[within], starts[within], ends[within]
        return [TokenMatch(item, start, end) for item, start, end in zip(items.tolist(), starts.tolist(),
                                                                         ends.tolist())]
