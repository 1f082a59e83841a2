"""GPT-3's words for n-gram decontamination, as lm-eval-harness's janitor keeps the rule: ASCII letters lowercased,
ASCII punctuation (`string.punctuation`) deleted, then the text split on whitespace (Python's `str.split`, so
Unicode spaces such as U+00A0 and U+3000 split too); a piece left with no character is not a word. Letters outside
ASCII keep their case, as in the janitor: `Ä` and `ä` are different words.

The same words come from the compiled scan (`helpers.decontamination.text_index`), which reads UTF-8 bytes; the
tests hold the two to each other on every code point."""

from __future__ import annotations

import string

_TABLE = str.maketrans(string.ascii_uppercase, string.ascii_lowercase, string.punctuation)


def normalized(text: str) -> str:
    """The text with ASCII letters lowercased and ASCII punctuation deleted."""
    return text.translate(_TABLE)


def gpt3_words(text: str) -> list[str]:
    """The words of `text` by GPT-3's rule."""
    return normalized(text).split()


def gpt3_word_spans(text: str) -> list[tuple[str, int, int]]:
    """Each word of `text` with where its piece starts and ends in `text` (characters, end exclusive): the spans a
    match is reported and removed by."""
    spans, position = [], 0
    for piece in text.split():
        start = text.index(piece, position)
        position = start + len(piece)
        word = normalized(piece)
        if word:
            spans.append((word, start, position))
    return spans
