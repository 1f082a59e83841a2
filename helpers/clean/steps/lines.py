"""`--lines`: each document's distinct countable lines (30 characters or more) counted over the documents still kept;
a line held by `--line-min-count` documents or more is boilerplate, and from then on every occurrence goes
(`RepeatedLines`), a document left with nothing going too. Workers send back counts, never texts."""

from __future__ import annotations

import numpy as np

from ...common.errors import UserError
from ..text.text_keys import drop_lines, is_empty, line_keys
from .base import Collector, Dedup, Formatter, Option

TOP_LINES = 10  # the most repeated lines the report shows


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


class _LineCounts(Collector):
    def __init__(self, min_chars: int):
        self.min_chars, self.keys = min_chars, []

    def add(self, position: int, text: str) -> None:
        self.keys.extend(line_keys(text, self.min_chars))

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        unique, counts = np.unique(np.array(self.keys, dtype=np.uint64), return_counts=True)
        return unique, counts.astype(np.int64)


class LineDedup(Dedup):
    name = "lines"
    options = (
        Option("lines", False, "drop lines repeated in --line-min-count documents or more",
               cli={"action": "store_true"}, reported=False),
        Option("line_min_count", 10, "documents a line must be in to be dropped (--lines; default 10)",
               cli={"type": int}),
        Option("line_min_chars", 30, "shorter lines are never dropped (--lines; default 30)", cli={"type": int}),
    )

    @classmethod
    def read(cls, values: dict) -> dict:
        if values["line_min_count"] < 2:
            raise UserError(f"--line-min-count {values['line_min_count']}: a line is repeated from 2 documents on; "
                            "fix: pass 2 or more")
        return values

    @classmethod
    def build(cls, values: dict) -> list:
        return [cls(values["line_min_count"], values["line_min_chars"])]

    def __init__(self, min_count: int, min_chars: int):
        self.min_count, self.min_chars = min_count, min_chars
        self.counted: dict | None = None

    def run(self, stage) -> None:
        found = stage.collect("lines", [_LineCounts(self.min_chars) for _ in stage.tasks])
        keys = np.concatenate([keys for keys, _ in found])
        counts = np.concatenate([counts for _, counts in found])
        unique, where = np.unique(keys, return_inverse=True)
        totals = np.bincount(where.ravel(), weights=counts, minlength=len(unique)).astype(np.int64)
        repeated = frozenset(unique[totals >= self.min_count].tolist())
        order = np.argsort(-totals, kind="stable")[:TOP_LINES]
        self.top = {int(unique[i]): int(totals[i]) for i in order}
        self.counted = {"min_count": self.min_count, "min_chars": self.min_chars,
                        "distinct_lines_counted": int(len(unique)), "repeated_lines": len(repeated)}
        self.then = RepeatedLines(repeated, self.min_chars, wanted=frozenset(self.top))

    def report(self, stage) -> dict:
        """The counts, the most repeated lines with their text, and the lines dropped in all."""
        notes = stage.notes.get(self.name, {})
        texts = notes.get("texts", {})
        return {**self.counted, "top": [{"line": texts.get(key, ""), "documents": count,
                                         "removed": count >= self.min_count} for key, count in self.top.items()],
                "lines_dropped": int(notes.get("lines_dropped", 0))}
