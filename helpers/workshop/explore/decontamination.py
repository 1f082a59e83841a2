"""Notebook 07's decontamination deep dive: a leak planted on purpose, and what a Bloom filter alone would say.

    from helpers.workshop.explore.decontamination import plant_leaks, bloom_false_positives
    leaked, planted = plant_leaks(code_records, humaneval, count=5, seed=0)   # said so: copies with a problem pasted
    rows = bloom_false_positives(index, clean_texts, bits_per_ngram=[2, 4, 8], hashes=4)

A Bloom filter keeps a few bits per n-gram of the evaluation set and answers "maybe" or "no" for each window of a
document: never a false "no", but some false "maybe"s, more the fewer bits it has. It cannot say which item, nor
where, and a "maybe" is not a match until the window is compared with the item, which the filter no longer holds.
"""

from __future__ import annotations

import random

import numpy as np

from ...decontamination.table import window_keys
from ...decontamination.text_index import TextIndex, word_hashes

ODD = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x27D4EB2F165667C5, 0x94D049BB133111EB], np.uint64)


def plant_leaks(records: list[dict], evals, count: int, seed: int = 0) -> tuple[list[dict], list[tuple[str, str]]]:
    """Copies of `records` in which `count` of them, chosen at random, have one item of `evals` (an `EvalSet`: its
    text, prompt and solution) pasted in at the start of a line; and (record id, item name) for each leak."""
    chance = random.Random(seed)
    chosen = chance.sample(range(len(records)), count)
    items = chance.sample(range(len(evals.texts)), count)
    leaked, planted = [dict(record) for record in records], []
    for position, item in zip(chosen, items):
        text = leaked[position]["text"]
        lines = text.splitlines(keepends=True)
        cut = chance.randrange(len(lines) + 1)
        leaked[position]["text"] = "".join(lines[:cut]) + evals.texts[item] + "\n" + "".join(lines[cut:])
        planted.append((leaked[position]["id"], evals.names[item]))
    return leaked, planted


def _window_keys_of(text: str, n: int) -> np.ndarray:
    """The 64-bit key of every window of `n` words of `text` (GPT-3's words), as the index keys them."""
    hashes = word_hashes(text)
    keys = np.empty(max(hashes.size - n + 1, 0), np.uint64)
    window_keys(hashes, hashes.size, n, keys)
    return keys


def _positions(keys: np.ndarray, hashes: int, bits: int) -> np.ndarray:
    """The `hashes` bit positions of each key in a filter of `bits` bits (a power of two), one row per key."""
    shift = np.uint64(64 - (bits.bit_length() - 1))
    with np.errstate(over="ignore"):
        return (keys[:, None] * ODD[None, :hashes]) >> shift


def bloom_false_positives(index: TextIndex, texts: list[str], bits_per_ngram: list[int], hashes: int = 4) -> list[dict]:
    """For a Bloom filter of the index's n-grams at each size (bits per n-gram, the whole rounded up to a power of
    two), the windows of `texts` it answers "maybe" for and the documents it would drop, against the exact index's;
    with the rate a filter of that size is expected to have, (1 - e^(-k n / m))^k."""
    n = index.n
    patterns = np.unique(np.concatenate([_window_keys_of(" ".join(words), n) for words in index.words]))
    per_text = [_window_keys_of(text, n) for text in texts]
    windows = np.concatenate(per_text)
    owner = np.repeat(np.arange(len(texts)), [keys.size for keys in per_text])
    exact = [len({(match.start, match.end) for match in index.matches(text)}) for text in texts]  # windows
    rows = []
    for per in bits_per_ngram:
        bits = 1 << int(np.ceil(np.log2(max(per * patterns.size, 2))))
        table = np.zeros(bits, bool)
        table[_positions(patterns, hashes, bits).ravel()] = True
        maybe = table[_positions(windows, hashes, bits)].all(axis=1)
        expected = (1 - np.exp(-hashes * patterns.size / bits)) ** hashes
        rows.append({"bits per n-gram": round(bits / patterns.size, 1),
                     "expected false 'maybe'": f"{expected:.2%}",
                     "measured": f"{(int(maybe.sum()) - sum(exact)) / windows.size:.2%}",
                     "windows 'maybe'": int(maybe.sum()), "true matches": sum(exact),
                     "documents it would drop": int(np.unique(owner[maybe]).size),
                     "documents that hold one": sum(count > 0 for count in exact)})
    return rows
