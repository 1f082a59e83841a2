"""Megatron's greedy blending rule: which dataset each sample of a blended stream comes from.

The stream is cut into segments (a start sample and the weights in force from there; fixed weights are one
segment from sample 0). At sample i the rule takes, among the datasets still eligible, the one with the largest
`w x max(i - start, 1) - taken since start` (ties: the lowest index). Counts carry over from one segment to the
next, so a dataset continues where it stood. A dataset is eligible while it has taken fewer samples since `start`
than its limit: a blend that draws every sample once limits each dataset to its size, a schedule limits a dataset
of weight 0 to none, and fixed weights limit nothing (a dataset of weight 0 may then win a tie, as in megatron-core).

The rule is sequential (each choice needs every earlier count), so it is compiled with numba for a long stream
and has a Python twin for a short one (`helpers.common.compiled`); both give the same arrays.
"""

from __future__ import annotations

import math

import numpy as np

from ..common.compiled import GREEDY_SAMPLES, compiled_pays, jit

NO_LIMIT = np.iinfo(np.int64).max


@jit(cache=True)
def greedy_rule(starts, weights, limits, begin, end, dataset, number, counts, base, segment):  # pragma: no cover
    """The rule for samples begin..end-1, into `dataset` and `number` (its number in that dataset); segment s
    covers starts[s] .. starts[s+1] under `weights[s]` and `limits[s]`. `counts` (taken of each dataset), `base`
    (its counts where the segment began) and `segment` (one entry) are the rule's state, carried from call to call
    and from segment to segment."""
    s = segment[0]
    for i in range(begin, end):
        if s + 1 < starts.size and starts[s + 1] <= i:
            while s + 1 < starts.size and starts[s + 1] <= i:
                s += 1
            base[:] = counts
        step = max(float(i - starts[s]), 1.0)
        best, best_error = -1, -np.inf
        for k in range(weights.shape[1]):
            taken = counts[k] - base[k]
            if taken < limits[s, k]:
                error = weights[s, k] * step - taken
                if error > best_error:
                    best, best_error = k, error
        dataset[i] = best
        number[i] = counts[best]
        counts[best] += 1
    segment[0] = s


def greedy_rule_python(starts, weights, limits, begin, end, dataset, number, counts, base, segment):
    """`greedy_rule` in Python, on Python floats (the same float64 arithmetic), for short stretches."""
    bounds, table, caps = starts.tolist(), weights.tolist(), limits.tolist()
    taken, since = counts.tolist(), base.tolist()
    s = int(segment[0])
    picks = []
    for i in range(begin, end):
        if s + 1 < len(bounds) and bounds[s + 1] <= i:
            while s + 1 < len(bounds) and bounds[s + 1] <= i:
                s += 1
            since = list(taken)
        step = max(float(i - bounds[s]), 1.0)
        best, best_error = -1, -math.inf
        for k, w in enumerate(table[s]):
            lag = taken[k] - since[k]
            if lag < caps[s][k]:
                error = w * step - lag
                if error > best_error:
                    best, best_error = k, error
        picks.append((best, taken[best]))
        taken[best] += 1
    if picks:
        dataset[begin:end], number[begin:end] = zip(*picks)
    counts[:], base[:], segment[0] = taken, since, s


class GreedyStream:
    """The rule's arrays for a stream of `total` samples, made from its start as far as asked (`make`).

    `starts`: each segment's first sample (the first 0); `weights` and `limits`: `[segments, datasets]`."""

    def __init__(self, starts, weights, limits, total: int):
        self.starts = np.asarray(starts, dtype=np.int64)
        self.weights = np.array(weights, dtype=np.float64, ndmin=2)
        self.limits = np.array(limits, dtype=np.int64, ndmin=2)
        self.total = int(total)
        width = self.weights.shape[1]
        self.dataset = np.zeros(self.total, dtype=np.int16)
        self.number = np.zeros(self.total, dtype=np.int64)
        self.counts, self.base = np.zeros(width, dtype=np.int64), np.zeros(width, dtype=np.int64)
        self.segment = np.zeros(1, dtype=np.int64)
        self.made = 0

    def make(self, end: int, compiled: bool) -> None:
        """Choose samples `made`..end-1 with the compiled loop or its Python twin."""
        rule = greedy_rule if compiled else greedy_rule_python
        rule(self.starts, self.weights, self.limits, begin=self.made, end=end, dataset=self.dataset,
             number=self.number, counts=self.counts, base=self.base, segment=self.segment)
        self.made = end


def greedy_blend(weights: np.ndarray, limits: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(dataset of each sample, its number in that dataset) for `size` samples under fixed `weights` (one per
    dataset, used as given) and `limits`: compiled for a long blend, else in Python (`helpers.common.compiled`)."""
    stream = GreedyStream(starts=[0], weights=weights, limits=limits, total=size)
    stream.make(stream.total, compiled=compiled_pays(stream.total, GREEDY_SAMPLES))
    return stream.dataset, stream.number
