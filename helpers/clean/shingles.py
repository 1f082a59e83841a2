"""Word n-gram shingles of many texts at once, hashed to 64 bits, and their MinHash signatures
from rensa (a Rust MinHash library; datasketch is the reference it is tested against).

A word is a run of bytes above the space character in the lower-cased UTF-8 text, so punctuation stays
part of its word ("end." and "end" differ) and any whitespace or control byte separates words. A shingle
is n consecutive words of one document; a document of fewer than n words is one shingle of all of them;
a document with no word has no shingle (and no signature worth comparing). Hashing is one compiled pass
over the bytes (numba): each word hashed as it is read, eight bytes at a time, then every n words mixed into a 64-bit shingle
hash. That keeps signatures at tens of thousands of documents per second on two cores; building the
n-gram strings in Python ran at about 2,000, and a vectorised numpy version at about 10,000 per core.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numba import njit

WORD_SEED = np.uint64(0xCBF29CE484222325)
WORD_PRIME = np.uint64(0x100000001B3)
BATCH_BYTES = 1 << 20  # text hashed per call: bounds the temporary arrays


@njit(cache=True, nogil=True)
def _mix(x):
    """splitmix64's finaliser: a bijective 64-bit mixer, so nearby inputs get unrelated outputs."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(cache=True, nogil=True)
def _shingle_kernel(data, doc_starts, n):
    """One pass over the bytes of a batch of documents (`doc_starts` has one more entry, the end): each
    word hashed as it is read, eight bytes per multiply (a word of up to seven bytes maps to its own hash), the last n word hashes kept in a ring, each full ring mixed
    into a shingle hash with one odd factor per position (word order matters)."""
    count = len(doc_starts) - 1
    factors = np.empty(n, np.uint64)
    for j in range(n):
        factors[j] = _mix(np.uint64(j) + np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)
    out = np.empty(len(data) // 2 + count + 1, np.uint64)
    counts = np.zeros(count, np.int64)
    ring = np.zeros(n, np.uint64)
    k = 0
    for d in range(count):
        position, end, words, first, slot = doc_starts[d], doc_starts[d + 1], 0, k, n - 1
        while position < end:
            while position < end and data[position] <= 32:
                position += 1
            if position == end:
                break
            h, chunk, shift, length = WORD_SEED, np.uint64(0), np.uint64(0), np.uint64(0)
            while position < end and data[position] > 32:  # 8 bytes at a time into one multiply
                chunk |= np.uint64(data[position]) << shift
                shift += np.uint64(8)
                length += np.uint64(1)
                position += 1
                if shift == np.uint64(64):
                    h = (h ^ chunk) * WORD_PRIME
                    h ^= h >> np.uint64(32)
                    chunk, shift = np.uint64(0), np.uint64(0)
            slot = slot + 1 if slot + 1 < n else 0
            ring[slot] = _mix(h ^ chunk ^ (length * np.uint64(0x9E3779B97F4A7C15)))
            words += 1
            if words >= n:  # the ring holds the last n words, the oldest just after `slot`
                g = np.uint64(0)
                index = slot
                for j in range(n):
                    index = index + 1 if index + 1 < n else 0
                    g += ring[index] * factors[j]
                out[k] = _mix(g)
                k += 1
        if 0 < words < n:  # a document of fewer than n words is one shingle of all of them
            g = np.uint64(0)
            for j in range(words):
                g += ring[j] * factors[j]
            out[k] = _mix(g)
            k += 1
        counts[d] = k - first
    return out[:k], counts


def _batch_hashes(encoded: Sequence[bytes], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Shingle hashes of a batch of encoded documents, grouped by document, and how many each has."""
    sizes = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    doc_starts = np.concatenate([[0], np.cumsum(sizes)])
    return _shingle_kernel(np.frombuffer(b"".join(encoded), dtype=np.uint8), doc_starts, n)


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
    """|A ∩ B| / |A ∪ B| of two sorted arrays of distinct shingle hashes (1.0 for two empty ones). In numpy,
    not numba: the process that checks candidates then never starts numba's compiler (about half a second)."""
    if len(first) > len(second):
        first, second = second, first
    where = np.searchsorted(second, first)
    shared = int(np.count_nonzero(second[np.minimum(where, len(second) - 1)] == first)) if len(second) else 0
    union = len(first) + len(second) - shared
    return shared / union if union else 1.0
