"""Dedup steps of `helpers.clean`: each decides across documents (`helpers.clean.steps.base`), one class each.

- `ExactDedup` (`--exact`): a 128-bit xxh3 digest of each text as the steps before it left it; of each set of
  equal digests, the first document in run order (input order, then line) is kept;
- `LineDedup` (`--lines`): each document's distinct countable lines counted over the documents still kept; a line
  held by `min_count` documents or more is boilerplate, and from then on every occurrence goes (`RepeatedLines`);
- `FuzzyDedup` (`--fuzzy`): MinHash signatures and LSH buckets, each candidate verified on the exact Jaccard of two
  shingle sets, grouped with union-find (`helpers.clean.text.lsh`); the first document of each group is kept.

Their collectors run in the workers and send back digests, counts or row numbers; the fuzzy signatures' band keys
and the candidates' shingle sets go to hidden files of the run (`helpers.clean.text.band_files`), never through a pipe.
"""

from __future__ import annotations

import time

import numpy as np

from ..steps.normalize import RepeatedLines
from ..steps.base import Collector, Dedup
from ..text.text_keys import exact_digest, line_keys

SIGN_BATCH_BYTES = 16 << 20  # text a worker signs (or turns into shingle sets) at a time
TOP_LINES = 10


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


class _LineCounts(Collector):
    def __init__(self, min_chars: int):
        self.min_chars, self.keys = min_chars, []

    def add(self, position: int, text: str) -> None:
        self.keys.extend(line_keys(text, self.min_chars))

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        unique, counts = np.unique(np.array(self.keys, dtype=np.uint64), return_counts=True)
        return unique, counts.astype(np.int64)


class LineDedup(Dedup):
    name = "lines"

    def __init__(self, min_count: int, min_chars: int):
        self.min_count, self.min_chars = min_count, min_chars
        self.counted: dict | None = None

    def run(self, stage) -> None:
        found = stage.collect("lines", [_LineCounts(self.min_chars) for _ in stage.tasks])
        keys = np.concatenate([keys for keys, _ in found])
        counts = np.concatenate([counts for _, counts in found])
        unique, where = np.unique(keys, return_inverse=True)
        totals = np.bincount(where.ravel(), weights=counts, minlength=len(unique)).astype(np.int64)
        repeated = frozenset(unique[totals >= self.min_count].tolist())
        order = np.argsort(-totals, kind="stable")[:TOP_LINES]
        self.top = {int(unique[i]): int(totals[i]) for i in order}
        self.counted = {"min_count": self.min_count, "min_chars": self.min_chars,
                        "distinct_lines_counted": int(len(unique)), "repeated_lines": len(repeated)}
        self.then = RepeatedLines(repeated, self.min_chars, wanted=frozenset(self.top))

    def report(self, stage) -> dict:
        """The counts, the most repeated lines with their text, and the lines dropped in all."""
        notes = stage.notes.get(self.name, {})
        texts = notes.get("texts", {})
        return {**self.counted, "top": [{"line": texts.get(key, ""), "documents": count,
                                         "removed": count >= self.min_count} for key, count in self.top.items()],
                "lines_dropped": int(notes.get("lines_dropped", 0))}
