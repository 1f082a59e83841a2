"""`--exact`: a 128-bit xxh3 digest of each text as the steps before it left it; of each set of equal digests, the
first document in run order (input order, then line) is kept. Workers send back digests, never texts."""

from __future__ import annotations

import time

import numpy as np

from ..text.text_keys import exact_digest
from .base import Collector, Dedup, Option

class _Digests(Collector):
    def __init__(self):
        self.positions, self.digests = [], []

    def add(self, position: int, text: str) -> None:
        self.positions.append(position)
        self.digests.append(exact_digest(text))

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        return (np.array(self.positions, np.int64),
                np.frombuffer(b"".join(self.digests), np.uint8).reshape(-1, 16))


class ExactDedup(Dedup):
    name = "exact"
    options = (Option("exact", False, "drop exact duplicates (xxh3-128 of the text)", cli={"action": "store_true"},
                      reported=False),)

    def run(self, stage) -> None:
        found = stage.collect("exact", [_Digests() for _ in stage.tasks])
        start = time.perf_counter()
        alive = np.concatenate([stage.offsets[k] + positions for k, (positions, _) in enumerate(found)])
        digests = np.concatenate([digests for _, digests in found]) if found else np.zeros((0, 16), np.uint8)
        keys = np.ascontiguousarray(digests).view(np.dtype((np.void, 16))).ravel()
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        original = alive[first[inverse.ravel()]]
        duplicate = original != alive
        stage.remove(alive[duplicate], self.name, duplicate_of=original[duplicate])
        stage.timed(self.name, time.perf_counter() - start, len(alive))
