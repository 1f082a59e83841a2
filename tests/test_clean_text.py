"""Normalisation and line keys of `helpers.clean.text.text_keys`, and the shingles of `helpers.clean.text.shingles`."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.clean.text import shingles
from helpers.clean.text.text_keys import drop_lines, exact_digest, line_key, line_keys, normalize_text

CODE = 'import os\n\n\nclass A:\n    """Doc."""\n\n    def f(self):\n\treturn 1\n'


def test_normalize_composes_unicode_and_line_ends():
    assert normalize_text("cafe\u0301\r\nna\u00efve\rend") == "caf\u00e9\nna\u00efve\nend"


def test_normalize_drops_control_characters_but_keeps_tab_and_newline():
    assert normalize_text("a\x00b\x0cc\x1bd\x7fe\x85f\tg\nh") == "abcdef\tg\nh"


def test_normalize_never_touches_indentation_or_pep8_blank_lines():
    assert normalize_text(CODE) == CODE


def test_normalize_empties_whitespace_lines_and_shortens_long_runs():
    assert normalize_text("a\n   \n\t\nb") == "a\n\n\nb"
    assert normalize_text("a\n\n\n\n\n\nb") == "a\n\n\nb"


def test_normalize_is_idempotent():
    text = "x\r\n\r\n\r\n\r\n  \ty\u0065\u0301\x01"
    assert normalize_text(normalize_text(text)) == normalize_text(text)


def test_exact_digest_is_stable_and_128_bits():
    assert exact_digest("hello") == exact_digest("hello")
    assert len(exact_digest("hello")) == 16
    assert exact_digest("hello").hex() == "b5e9c1ad071b3e7fc779cfaa5e523818"  # xxh3-128 of b"hello"


def test_line_keys_skip_short_lines_and_ignore_surrounding_whitespace():
    long_line = "# Licensed under the Apache License, Version 2.0"
    assert line_key("return x") is None
    assert line_key("   " + long_line + "  ") == line_key(long_line)
    assert line_keys(f"{long_line}\nshort\n{long_line}") == {line_key(long_line)}


def test_drop_lines_removes_every_occurrence_and_counts_them():
    header = "# Copyright (c) the authors, all rights reserved."
    text = f"{header}\nbody line\n{header}"
    kept, dropped = drop_lines(text, frozenset({line_key(header)}))
    assert (kept, dropped) == ("body line", 2)
    assert drop_lines(text, frozenset()) == (text, 0)


def _reference_shingles(text: str, n: int) -> set[tuple[bytes, ...]]:
    words = [w for w in re.split(rb"[\x00-\x20]+", text.lower().encode()) if w]
    if not words:
        return set()
    if len(words) < n:
        return {tuple(words)}
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


TEXTS = st.lists(st.text(alphabet="ab cé\n\t.", max_size=60), min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(TEXTS, st.integers(1, 4))
def test_shingle_hashes_match_word_ngrams(texts, n):
    flat, offsets = shingles.shingle_hashes(texts, n)
    for index, text in enumerate(texts):
        mine = flat[int(offsets[index]):int(offsets[index + 1])]
        reference = _reference_shingles(text, n)
        assert len(set(mine.tolist())) == len(reference)


@settings(max_examples=60, deadline=None)
@given(TEXTS, TEXTS, st.integers(1, 3))
def test_exact_jaccard_matches_reference(first, second, n):
    a, b = " ".join(first), " ".join(second)
    ra, rb = _reference_shingles(a, n), _reference_shingles(b, n)
    expected = len(ra & rb) / len(ra | rb) if ra | rb else 1.0
    assert shingles.exact_jaccard(a, b, n) == expected


MASK = (1 << 64) - 1


def _mix(x: int) -> int:
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def _reference_hashes(text: str, n: int) -> list[int]:
    """The shingle hashes the module docstring defines, one word and one chunk at a time in Python integers."""
    words = []
    for word in (w for w in re.split(rb"[\x00-\x20]+", text.lower().encode()) if w):
        state, full = 0xCBF29CE484222325, len(word) // 8
        for k in range(full):
            state = ((state ^ int.from_bytes(word[8 * k:8 * k + 8], "little")) * 0x100000001B3) & MASK
            state ^= state >> 32
        tail = int.from_bytes(word[8 * full:], "little")
        words.append(_mix(state ^ tail ^ ((len(word) * 0x9E3779B97F4A7C15) & MASK)))
    factors = [_mix(j + 0x9E3779B97F4A7C15) | 1 for j in range(n)]
    windows = [words[i:i + n] for i in range(len(words) - n + 1)] if len(words) >= n else [words] if words else []
    return [_mix(sum(w * f for w, f in zip(window, factors)) & MASK) for window in windows]


LONG_WORDS = st.lists(st.sampled_from(["a", "bé", "x" * 8, "y" * 9, "z" * 64, "w" * 65, "v" * 200, "\t", "\n ", "\x01"]),
                      max_size=40).map("".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(TEXTS.map(" ".join), LONG_WORDS), min_size=1, max_size=12), st.integers(1, 5))
def test_shingle_hashes_are_the_documented_hash(texts, n):
    flat, offsets = shingles.shingle_hashes(texts, n)
    for index, text in enumerate(texts):
        assert flat[int(offsets[index]):int(offsets[index + 1])].tolist() == _reference_hashes(text, n)


def test_batches_do_not_change_shingles(monkeypatch):
    texts = [f"document {i} " + "word " * (i % 17) + "end" for i in range(300)]
    whole = shingles.shingle_hashes(texts, 3)
    monkeypatch.setattr(shingles, "BATCH_BYTES", 64)
    cut = shingles.shingle_hashes(texts, 3)
    assert np.array_equal(whole[0], cut[0]) and np.array_equal(whole[1], cut[1])


def test_signatures_of_identical_texts_agree_and_empty_ones_have_no_shingles():
    rows, counts = shingles.signatures(["a b c d e f", "a b c d e f", ""], n=2, num_perm=64)
    assert rows.shape == (3, 64) and rows.dtype == np.uint32
    assert np.array_equal(rows[0], rows[1])
    assert counts.tolist() == [5, 5, 0]
