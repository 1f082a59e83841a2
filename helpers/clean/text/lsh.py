"""Locality-sensitive hashing over MinHash signatures: the bands and rows a threshold calls for, the
buckets of documents that agree on every row of a band, and the groups of near-duplicates found in them,
of which the first document (smallest index) is kept.

Two documents of Jaccard similarity s share a band with probability 1 - (1 - s**r)**b, an S-curve.
`choose_bands` picks it for recall: among b * r <= num_perm, the settings that make a pair at the threshold
T a candidate with probability at least 0.95, and one at T + 0.02 with at least 0.98, the one that lets
through the fewest pairs below T (the smallest area under the curve there). A pair that never shares a band
is never compared: with these settings, at most 5% of the pairs at T and 2% of those at T + 0.02.

Candidates are verified exactly: two documents are joined only when the Jaccard similarity of their
shingle sets reaches T (the caller's `similar`), never on the signature's estimate, so no pair below T is
joined directly. Within a bucket, members are not paired with each other (a bucket of n copies would be
n**2 / 2 pairs): each member, in index order, is compared with the bucket's representatives, and with the
first document of each one's group where that is another (the copy of an original that this band missed
still meets the original), and joins the first it matches; one that matches none becomes a
representative, up to `REPRESENTATIVES` of them. What this can miss: a member of a bucket whose
representatives are full, and which matches none of them, is not joined through that bucket (it may still
be through another band), and a member similar only to documents that are neither. Groups are then the union over all buckets of all bands (union-find), so a group
can chain: A ~ B and B ~ C remove B and C, keeping A, whatever J(A, C) is. Memory is linear in the number
of documents: each bucket's members and at most `REPRESENTATIVES` representatives at a time.

The banding is the one rensa's `RMinHashLSH` does (a test checks the two find the same pairs); doing it in
numpy over a signature matrix avoids building one Python object per document.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Callable, Iterable, Iterator

import numpy as np

from ...common.errors import UserError
from ..text.shingles import estimated_jaccard

GRID = np.linspace(0.0, 1.0, 1001)
RECALL_AT_THRESHOLD, RECALL_ABOVE, MARGIN = 0.95, 0.98, 0.02  # a pair at T, and at T + MARGIN, is a candidate
REPRESENTATIVES = 32  # per bucket: members are verified against these, never against each other


def candidate_probability(similarity, bands: int, rows: int):
    """Chance that two documents of this Jaccard similarity share at least one band."""
    return 1.0 - (1.0 - np.asarray(similarity, dtype=float) ** rows) ** bands


def check_threshold(threshold: float) -> None:
    """A Jaccard threshold is strictly between 0 and 1 (`--threshold` on the command line)."""
    if not 0.0 < threshold < 1.0:
        raise UserError(f"--threshold {threshold}: must be between 0 and 1; fix: e.g. --threshold 0.8")


def choose_bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows) with bands * rows <= num_perm for recall at the threshold (see the module docstring)."""
    check_threshold(threshold)
    below = GRID <= threshold
    best, best_cost = (num_perm, 1), float("inf")
    for rows in range(1, num_perm + 1):
        for bands in range(1, num_perm // rows + 1):
            if (candidate_probability(threshold, bands, rows) >= RECALL_AT_THRESHOLD
                    and candidate_probability(min(threshold + MARGIN, 1.0), bands, rows) >= RECALL_ABOVE):
                cost = np.trapezoid(candidate_probability(GRID[below], bands, rows), GRID[below])
                if cost < best_cost:
                    best, best_cost = (bands, rows), cost
                break  # more bands of these rows only let more through
    return best


def check_bands(bands: int | None, rows: int | None, num_perm: int) -> None:
    """`--bands B --rows R`, given together, each at least 1, B x R hashes within `--num-perm`."""
    if bands is None and rows is None:
        return
    if bands is None or rows is None or bands < 1 or rows < 1:
        raise UserError(f"--bands {bands} --rows {rows}: give both, each at least 1; fix: e.g. --bands 14 --rows 7, "
                        "or neither to have them chosen for --threshold")
    if bands * rows > num_perm:
        raise UserError(f"--bands {bands} --rows {rows}: {bands * rows} hashes, more than --num-perm {num_perm}; fix: "
                        f"fewer bands or rows (bands x rows <= {num_perm}), or raise --num-perm")


def s_curve_points(threshold: float, bands: int, rows: int) -> dict[str, float]:
    """The chance of being a candidate at T - 0.1, T, T + 0.02 and T + 0.05: what the report prints."""
    points = {"T-0.1": threshold - 0.1, "T": threshold, "T+0.02": threshold + MARGIN, "T+0.05": threshold + 0.05}
    return {name: round(float(candidate_probability(min(max(s, 0.0), 1.0), bands, rows)), 4)
            for name, s in points.items()}


def band_keys(signatures: np.ndarray, band: int, rows: int) -> np.ndarray:
    """One 64-bit key per document for one band, its rows folded together (two different bands sharing a
    key is a false candidate, which verification removes)."""
    factors = (np.arange(1, rows + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)
    block = signatures[:, band * rows:(band + 1) * rows].astype(np.uint64)
    with np.errstate(over="ignore"):
        return (block * factors).sum(axis=1, dtype=np.uint64)


def all_band_keys(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """`[bands, documents]`: every band's keys (`band_keys`), what a worker writes to its band files."""
    return np.stack([band_keys(signatures, band, rows) for band in range(bands)]) if len(signatures) else \
        np.zeros((bands, 0), np.uint64)


def band_buckets(signatures: np.ndarray, bands: int, rows: int) -> Iterator[np.ndarray]:
    """Each bucket of two or more documents equal on every row of a band, band after band, as the sorted
    row numbers of its members (keys sorted, so equal bands sit side by side)."""
    for band in range(bands):
        yield from sorted_buckets(band_keys(signatures, band, rows), np.arange(len(signatures), dtype=np.int64))


def sorted_buckets(keys: np.ndarray, rows: np.ndarray) -> Iterator[np.ndarray]:
    """The runs of two or more equal `keys`, in ascending key order, each as the sorted `rows` of its keys."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    sizes = np.diff(np.append(starts, len(ordered)))
    for start, size in zip(starts[sizes > 1], sizes[sizes > 1]):
        yield np.sort(rows[order[start:start + size]])


def candidate_pairs(signatures: np.ndarray, bands: int, rows: int) -> set[tuple[int, int]]:
    """Pairs (i, j), i < j, of signature rows equal on every row of at least one band: every pair of every
    bucket, so quadratic in a bucket's size; for small sets and for comparing with other LSH code
    (`cluster` never lists them)."""
    pairs: set[tuple[int, int]] = set()
    for members in band_buckets(signatures, bands, rows):
        pairs.update(combinations(members.tolist(), 2))
    return pairs


def verified_pairs(signatures: np.ndarray, pairs, threshold: float) -> list[tuple[int, int, float]]:
    """The candidate pairs whose whole-signature estimate reaches the threshold, with that estimate (what
    the notebook compares exact verification with)."""
    if not pairs:
        return []
    ordered = np.array(sorted(pairs), dtype=np.int64)
    estimates = estimated_jaccard(signatures[ordered[:, 0]], signatures[ordered[:, 1]])
    return [(int(i), int(j), float(e)) for (i, j), e in zip(ordered, estimates) if e >= threshold]


def duplicate_groups(count: int, pairs) -> np.ndarray:
    """Union-find over the pairs: for each of `count` items, the smallest index of its group."""
    groups = _UnionFind(count)
    for first, second, *_ in pairs:
        groups.join(first, second)
    return groups.roots()


class _UnionFind:
    """Groups of items 0..count-1 joined pair by pair; each group's root is its smallest item. The parents
    are one int64 array (8 bytes an item), not a list of Python ints (about 36)."""

    def __init__(self, count: int):
        self.parent = np.arange(count, dtype=np.int64)

    def root(self, item: int) -> int:
        parent = self.parent
        while (up := int(parent[item])) != item:
            parent[item] = parent[up]
            item = up
        return item

    def join(self, first: int, second: int) -> None:
        a, b = self.root(first), self.root(second)
        if a != b:
            self.parent[max(a, b)] = min(a, b)

    def roots_of(self, items: np.ndarray) -> np.ndarray:
        """The roots of some items at once, by pointer jumping over their parents."""
        roots = self.parent[items]
        while True:
            above = self.parent[roots]
            if np.array_equal(above, roots):
                return roots
            roots = above

    def roots(self) -> np.ndarray:
        """Every item's root, by pointer jumping over the whole array (a parent is never above its item)."""
        roots = self.parent.copy()
        while True:
            above = roots[roots]
            if np.array_equal(above, roots):
                return roots
            roots = above


@dataclass
class Clusters:
    """The groups found, and what finding them held and did."""

    roots: np.ndarray  # per document, the smallest index of its group (itself when alone)
    buckets: int = 0  # buckets of two or more members, over all bands
    bucket_pairs: int = 0  # pairs sharing a bucket, counted once per band: what listing pairs would cost
    comparisons: int = 0  # exact verifications run
    joins: int = 0  # verifications that reached the threshold
    most_representatives: int = 0  # the most representatives one bucket held
    over_cap: int = 0  # members compared with a full set of representatives and matching none


def _checked(found: Clusters, similar: Callable[[int, int], bool], member: int, other: int) -> bool:
    found.comparisons += 1
    return similar(member, other)


def cluster(count: int, buckets: Iterable[np.ndarray], similar: Callable[[int, int], bool],
            representatives: int = REPRESENTATIVES) -> Clusters:
    """Groups of `count` documents from their buckets: each member verified against its bucket's
    representatives with `similar(member, representative)` (see the module docstring)."""
    groups = _UnionFind(count)
    found = Clusters(roots=np.zeros(0, np.int64))
    for members in buckets:
        found.buckets += 1
        found.bucket_pairs += len(members) * (len(members) - 1) // 2
        held: list[int] = []
        # The first member is the first representative. A member already in its group (another band joined
        # them) would stop at it without a check, and groups only grow, so it is passed over here at once:
        # a cluster met again in every band costs one array operation a band, not a loop over its members.
        roots = groups.roots_of(members)
        members = members[(roots != roots[0]) | (members == members[0])]
        for member in members.tolist():
            mine = groups.root(member)
            for representative in held:
                theirs = groups.root(representative)
                if theirs == mine:
                    break
                if any(_checked(found, similar, member, other) for other in dict.fromkeys((representative, theirs))):
                    groups.join(member, representative)
                    found.joins += 1
                    break
            else:
                if len(held) < representatives:
                    held.append(member)
                else:
                    found.over_cap += 1
        found.most_representatives = max(found.most_representatives, len(held))
    found.roots = groups.roots()
    return found
