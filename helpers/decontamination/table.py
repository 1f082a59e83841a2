"""The table both indexes key their patterns in: every window of `length` hashed units (an item's words or tokens)
keyed by a polynomial of the units' 64-bit hashes (mixed), in an open-addressing table at most half full; the
patterns of one key chained in the order they were added, so that a candidate is checked against each."""

from __future__ import annotations

import numpy as np

from ..common.compiled import jit

BASE = np.uint64(0x9E3779B97F4A7C15)
MIX_1, MIX_2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


@jit(cache=True, inline="always")
def splitmix64(value):
    """A 64-bit finaliser (splitmix64's), so that nearby keys land far apart in the table."""
    value = (value ^ (value >> np.uint64(30))) * MIX_1
    value = (value ^ (value >> np.uint64(27))) * MIX_2
    return value ^ (value >> np.uint64(31))


@jit(cache=True)
def window_keys(hashes, count, length, keys):
    """The key of every window of `length` words among the first `count` hashes, into `keys`; how many."""
    windows = count - length + 1
    if windows <= 0:
        return 0
    top, value = np.uint64(1), np.uint64(0)
    for _ in range(length - 1):
        top *= BASE
    for j in range(length):
        value = value * BASE + hashes[j]
    for i in range(windows):
        if i > 0:
            value = (value - hashes[i - 1] * top) * BASE + hashes[i + length - 1]
        key = splitmix64(value + np.uint64(length) * MIX_2)
        keys[i] = key if key != 0 else np.uint64(1)  # 0 marks an empty slot of the table
    return windows


@jit(cache=True, inline="always")
def _lookup(table_keys, table_first, value, length):
    """The first pattern of the key of a window whose polynomial is `value` and whose length is `length`, or -1."""
    key = splitmix64(value + np.uint64(length) * MIX_2)
    if key == 0:
        key = np.uint64(1)
    mask = table_keys.size - 1
    slot = np.int64(key >> np.uint64(33)) & mask
    while table_keys[slot] != 0:
        if table_keys[slot] == key:
            return table_first[slot]
        slot = (slot + 1) & mask
    return -1


@jit(cache=True)
def window_tops(lengths):
    """BASE to the power of each window length: what the unit leaving a rolling key weighs."""
    tops = np.ones(lengths.size, np.uint64)
    for k in range(lengths.size):
        for _ in range(lengths[k]):
            tops[k] *= BASE
    return tops


@jit(cache=True, inline="always")
def roll_windows(units, at, mask, known, rolling, table):
    """The keys of the windows of each length that end at unit `units[at & mask]` (`units`: all of them, mask -1,
    or a ring of the last ones), rolled on from the last (`rolling`: the lengths, their keys, their tops, firsts),
    and, for each length the last `known` units cover, the first entry of the window's key in `table` (keys,
    firsts) into `firsts` where there is one (the caller reads them and sets them back to -1); whether any was
    found."""
    lengths, values, tops, firsts = rolling
    table_keys, table_first = table
    unit, any_found = units[at & mask], False
    for k in range(lengths.size):
        length = lengths[k]
        gone = units[(at - length) & mask] if at >= length else np.uint64(0)
        values[k] = values[k] * BASE + unit - gone * tops[k]
        if known < length:
            continue
        first = _lookup(table_keys, table_first, values[k], length)
        if first >= 0:
            firsts[k], any_found = first, True
    return any_found


@jit(cache=True)
def _insert(table_keys, table_first, last, following, keys):
    """Put entries 0.. of `keys` into the table; entries with one key are chained in order (`following`)."""
    mask = table_keys.size - 1
    for entry in range(keys.size):
        key = keys[entry]
        slot = np.int64(key >> np.uint64(33)) & mask
        while table_keys[slot] != 0 and table_keys[slot] != key:
            slot = (slot + 1) & mask
        if table_keys[slot] == 0:
            table_keys[slot], table_first[slot] = key, entry
        else:
            following[last[slot]] = entry
        last[slot] = entry


def bitmap(positions: np.ndarray, bits: int) -> np.ndarray:
    """A bitmap of `bits` bits (64 to a word) with the bits at `positions` set: the scans' vocabularies."""
    positions = np.unique(positions).astype(np.uint64)
    words = np.zeros((max(bits, 1) + 63) // 64, np.uint64)
    np.bitwise_or.at(words, (positions >> np.uint64(6)).astype(np.int64), np.uint64(1) << (positions & np.uint64(63)))
    return words


class NgramTable:
    """The patterns of some items: for item k, every window of `n` of its units (all of them, when it has fewer),
    from the units' hashes (`unit_hashes[k]`). `entry_item`, `entry_position`, `entry_length` say where each
    pattern is; `table_keys`, `table_first` and `following` lead from a key to its patterns; `lengths` are the
    pattern lengths present."""

    def __init__(self, unit_hashes: list[np.ndarray], n: int):
        if n < 1:
            raise ValueError("an n-gram has at least one unit")
        items, positions, lengths, keys = [], [], [], []
        for number, hashes in enumerate(unit_hashes):
            length = min(n, hashes.size)
            if length == 0:
                continue
            windows = np.empty(hashes.size - length + 1, np.uint64)
            window_keys(hashes, hashes.size, length, windows)
            keys.append(windows)
            items.append(np.full(windows.size, number, np.int32))
            positions.append(np.arange(windows.size, dtype=np.int32))
            lengths.append(np.full(windows.size, length, np.int32))
        self.entry_item, self.entry_position = _joined(items, np.int32), _joined(positions, np.int32)
        self.entry_length = _joined(lengths, np.int32)
        entry_keys = _joined(keys, np.uint64)
        self.lengths = np.unique(self.entry_length).astype(np.int64)
        size = 1 << max(4, int(2 * max(entry_keys.size, 1) - 1).bit_length())
        self.table_keys, self.table_first = np.zeros(size, np.uint64), np.full(size, -1, np.int64)
        self.following = np.full(entry_keys.size, -1, np.int64)
        _insert(self.table_keys, self.table_first, np.zeros(size, np.int64), following=self.following, keys=entry_keys)
        self.patterns = int(entry_keys.size)

    def entries(self, first: int):
        """The patterns that share the key whose first pattern is `first`, in the order they were added, as
        (item, position, length)."""
        entry = first
        while entry >= 0:
            yield int(self.entry_item[entry]), int(self.entry_position[entry]), int(self.entry_length[entry])
            entry = int(self.following[entry])


def _joined(parts: list[np.ndarray], kind) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, kind)
