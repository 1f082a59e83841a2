"""Word n-gram shingles of many texts at once, hashed to 64 bits, and their MinHash signatures
from rensa (a Rust MinHash library; datasketch is the reference it is tested against).

A word is a run of bytes above the space character in the lower-cased UTF-8 text, so punctuation stays
part of its word ("end." and "end" differ) and any whitespace or control byte separates words. A shingle
is n consecutive words of one document; a document of fewer than n words is one shingle of all of them;
a document with no word has no shingle (and no signature worth comparing). Hashing is numpy over a
batch's bytes, all words at once: each word hashed eight bytes per multiply (unaligned 64-bit reads at
every word's start), then every n consecutive words mixed into a 64-bit shingle hash: about 290,000
documents of 100 words (175 MB) a second on one core here, within 10% of the compiled loop (numba) it
replaced, which gave the same hashes but cost every process a third of a second to load.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

NATIVE_LIBRARY = "rensa"  # computes the signatures on threads of its own, which a fork does not copy

WORD_SEED = np.uint64(0xCBF29CE484222325)
WORD_PRIME = np.uint64(0x100000001B3)
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
TAIL_MASKS = np.array([(1 << (8 * r)) - 1 for r in range(8)], np.uint64)  # the bytes of a word's last chunk
VECTOR_CHUNKS = 8  # words of up to 64 bytes are hashed chunk by chunk for all words at once; longer ones alone
BATCH_BYTES = 1 << 20  # text hashed per call: bounds the temporary arrays


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijective 64-bit mixer, so nearby inputs get unrelated outputs."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _position_factors(n: int) -> np.ndarray:
    """One odd factor per position in a shingle, so that word order matters."""
    return _mix(np.arange(n, dtype=np.uint64) + GOLDEN) | np.uint64(1)


def _fold_long_word(state: int, chunks: np.ndarray) -> int:
    """The chunk fold of `_word_hashes` for the rest of one long word, in Python integers."""
    for chunk in chunks.tolist():
        state = ((state ^ chunk) * int(WORD_PRIME)) & 0xFFFFFFFFFFFFFFFF
        state ^= state >> 32
    return state


def _word_hashes(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each word of `data` (bytes) starts, and its hash: every full eight-byte chunk folded in with one
    multiply, then the last partial chunk and the length mixed in (a word of up to seven bytes maps to its
    own hash). Chunks are read as unaligned little-endian uint64 at any byte offset, all words at once."""
    flags = np.zeros(len(data) + 2, bool)
    np.greater(data, 32, out=flags[1:-1])
    edges = np.flatnonzero(flags[1:] != flags[:-1])
    starts, ends = edges[0::2], edges[1::2]
    lengths = (ends - starts).astype(np.uint64)
    padded = np.zeros(len(data) + 8, np.uint8)
    padded[:len(data)] = data
    eight = np.ndarray((len(data) + 1,), dtype="<u8", buffer=padded, strides=(1,))  # 8 bytes from each offset
    full = (lengths >> np.uint64(3)).astype(np.intp)
    state = np.full(len(starts), WORD_SEED, np.uint64)
    active, k = np.flatnonzero(full > 0), 0
    while active.size and k < VECTOR_CHUNKS:
        folded = (state[active] ^ eight[starts[active] + 8 * k]) * WORD_PRIME
        state[active] = folded ^ (folded >> np.uint64(32))
        k += 1
        active = active[full[active] > k]
    for word in active.tolist():
        state[word] = _fold_long_word(int(state[word]), eight[starts[word] + 8 * np.arange(k, full[word])])
    tail = eight[starts + 8 * full] & TAIL_MASKS[(lengths & np.uint64(7)).astype(np.intp)]
    return starts, _mix(state ^ tail ^ (lengths * GOLDEN))


