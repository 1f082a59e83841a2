"""MinHash and LSH: rensa's estimates against exact Jaccard, with datasketch as the reference; our banding
against rensa's `RMinHashLSH`; the bands and rows chosen for a threshold."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.clean.text.lsh import (_UnionFind, candidate_pairs, candidate_probability, choose_bands, cluster,
                               duplicate_groups, s_curve_points, verified_pairs)
from helpers.clean.text.shingles import estimated_jaccard, exact_jaccard, shingle_hashes, signatures

NUM_PERM = 128


def _pairs_of_known_similarity(rng: np.random.Generator) -> list[tuple[str, str]]:
    """Pairs sharing a chosen share of their words: Jaccard similarities spread over (0, 1)."""
    pairs = []
    for overlap in np.linspace(0.05, 0.95, 19):
        words = [f"w{rng.integers(10**9)}" for _ in range(400)]
        changed = [w if rng.random() < overlap else f"v{rng.integers(10**9)}" for w in words]
        pairs.append((" ".join(words), " ".join(changed)))
    return pairs


def _datasketch_estimate(a: str, b: str, n: int) -> float:
    from datasketch import MinHash

    sketches = []
    for text in (a, b):
        flat, _ = shingle_hashes([text], n)
        sketch = MinHash(num_perm=NUM_PERM, seed=1)
        sketch.update_batch([int(h).to_bytes(8, "little") for h in set(flat.tolist())])
        sketches.append(sketch)
    return sketches[0].jaccard(sketches[1])


def test_rensa_estimates_are_as_close_to_exact_jaccard_as_datasketch():
    pairs = _pairs_of_known_similarity(np.random.default_rng(0))
    n = 2
    exact = np.array([exact_jaccard(a, b, n) for a, b in pairs])
    rows, _ = signatures([text for pair in pairs for text in pair], n, NUM_PERM)
    ours = estimated_jaccard(rows[0::2], rows[1::2])
    reference = np.array([_datasketch_estimate(a, b, n) for a, b in pairs])
    assert exact.min() < 0.1 and exact.max() > 0.8
    ours_error, reference_error = np.abs(ours - exact), np.abs(reference - exact)
    # The standard error of a 128-permutation estimate is at most 0.5 / sqrt(128) = 0.044.
    assert ours_error.mean() < 0.05 and reference_error.mean() < 0.05
    assert ours_error.max() < 0.15
    assert ours_error.mean() < 1.5 * reference_error.mean() + 0.01


def test_estimates_on_sampled_pairs_of_the_real_corpus(corpus_dir):
    texts = [json.loads(line)["text"] for line in (corpus_dir / "code.jsonl").open(encoding="utf-8")][:60]
    rows, _ = signatures(texts, 5, NUM_PERM)
    rng = np.random.default_rng(1)
    pairs = [tuple(rng.choice(len(texts), 2, replace=False)) for _ in range(40)]
    errors = [abs(estimated_jaccard(rows[i], rows[j]) - exact_jaccard(texts[i], texts[j])) for i, j in pairs]
    assert np.mean(errors) < 0.05


def test_our_banding_finds_the_pairs_rensa_lsh_finds():
    import rensa

    rng = np.random.default_rng(2)
    base = [" ".join(f"t{rng.integers(10**6)}" for _ in range(60)) for _ in range(12)]
    texts = base + [text.replace(text.split()[k], "CHANGED", 1) for k, text in enumerate(base[:8])]
    token_sets = []
    for text in texts:
        flat, _ = shingle_hashes([text], 3)
        token_sets.append([int(h).to_bytes(8, "little") for h in flat.tolist()])
    sketches = rensa.RMinHash.from_token_sets(token_sets, num_perm=NUM_PERM, seed=1)
    bands = 16
    index = rensa.RMinHashLSH(0.5, NUM_PERM, bands)
    for key, sketch in enumerate(sketches):
        index.insert(key, sketch)
    theirs = {(min(i, j), max(i, j)) for i, sketch in enumerate(sketches) for j in index.query(sketch) if i != j}
    matrix = np.array([sketch.digest() for sketch in sketches], dtype=np.uint32)
    assert theirs and candidate_pairs(matrix, bands, NUM_PERM // bands) == theirs


@pytest.mark.parametrize("threshold", [0.5, 0.7, 0.8, 0.9])
def test_chosen_bands_catch_pairs_at_the_threshold_with_the_fewest_below_it(threshold):
    bands, rows = choose_bands(threshold, NUM_PERM)
    assert bands * rows <= NUM_PERM
    assert candidate_probability(threshold, bands, rows) >= 0.95
    assert candidate_probability(threshold + 0.02, bands, rows) >= 0.98
    below = np.linspace(0, threshold, 501)
    area = np.trapezoid(candidate_probability(below, bands, rows), below)
    for b in range(1, NUM_PERM + 1):  # every other setting that reaches the same recall lets more through
        for r in range(1, NUM_PERM // b + 1):
            if (candidate_probability(threshold, b, r) >= 0.95
                    and candidate_probability(threshold + 0.02, b, r) >= 0.98):
                assert np.trapezoid(candidate_probability(below, b, r), below) >= area - 1e-12
    points = s_curve_points(threshold, bands, rows)
    assert list(points) == ["T-0.1", "T", "T+0.02", "T+0.05"] and points["T"] >= 0.95


def test_a_bucket_of_any_size_is_verified_against_a_few_representatives_only():
    members = np.arange(5_000)
    all_copies = cluster(5_000, [members], lambda i, j: True)
    assert all_copies.roots.tolist() == [0] * 5_000  # every copy joins the first
    assert (all_copies.comparisons, all_copies.joins, all_copies.most_representatives) == (4_999, 4_999, 1)
    assert all_copies.bucket_pairs == 5_000 * 4_999 // 2  # what listing pairs would have held
    strangers = cluster(5_000, [members], lambda i, j: False, representatives=32)
    assert strangers.most_representatives == 32 and strangers.over_cap == 5_000 - 32
    assert strangers.comparisons <= 32 * 5_000 and strangers.roots.tolist() == list(range(5_000))
    again = cluster(5_000, [members, members], lambda i, j: True)  # a second band: one root check each
    assert again.comparisons == 4_999


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 40), st.integers(1, 6), st.floats(0.0, 1.0))
def test_members_already_in_the_first_member_s_group_are_passed_over_with_the_same_result(seed, count, bands,
                                                                                             density):
    rng = np.random.default_rng(seed)
    buckets = [np.unique(rng.choice(count, rng.integers(2, count + 1))) for _ in range(bands)]
    close = {(i, j) for i in range(count) for j in range(count) if rng.random() < density}
    similar = lambda i, j: (i, j) in close  # noqa: E731
    fast = cluster(count, [b for b in buckets if len(b) > 1], similar, representatives=3)
    with pytest.MonkeyPatch.context() as patch:  # every member through the loop, as before the shortcut
        patch.setattr(_UnionFind, "roots_of", lambda self, items: -np.arange(len(items)))
        slow = cluster(count, [b for b in buckets if len(b) > 1], similar, representatives=3)
    assert fast.roots.tolist() == slow.roots.tolist()
    assert (fast.comparisons, fast.joins, fast.over_cap) == (slow.comparisons, slow.joins, slow.over_cap)


def test_a_copy_that_meets_only_another_copy_is_checked_against_their_original():
    # band 1 holds the original 0 and copy 1; band 2 holds copies 1 and 2 only, and 2 is too far from 1
    close_to_original = {(1, 0), (2, 0)}
    found = cluster(3, [np.array([0, 1]), np.array([1, 2])], lambda i, j: (i, j) in close_to_original)
    assert found.roots.tolist() == [0, 0, 0] and found.comparisons == 3  # 1-0, then 2-1 and 2-0


def test_what_the_representatives_cap_can_miss():
    # 0..3 are strangers to each other; 4 is a copy of 3 only. With 3 representatives (0, 1, 2) the cap
    # is full when 3 comes, so 3 is no representative, and 4, which matches only 3, is not joined.
    copies = {(4, 3)}
    similar = lambda i, j: (i, j) in copies  # noqa: E731
    missed = cluster(5, [np.arange(5)], similar, representatives=3)
    assert missed.roots.tolist() == [0, 1, 2, 3, 4] and missed.over_cap == 2
    found = cluster(5, [np.arange(5)], similar, representatives=4)
    assert found.roots.tolist() == [0, 1, 2, 3, 3]


def test_verification_and_union_find_keep_the_smallest_of_each_group():
    matrix = np.array([[1, 2, 3, 4], [1, 2, 3, 4], [9, 9, 9, 9], [1, 2, 3, 5], [9, 9, 9, 8]], dtype=np.uint32)
    pairs = candidate_pairs(matrix, 2, 2)
    verified = verified_pairs(matrix, pairs, 0.7)
    assert {(i, j) for i, j, _ in verified} == {(0, 1), (0, 3), (1, 3), (2, 4)}
    assert duplicate_groups(5, verified).tolist() == [0, 0, 2, 0, 2]
    assert duplicate_groups(3, [(1, 2, 1.0), (0, 2, 1.0)]).tolist() == [0, 0, 0]


def test_sets_jaccard_counts_the_shared_values_of_two_sorted_sets_exactly():
    from helpers.clean.text.shingles import sets_jaccard

    rng = np.random.default_rng(0)
    for _ in range(300):
        first, second = (np.unique(rng.integers(0, 200, rng.integers(0, 50)).astype(np.uint64)) for _ in range(2))
        a, b = set(first.tolist()), set(second.tolist())
        assert sets_jaccard(first, second) == (len(a & b) / len(a | b) if a | b else 1.0)
    assert sets_jaccard(np.zeros(0, np.uint64), np.array([1, 2], np.uint64)) == 0.0
