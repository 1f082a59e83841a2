"""What cleaning does to one text: normalisation, the key of a line for line-level dedup, and the
exact-duplicate digest. Pure functions, the same in every process and on every machine.

Normalisation is deliberately small, so that it never changes what code means:
- Unicode NFC (the same letter typed two ways becomes one sequence of code points);
- line ends: `\\r\\n` and a bare `\\r` become `\\n`;
- control characters are dropped, except tab and newline (a form feed or a stray `\\x00` carries no text);
- a line of spaces and tabs only becomes empty, and more than two empty lines in a row become two
  (PEP 8's two blank lines between definitions stay).
Leading whitespace is never touched: indentation is code's syntax.
"""

from __future__ import annotations

import re
import unicodedata

import xxhash

CONTROL_CHARACTERS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # \t (\x09) and \n (\x0a) are kept
WHITESPACE_ONLY_LINE = re.compile(r"^[ \t]+$", re.MULTILINE)
MORE_THAN_TWO_EMPTY_LINES = re.compile(r"\n{4,}")
LINE_MIN_CHARS = 30  # shorter lines ("return x", "Exeunt.") repeat by nature, not as boilerplate


def normalize_text(text: str) -> str:
    """The text after the normalisation described in the module docstring."""
    text = unicodedata.normalize("NFC", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = CONTROL_CHARACTERS.sub("", text)
    text = WHITESPACE_ONLY_LINE.sub("", text)
    return MORE_THAN_TWO_EMPTY_LINES.sub("\n\n\n", text)


def is_empty(text: str) -> bool:
    """No visible character left."""
    return not text.strip()


def exact_digest(text: str) -> bytes:
    """A stable 128-bit digest of the text (xxh3, unseeded): the same on every run and machine, unlike
    Python's `hash()`, which is salted per process."""
    return xxhash.xxh3_128_digest(text.encode("utf-8"))


def line_key(line: str, min_chars: int = LINE_MIN_CHARS) -> int | None:
    """The 64-bit key of a line for line-level dedup (its text without surrounding whitespace), or None
    for a line too short to count: short lines repeat because they are short, not because they are
    boilerplate."""
    stripped = line.strip()
    if len(stripped) < min_chars:
        return None
    return xxhash.xxh3_64_intdigest(stripped.encode("utf-8"))


def line_keys(text: str, min_chars: int = LINE_MIN_CHARS) -> set[int]:
    """The keys of a text's distinct countable lines (a line repeated inside one document counts once)."""
    keys = {line_key(line, min_chars) for line in text.split("\n")}
    keys.discard(None)
    return keys


def drop_lines(text: str, repeated: set[int] | frozenset[int], min_chars: int = LINE_MIN_CHARS,
               wanted: frozenset[int] = frozenset(), found: dict | None = None) -> tuple[str, int]:
    """The text without the lines whose key is in `repeated`, and how many lines went. On the way, the
    first text seen of each line whose key is in `wanted` goes into `found` (for a report)."""
    if not repeated and not wanted:
        return text, 0
    kept, dropped = [], 0
    for line in text.split("\n"):
        key = line_key(line, min_chars)
        if key is not None and key in wanted and key not in found:
            found[key] = line.strip()
        if key is not None and key in repeated:
            dropped += 1
        else:
            kept.append(line)
    return ("\n".join(kept), dropped) if dropped else (text, 0)
