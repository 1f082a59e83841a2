"""A cleaning step of one's own, in one file: documents whose non-empty lines are short on average (verse, terse
code, lists of names) go. Registered when the module is imported, so the command line takes its flag, removed.jsonl
names it with its reason, and report.json carries its section, on either engine:

    PYTHONPATH=examples python -m helpers.clean --steps-from clean_short_lines \\
        --input data/raw/docs.jsonl --output-dir data/clean-short --short-lines 45 --exact
"""

from __future__ import annotations

from helpers.clean import Filter, Option, register_step


class ShortLines(Filter):
    """Drops a document whose non-empty lines hold fewer than `limit` characters on average."""

    name = "short_lines"
    options = (Option("short_lines", None, "drop documents whose non-empty lines average fewer characters than this",
                      cli={"type": float, "metavar": "CHARACTERS"}),)

    @classmethod
    def build(cls, values: dict) -> list:
        return [cls(values["short_lines"])]

    def __init__(self, limit: float):
        self.limit = limit

    def reason(self, text: str) -> str | None:
        lines = [line for line in text.split("\n") if line.strip()]
        mean = sum(map(len, lines)) / max(len(lines), 1)
        return f"mean line length {mean:.1f} < {self.limit:g}" if mean < self.limit else None

    def apply(self, text: str, notes: dict) -> tuple[str, str | None]:
        reason = self.reason(text)
        notes["documents_dropped"] = notes.get("documents_dropped", 0) + (reason is not None)
        return text, reason

    def report(self, stage) -> dict:
        """The limit, and how many documents fell under it."""
        return {"limit": self.limit, **stage.notes.get(self.name, {})}


register_step(ShortLines, before="exact")
