"""`unshuffled`: a stream in the order its data was stored (a shuffle buffer of one over data sorted by source or
by length), named from the stream's own statistics.

- **By length.** Each batch's mean document length (whole documents, or a padded row's real tokens): over the
  last `TREND_STEPS` steps that had any, no pair of steps out of order and at least `TREND_PAIRS` pairs in order
  (rising, or falling). Shuffled batches put the pairs in random order. `TREND_STEPS` is more than the 50 batches
  that Hugging Face's `group_by_length` sorts together, in shuffled groups.
- **By source.** Each batch's ids as a histogram (ids folded into `BUCKETS`), compared with the batch `NEAR` steps
  back and with the one `LAG` steps back. Shuffled batches are alike at any distance; batches drawn one source after
  another are alike within a source and unlike across its change. `NEAR` steps is past most documents, so a
  stream that shuffles documents and cuts each into consecutive rows (a long one fills several batches) is not
  taken for one sorted by source. Named when, over the last `LAG` steps, the nearer similarity exceeds the
  distant one's by `MARGIN` or more, and by `SIGMAS` standard errors of the steps' differences.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

TREND_STEPS, TREND_PAIRS = 64, 1000
BUCKETS = 1024
NEAR, LAG = 16, 64
MARGIN = 0.3
SIGMAS = 8.0


def _histogram(ids: np.ndarray) -> np.ndarray:
    counts = np.bincount(np.mod(ids[ids >= 0], BUCKETS).ravel(), minlength=BUCKETS).astype(np.float32)
    norm = np.linalg.norm(counts)
    return counts / norm if norm else counts


class OrderWatch:
    def __init__(self):
        self.means: deque[float] = deque(maxlen=TREND_STEPS)
        self.histograms: deque[np.ndarray] = deque(maxlen=LAG + 1)
        self.differences: deque[float] = deque(maxlen=LAG)
        self.gaps: deque[tuple[float, float]] = deque(maxlen=LAG)

    def look(self, ids: np.ndarray, lengths: list[int]) -> str | None:
        """The finding's line when the stream's order shows with this batch, else None; `lengths`: its documents'."""
        return self._lengths(lengths) or self._sources(ids)

    def _lengths(self, lengths: list[int]) -> str | None:
        if not lengths:
            return None
        self.means.append(float(np.mean(lengths)))
        if len(self.means) < TREND_STEPS:
            return None
        values = np.array(self.means)
        signs = np.sign(values[None, :] - values[:, None])[np.triu_indices(len(values), 1)]
        rising, falling = int((signs > 0).sum()), int((signs < 0).sum())
        if min(rising, falling) or max(rising, falling) < TREND_PAIRS:
            return None
        way = "rises" if rising else "falls"
        return (f"the batches' mean document length {way} at every step of the last {TREND_STEPS} (from "
                f"{values[0]:,.0f} to {values[-1]:,.0f} tokens; shuffled batches put them in random order): the "
                "batches come in order of length, as data stored sorted by length and read without a shuffle gives "
                "them; fix: shuffle the samples (DataLoader(shuffle=True), "
                "a shuffle buffer as large as many documents, or dataset.shuffle()) before batching")

    def _sources(self, ids: np.ndarray) -> str | None:
        self.histograms.append(_histogram(ids))
        if len(self.histograms) <= LAG:
            return None
        now, before, back = self.histograms[-1], self.histograms[-1 - NEAR], self.histograms[-1 - LAG]
        near, far = float(now @ before), float(now @ back)
        self.differences.append(near - far)
        self.gaps.append((near, far))
        if len(self.differences) < LAG:
            return None
        differences = np.array(self.differences)
        mean, spread = float(differences.mean()), float(differences.std(ddof=1))
        if mean < MARGIN or mean < SIGMAS * spread / math.sqrt(LAG):
            return None
        near_mean = float(np.mean([n for n, _ in self.gaps]))
        far_mean = float(np.mean([f for _, f in self.gaps]))
        return (f"each batch is like the one {NEAR} steps before it (similarity of their ids {near_mean:.2f}) and unlike "
                f"the one {LAG} steps back ({far_mean:.2f}), over the last {LAG} steps (shuffled batches are alike at any "
                "distance): the data comes one source or document after another, unshuffled; fix: shuffle the "
                "samples across sources (DataLoader(shuffle=True), a shuffle buffer larger than a source, or a "
                "blend) before batching")
