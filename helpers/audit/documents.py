"""Where a batch's documents start and end, for the checks that look at documents rather than rows.

A document starts at a row's first token that is not padding, and after each EOD that is not a row's last
token; it is whole when it lies between two EODs of one row (or fills a padded row: one document a row). With no
`eod_id`, only rows are known: a padded row is one document.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Documents:
    """One batch's document starts (row, column; a row's first token may be inside a document) and whole documents (row, start, end: end exclusive, the EOD
    left out); `between`: those of them with an EOD before and after (not a padded row's); `ends`: the EOD
    positions that end a document (not padding, nor an EOD right after another)."""

    starts: list[tuple[int, int]]
    certain: list[tuple[int, int]]  # of them, those known to start a document: after an EOD or padding
    whole: list[tuple[int, int, int]]
    between: list[tuple[int, int, int]]
    ends: np.ndarray  # bool [rows, length]


def documents(ids: np.ndarray, padding: np.ndarray, eod_id: int | None) -> Documents:
    """The documents of one batch; `padding`: where its rows are padding (`masks.hidden_padding`)."""
    rows, length = ids.shape
    ends = (ids == eod_id) & ~padding if eod_id is not None else np.zeros(ids.shape, bool)
    ends[:, 1:] &= ids[:, :-1] != ids[:, 1:]  # a run of EODs (packing's padding) ends one document
    starts, certain, whole, between = [], [], [], []
    for row in range(rows):
        real = np.flatnonzero(~padding[row])
        if not real.size:
            continue
        first, last = int(real[0]), int(real[-1]) + 1
        starts.append((row, first))
        cuts = np.flatnonzero(ends[row, first:last]) + first
        after = [(row, int(cut) + 1) for cut in cuts if cut + 1 < last and ids[row, cut + 1] != eod_id]
        starts.extend(after)
        padded = first > 0 or last < length
        certain.extend([(row, first)] * padded + after)
        bounds = [first - 1 if padded else None, *cuts.tolist(), last if padded else None]
        for left, right in zip(bounds, bounds[1:]):
            if left is not None and right is not None and right > left + 1 and ids[row, left + 1] != eod_id:
                whole.append((row, left + 1, right))
                if right < length and ends[row, right] and left >= 0 and ends[row, left]:
                    between.append((row, left + 1, right))
    return Documents(starts=starts, certain=certain, whole=whole, between=between, ends=ends)


def first_tokens(ids: np.ndarray, starts: list[tuple[int, int]], count: int) -> np.ndarray:
    """The first `count` ids of each document start ([starts, count]; -1 past a row's end)."""
    out = np.full((len(starts), count), -1, np.int64)
    for i, (row, column) in enumerate(starts):
        part = ids[row, column:column + count]
        out[i, :part.size] = part
    return out
