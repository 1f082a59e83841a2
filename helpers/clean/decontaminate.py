"""`--decontaminate EVAL...`: documents that hold an evaluation item's n-gram, found exactly
(`helpers.decontamination.text_index`: GPT-3's words, every candidate checked word for word).

- `--mode drop` (the default): the document goes; its removal names the benchmark, the item and the matching text.
- `--mode gpt3`: the matching spans go with 200 characters either side, the pieces left of 200 characters or more are
  kept, joined by a newline; a document cut into more than ten pieces, or left with none, goes
  (`helpers.decontamination.spans`).

The report counts, per benchmark and item, the documents that held one of its n-grams."""

from __future__ import annotations

import json

from ..common.errors import UserError
from ..decontamination.evals import EvalSet
from ..decontamination.lengths import TEXT_NGRAM
from ..decontamination.spans import MOST_PIECES, pieces
from ..decontamination.text_index import TextIndex
from .step import DocumentStep

MODES = ("drop", "gpt3")
SHOWN_CHARACTERS = 200  # of the matching text, in a removal's reason


class Decontaminate(DocumentStep):
    """Drop (or, in `gpt3` mode, cut) what holds an n-gram of `evals` (`EvalSet`s), `ngram` words long."""

    name = "decontaminate"
    counted = ("documents_matched", "spans_removed")

    def __init__(self, evals: list[EvalSet], ngram: int = TEXT_NGRAM, mode: str = "drop"):
        if mode not in MODES:
            raise ValueError(f"mode {mode!r}: one of {', '.join(MODES)}")
        self.mode, self.ngram = mode, ngram
        self.benchmarks = [each.name for each in evals]
        self.items = [(number, name) for number, each in enumerate(evals) for name in each.names]
        self.index = TextIndex([text for each in evals for text in each.texts], ngram)
        self.sizes = {each.name: len(each.texts) for each in evals}

    def named(self, item: int) -> str:
        """An item as a removal names it: its benchmark, then its own name."""
        benchmark, name = self.items[item]
        return f"{self.benchmarks[benchmark]} {name}"

    def apply(self, text: str, notes: dict) -> tuple[str, str | None]:
        matches = self.index.matches(text)  # all, so that the report credits every item a document holds
        if not matches:
            return text, None
        notes["documents_matched"] = notes.get("documents_matched", 0) + 1
        items = notes.setdefault("items", {})
        for item in dict.fromkeys(match.item for match in matches):
            items[self.named(item)] = items.get(self.named(item), 0) + 1
        first = matches[0]
        shown = json.dumps(text[first.start:first.end][:SHOWN_CHARACTERS], ensure_ascii=False)
        reason = f"{self.named(first.item)}: {shown}"
        if self.mode == "drop":
            return text, reason
        kept = pieces(text, [(match.start, match.end) for match in matches])
        notes["spans_removed"] = notes.get("spans_removed", 0) + len(matches)
        if not kept:
            return "", f"{reason} (no piece of 200 characters left)"
        if len(kept) > MOST_PIECES:
            return text, f"{reason} (cut into {len(kept)} pieces, more than {MOST_PIECES})"
        return "\n".join(kept), None

    def report(self, run) -> dict:
        """The settings, and per benchmark its items and the documents each item was found in."""
        found = run.notes.get(self.name, {}).get("items", {})
        benchmarks = {}
        for number, benchmark in enumerate(self.benchmarks):
            mine = {name: found[f"{benchmark} {name}"] for item, name in self.items
                    if item == number and f"{benchmark} {name}" in found}
            benchmarks[benchmark] = {"items": self.sizes[benchmark], "items_found": len(mine), "documents": mine}
        return {"mode": self.mode, "ngram": self.ngram, "patterns": self.index.patterns, "benchmarks": benchmarks}


def check_decontamination(evals: list | None, ngram: int, mode: str) -> None:
    """Refuse, in one line, settings that cannot decontaminate."""
    if evals is not None and not evals:
        raise UserError("--decontaminate: no evaluation set named; fix: name a JSONL or Parquet file, or humaneval")
    if ngram < 1:
        raise UserError(f"--ngram {ngram}: an n-gram has at least one word; fix: e.g. --ngram 13 (GPT-3's)")
    if mode not in MODES:
        raise UserError(f"--mode {mode}: not a mode; fix: one of {', '.join(MODES)}")
