"""Where each digest was first seen, for up to a fixed number of digests: what replays and shared batches are
found by, in memory that stays bounded over a run of any length.

The newest digests sit in a dict; every `capacity / 16` of them are frozen into a sorted pair of numpy arrays
(16 bytes a digest), and the oldest frozen block is forgotten once more than `capacity` are held. A digest
forgotten and seen again counts as new: that is what the bound costs (see `Auditor`'s `remember`).

A sighting is one int: ((step * ROW_SLOTS + row) * 2 + last) * RANK_SLOTS + rank, `last` 1 for a batch's last
row, so that a replay can be told by its order: which sample came right after which.
"""

from __future__ import annotations

from collections import deque

import numpy as np

ROW_SLOTS = 1 << 20  # rows a batch may have
RANK_SLOTS = 1 << 16  # ranks a run may have
BLOCKS = 16


def sighting(step: int, row: int, rank: int, last: bool = False) -> int:
    return ((step * ROW_SLOTS + row) * 2 + last) * RANK_SLOTS + rank


def where(value: int) -> tuple[int, int, int]:
    """(step, row, rank) of a sighting."""
    place, rank = divmod(value, RANK_SLOTS)
    step, row = divmod(place >> 1, ROW_SLOTS)
    return step, row, rank


def follows(before: int | None, after: int | None) -> bool:
    """Whether `after` is the sample right after `before` in the same rank's stream: the next row, or the
    first row of the next step after the last row of its batch."""
    if before is None or after is None:
        return False
    (step, row, rank), (step2, row2, rank2) = where(before), where(after)
    last = bool((before // RANK_SLOTS) & 1)
    return rank == rank2 and ((step2 == step and row2 == row + 1) or (last and step2 == step + 1 and row2 == 0))


class Sightings:
    """digest -> its first sighting, for the newest `capacity` digests (at least)."""

    def __init__(self, capacity: int):
        if not isinstance(capacity, int) or capacity < BLOCKS:
            raise ValueError(f"capacity {capacity!r}: keep at least {BLOCKS} digests")
        self.capacity, self.block = capacity, capacity // BLOCKS
        self.recent: dict[int, int] = {}
        self.frozen: deque[tuple[np.ndarray, np.ndarray]] = deque()  # (sorted digests, sightings), oldest first

    def __len__(self) -> int:
        return len(self.recent) + sum(len(keys) for keys, _ in self.frozen)

    def get(self, digest: int) -> int | None:
        return self.get_many([digest])[0]

    def get_many(self, digests: list[int]) -> list[int | None]:
        """Each digest's first sighting, or None: one search of each frozen block for all of them."""
        found: list[int | None] = [self.recent.get(d) for d in digests]
        if self.frozen and digests:
            wanted = np.array(digests, np.uint64)
            for keys, values in self.frozen:  # oldest first: a digest sits in one place only
                at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
                for i in np.flatnonzero(keys[at] == wanted):
                    found[i] = int(values[at[i]])
        return found

    def add_many(self, digests: list[int], values: list[int]) -> None:
        """Keep each value as where its digest was first seen, unless the digest is already held."""
        for digest, value, held in zip(digests, values, self.get_many(digests)):
            if held is None and digest not in self.recent:
                self.recent[digest] = value
                if len(self.recent) >= self.block:
                    self._freeze()

    def add(self, digest: int, value: int) -> None:
        self.add_many([digest], [value])

    def _freeze(self) -> None:
        keys = np.fromiter(self.recent.keys(), np.uint64, len(self.recent))
        values = np.fromiter(self.recent.values(), np.int64, len(self.recent))
        order = np.argsort(keys)
        self.frozen.append((keys[order], values[order]))
        self.recent = {}
        while sum(len(k) for k, _ in self.frozen) > self.capacity - self.block:
            self.frozen.popleft()

    def nbytes(self) -> int:
        """Bytes held by the frozen blocks (the dict of the newest is about 100 bytes a digest on top)."""
        return sum(keys.nbytes + values.nbytes for keys, values in self.frozen)

    def state(self, before: int | None = None) -> list[list[int]]:
        """[digests, sightings] (sightings below `before` only), oldest first: JSON-ready for a checkpoint."""
        keys = np.concatenate([np.zeros(0, np.uint64), *(k for k, _ in self.frozen),
                               np.fromiter(self.recent.keys(), np.uint64, len(self.recent))])
        values = np.concatenate([np.zeros(0, np.int64), *(v for _, v in self.frozen),
                                 np.fromiter(self.recent.values(), np.int64, len(self.recent))])
        if before is not None:
            keys, values = keys[values < before], values[values < before]
        return [keys.tolist(), values.tolist()]

    @classmethod
    def from_state(cls, capacity: int, state) -> Sightings:
        """From `state()`, or from a dict {digest: sighting} as older checkpoints kept."""
        keys, values = (list(state), list(state.values())) if isinstance(state, dict) else state
        sightings = cls(capacity)
        sightings.add_many([int(k) for k in keys], [int(v) for v in values])
        return sightings