def _batch_hashes(encoded: Sequence[bytes], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Shingle hashes of a batch of encoded documents, grouped by document, and how many each has: every n
    consecutive word hashes of a document summed with one factor per position and mixed; a document of
    fewer than n words is one shingle of all of them."""
    sizes = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    doc_starts = np.concatenate([[0], np.cumsum(sizes + 1)])  # each document followed by a separator
    starts, words = _word_hashes(np.frombuffer(b"\n".join(encoded) + b"\n", dtype=np.uint8))
    first = np.searchsorted(starts, doc_starts)  # each document's first word
    per_doc = np.diff(first)
    short = (per_doc > 0) & (per_doc < n)
    counts = np.where(per_doc >= n, per_doc - n + 1, short.astype(np.int64))
    offsets = np.concatenate([[0], np.cumsum(counts)])
    out = np.empty(offsets[-1], np.uint64)
    factors = _position_factors(n)
    windows = len(words) - n + 1
    if windows > 0:
        summed = words[:windows] * factors[0]
        for j in range(1, n):
            summed += words[j:windows + j] * factors[j]
        inside = np.ones(windows, bool)  # a window within one document
        for j in range(1, n):
            crossing = first[1:-1] - j
            inside[crossing[(crossing >= 0) & (crossing < windows)]] = False
        from_windows = np.ones(len(out), bool)
        from_windows[offsets[:-1][short]] = False
        out[from_windows] = _mix(summed[inside])
    if short.any():
        which = np.flatnonzero(short)
        summed = np.zeros(len(which), np.uint64)
        for j in range(n - 1):
            has = per_doc[which] > j
            summed[has] += words[first[which[has]] + j] * factors[j]
        out[offsets[:-1][short]] = _mix(summed)
    return out, counts


def shingle_hashes(texts: Sequence[str], n: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """All documents' shingle hashes, flat, and the row offsets (length len(texts) + 1) that cut them into
    documents. Repeats inside a document are kept (MinHash ignores them)."""
    if n < 1:
        raise ValueError(f"n-gram size {n}: must be at least 1")
    flat, counts = [], []
    batch: list[bytes] = []
    size = 0
    for text in texts:
        batch.append(text.lower().encode("utf-8", "surrogatepass"))
        size += len(batch[-1]) + 1
        if size >= BATCH_BYTES:
            hashes, batch_counts = _batch_hashes(batch, n)
            flat.append(hashes), counts.append(batch_counts)
            batch, size = [], 0
    if batch or not counts:
        hashes, batch_counts = _batch_hashes(batch, n) if batch else (np.zeros(0, np.uint64), np.zeros(0, np.int64))
        flat.append(hashes), counts.append(batch_counts)
    offsets = np.concatenate([[0], np.cumsum(np.concatenate(counts))]).astype(np.uint64)
    return np.concatenate(flat), offsets


def shingle_set(text: str, n: int = 5) -> set[int]:
    """One text's distinct shingle hashes: for exact Jaccard similarities."""
    return set(shingle_hashes([text], n)[0].tolist())


def exact_jaccard(a: str, b: str, n: int = 5) -> float:
    """|A ∩ B| / |A ∪ B| of the two texts' shingle sets (1.0 for two texts with none)."""
    first, second = shingle_set(a, n), shingle_set(b, n)
    union = len(first | second)
    return len(first & second) / union if union else 1.0


def signatures(texts: Sequence[str], n: int = 5, num_perm: int = 128, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """MinHash signatures (uint32, one row of `num_perm` per text) from rensa, and each text's shingle
    count (a row of a text with none means nothing: leave it out of any comparison)."""
    import rensa

    flat, offsets = shingle_hashes(texts, n)
    if not len(texts):
        return np.zeros((0, num_perm), np.uint32), np.zeros(0, np.int64)
    matrix = rensa.RMinHash.digest_matrix_from_flat_token_hashes(flat, offsets, num_perm, seed)
    return np.asarray(matrix.to_rows(), dtype=np.uint32).reshape(len(texts), num_perm), np.diff(offsets).astype(np.int64)


def estimated_jaccard(first: np.ndarray, second: np.ndarray) -> np.ndarray | float:
    """The MinHash estimate: the share of signature positions where two rows agree (row-wise for 2-D)."""
    return np.mean(first == second, axis=-1)


def distinct_shingles(texts: Sequence[str], n: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Each text's distinct shingle hashes, sorted (what exact Jaccard compares), flat, and the offsets
    (length len(texts) + 1) that cut them into texts."""
    flat, offsets = shingle_hashes(texts, n)
    pieces = [np.unique(flat[offsets[k]:offsets[k + 1]]) for k in range(len(texts))]
    sizes = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    return (np.concatenate(pieces) if pieces else np.zeros(0, np.uint64),
            np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))


def sets_jaccard(first: np.ndarray, second: np.ndarray) -> float:
    """|A ∩ B| / |A ∪ B| of two sorted arrays of distinct shingle hashes (1.0 for two empty ones)."""
    if len(first) > len(second):
        first, second = second, first
    where = np.searchsorted(second, first)
    shared = int(np.count_nonzero(second[np.minimum(where, len(second) - 1)] == first)) if len(second) else 0
    union = len(first) + len(second) - shared
    return shared / union if union else 1.0
