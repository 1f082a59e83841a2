"""Formatters of `helpers.clean`: text in, text out (`helpers.clean.steps.base`), one class each.

- `Normalize` (`--normalize`): Unicode NFC, line ends, control characters, runs of empty lines
  (`helpers.clean.text.text_keys`); a document left with no visible text goes;
- `RepeatedLines` (`--lines`, once the lines held by enough documents are known: `helpers.clean.steps.exact`): those
  lines dropped; a document left with nothing goes.
"""

from __future__ import annotations

from ..steps.base import Formatter
from ..text.text_keys import drop_lines, is_empty, normalize_text


class Normalize(Formatter):
    name = "normalize"
    drops_empty = True
    empty_reason = "no visible text left after normalising"

    def format(self, text: str, notes: dict) -> str:
        return normalize_text(text)


class RepeatedLines(Formatter):
    """Drops the lines whose key is in `repeated`; notes how many went, and the text of the lines in `wanted` (the
    most repeated, for the report)."""

    name = "lines"
    drops_empty = True
    empty_reason = "nothing left once repeated lines went"

    def __init__(self, repeated: frozenset, min_chars: int, wanted: frozenset = frozenset()):
        self.repeated, self.min_chars, self.wanted = repeated, min_chars, wanted

    def format(self, text: str, notes: dict) -> str:
        new, dropped = drop_lines(text=text, repeated=self.repeated, min_chars=self.min_chars, wanted=self.wanted,
                                  found=notes.setdefault("texts", {}))
        notes["lines_dropped"] = notes.get("lines_dropped", 0) + dropped
        return new

    def emptied(self, before: str, after: str) -> bool:
        """Only a document that lost lines goes (one empty to begin with is left to `--normalize`)."""
        return after != before and is_empty(after)
