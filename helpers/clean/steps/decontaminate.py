"""`--decontaminate EVAL...`: documents that hold an evaluation item's n-gram, found exactly
(`helpers.decontamination.text_index`: GPT-3's words, every candidate checked word for word).

- `--mode drop` (the default): the document goes; its removal names the benchmark, the item and the matching text.
- `--mode gpt3`: the matching spans go with 200 characters either side, the pieces left of 200 characters or more are
  kept, joined by a newline; a document cut into more than ten pieces, or left with none, goes
  (`helpers.decontamination.spans`).

Items shorter than the n-gram, items with no word and n-grams short enough to match ordinary text are counted, and
refused or warned of before anything is scanned (`helpers.decontamination.item_lengths`). The report counts, per
benchmark and item, the documents that held one of its n-grams (a shared n-gram credits every item that has it), and
per input the regions cut from the documents kept."""

from __future__ import annotations

import json

from ...common.errors import UserError, say_on_stderr
from ...decontamination.evals import EvalSet, flat_items, load_evals
from ...decontamination.flags import eval_keys
from ...decontamination.item_lengths import check_item_lengths
from ...decontamination.lengths import TEXT_NGRAM
from ...decontamination.spans import MOST_PIECES, cuts, pieces
from ...decontamination.text_index import TextIndex
from .base import DocumentStep, Filter, Option, Step

MODES = ("drop", "gpt3")
SHOWN_CHARACTERS = 200  # of the matching text, in a removal's reason


class Decontamination(Step):
    """What both modes share: the index of `evals` (`EvalSet`s), `ngram` words an n-gram, the notes and the report;
    the settings of `--decontaminate`."""

    name = "decontaminate"
    counted = ("documents_matched", "spans_removed")  # per input: documents holding an n-gram, regions cut (gpt3)
    mode = ""
    options = (
        Option("decontaminate", None, "evaluation sets, JSONL or Parquet files or humaneval: documents holding their "
                                      "n-grams go", cli={"nargs": "+", "metavar": "EVAL"}),
        Option("eval_keys", None, "the evaluation items' fields to protect, comma-separated (default: a named set's "
                                  "own, else text)", cli={"metavar": "FIELDS"}),
        Option("decontaminate_ngram", TEXT_NGRAM, f"--decontaminate: words per n-gram (default {TEXT_NGRAM})",
               flag="--ngram", cli={"type": int}),
        Option("decontaminate_mode", "drop", "--decontaminate: drop a document that holds an n-gram (default), or cut "
                                             "the spans as GPT-3 did", flag="--mode", cli={"choices": MODES}),
        Option("allow_short_ngrams", False, "--decontaminate: match n-grams, or items matched whole, of fewer than 8 "
                                            "words (they match ordinary text) rather than refuse them",
               cli={"action": "store_true"}),
    )

    @classmethod
    def read(cls, values: dict) -> dict:
        check_decontamination(values["decontaminate"], values["decontaminate_ngram"], values["decontaminate_mode"])
        return {**values, "decontaminate": tuple(map(str, values["decontaminate"] or ())),
                "eval_keys": eval_keys(values["eval_keys"])}

    @classmethod
    def build(cls, values: dict) -> list:
        evals = load_evals(list(values["decontaminate"]), values["eval_keys"] or None)
        return [decontamination_step(evals, ngram=values["decontaminate_ngram"], mode=values["decontaminate_mode"],
                                     allow_short=values["allow_short_ngrams"])]

    @classmethod
    def shown(cls, values: dict) -> dict:
        return {**values, "decontaminate": list(values["decontaminate"]), "eval_keys": list(values["eval_keys"])}

    def __init__(self, evals: list[EvalSet], ngram: int = TEXT_NGRAM, allow_short: bool = False):
        self.ngram = ngram
        self.names, texts = flat_items(evals)
        self.index = TextIndex(texts, ngram)
        words = [len(each) for each in self.index.words]
        for line in check_item_lengths(evals, words, ngram, allow_short):
            say_on_stderr(line)
        self.benchmarks = [(each.name, each.names) for each in evals]
        self.lengths = {}  # per benchmark, its items' words
        for name, names in self.benchmarks:
            self.lengths[name], words = words[:len(names)], words[len(names):]

    def found(self, text: str, notes: dict):
        """Every match in `text` (all, so that the report credits every item a document holds), noted; with the
        reason that names the first, or None when there is none."""
        matches = self.index.matches(text)
        if not matches:
            return matches, None
        notes["documents_matched"] = notes.get("documents_matched", 0) + 1
        items = notes.setdefault("items", {})
        for name in dict.fromkeys(self.names[match.item] for match in matches):
            items[name] = items.get(name, 0) + 1
        first = matches[0]
        shown = json.dumps(text[first.start:first.end][:SHOWN_CHARACTERS], ensure_ascii=False)
        return matches, f"{self.names[first.item]}: {shown}"

    def report(self, run) -> dict:
        """The settings, and per benchmark its items and the documents each item was found in."""
        found = run.notes.get(self.name, {}).get("items", {})
        benchmarks = {}
        for benchmark, names in self.benchmarks:
            mine = {name: found[f"{benchmark} {name}"] for name in names if f"{benchmark} {name}" in found}
            lengths = self.lengths[benchmark]
            benchmarks[benchmark] = {"items": len(names), "items_found": len(mine),
                                     "items_without_words": sum(count == 0 for count in lengths),
                                     "items_shorter_than_ngram": sum(0 < count < self.ngram for count in lengths),
                                     "documents": mine}
        return {"mode": self.mode, "ngram": self.ngram, "patterns": self.index.patterns, "benchmarks": benchmarks}


