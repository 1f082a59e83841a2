"""MinHash and LSH: rensa's estimates against exact Jaccard, with datasketch as the reference; our banding
against rensa's `RMinHashLSH`; the bands and rows chosen for a threshold."""

from __future__ import annotations

import json

import numpy as np

from helpers.clean.lsh import candidate_pairs, candidate_probability, choose_bands, duplicate_groups, verified_pairs
from helpers.clean.shingles import estimated_jaccard, exact_jaccard, shingle_hashes, signatures

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


def test_chosen_bands_make_a_steep_s_curve_at_the_threshold():
    bands, rows = choose_bands(0.8, NUM_PERM)
    assert bands * rows <= NUM_PERM
    assert candidate_probability(0.5, bands, rows) < 0.01
    assert candidate_probability(0.95, bands, rows) > 0.99
    assert 0.7 < (1 / bands) ** (1 / rows) < 0.9
    lower_bands, lower_rows = choose_bands(0.5, NUM_PERM)
    assert candidate_probability(0.5, lower_bands, lower_rows) > candidate_probability(0.5, bands, rows)


def test_verification_and_union_find_keep_the_smallest_of_each_group():
    matrix = np.array([[1, 2, 3, 4], [1, 2, 3, 4], [9, 9, 9, 9], [1, 2, 3, 5], [9, 9, 9, 8]], dtype=np.uint32)
    pairs = candidate_pairs(matrix, 2, 2)
    verified = verified_pairs(matrix, pairs, 0.7)
    assert {(i, j) for i, j, _ in verified} == {(0, 1), (0, 3), (1, 3), (2, 4)}
    assert duplicate_groups(5, verified).tolist() == [0, 0, 2, 0, 2]
    assert duplicate_groups(3, [(1, 2, 1.0), (0, 2, 1.0)]).tolist() == [0, 0, 0]
