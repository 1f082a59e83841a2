"""`--normalize`: Unicode NFC, line ends, control characters, runs of empty lines (`helpers.clean.text.text_keys`;
indentation is never touched); a document left with no visible text goes."""

from __future__ import annotations

from ..text.text_keys import normalize_text
from .base import Formatter, Option


class Normalize(Formatter):
    name = "normalize"
    drops_empty = True
    empty_reason = "no visible text left after normalising"
    options = (Option("normalize", False, "NFC, line ends, control characters, empty-line runs",
                      cli={"action": "store_true"}, reported=False),)

    def format(self, text: str, notes: dict) -> str:
        return normalize_text(text)