class DropContaminated(Decontamination, Filter):
    """`--mode drop`: a filter, so a later pass of the run does not scan again what this one decided."""

    mode = "drop"

    def apply(self, text: str, notes: dict) -> tuple[str, str | None]:
        return text, self.found(text, notes)[1]


class CutContaminated(Decontamination, DocumentStep):
    """`--mode gpt3`: the matching spans cut out (`helpers.decontamination.spans`); it changes texts, so every pass
    applies it."""

    mode = "gpt3"

    def apply(self, text: str, notes: dict) -> tuple[str, str | None]:
        matches, reason = self.found(text, notes)
        if reason is None:
            return text, None
        spans = [(match.start, match.end) for match in matches]
        kept = pieces(text, spans)
        if not kept:
            return "", f"{reason} (no piece of 200 characters left)"
        if len(kept) > MOST_PIECES:
            return text, f"{reason} (cut into {len(kept)} pieces, more than {MOST_PIECES})"
        notes["spans_removed"] = notes.get("spans_removed", 0) + len(cuts(spans, len(text)))
        return "\n".join(kept), None


def decontamination_step(evals: list[EvalSet], ngram: int = TEXT_NGRAM, mode: str = "drop",
                         allow_short: bool = False) -> Decontamination:
    """The step for `mode` ("drop" or "gpt3"); `allow_short`: match patterns under 8 words (they match ordinary
    text) rather than refuse them."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: one of {', '.join(MODES)}")
    return (DropContaminated if mode == "drop" else CutContaminated)(evals, ngram, allow_short)


def check_decontamination(evals: list | None, ngram: int, mode: str) -> None:
    """Refuse, in one line, settings that cannot decontaminate."""
    if evals is not None and not evals:
        raise UserError("--decontaminate: no evaluation set named; fix: name a JSONL or Parquet file, or humaneval")
    if ngram < 1:
        raise UserError(f"--ngram {ngram}: an n-gram has at least one word; fix: e.g. --ngram 13 (GPT-3's)")
    if mode not in MODES:
        raise UserError(f"--mode {mode}: not a mode; fix: one of {', '.join(MODES)}")
