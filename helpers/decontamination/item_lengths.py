"""The evaluation items' lengths against the n-gram, said before a scan drops anything.

An item shorter than the n-gram is matched whole, and a pattern of a few words matches ordinary text: a one-word
item (`the`) or `--ngram 1` drops nearly every document of a corpus. So, per evaluation set: items with no word
(empty, or punctuation only) are counted, since they match nothing; items shorter than the n-gram are counted; and
patterns under `SHORTEST_SAFE` words (a short n-gram, or a short item matched whole) are refused unless asked for."""

from __future__ import annotations

import json

from ..common.errors import UserError
from .evals import EvalSet
from .lengths import SHORTEST_SAFE

ALLOW = "--allow-short-ngrams"
SHOWN, SHOWN_CHARACTERS = 3, 40  # items named in a line, at most, and the characters of each


def check_item_lengths(evals: list[EvalSet], words: list[int], n: int, allow_short: bool = False) -> list[str]:
    """The warnings (one line each, with counts) for `evals` whose items have `words` words each (in order), with
    n-grams of `n` words; a `UserError` for a set with no word at all, and, unless `allow_short`, for patterns
    shorter than `SHORTEST_SAFE` words."""
    warnings = []
    if n < SHORTEST_SAFE:
        if not allow_short:
            raise UserError(f"--ngram {n}: an n-gram of fewer than {SHORTEST_SAFE} words matches ordinary text, so "
                            f"clean documents would go; fix: --ngram {SHORTEST_SAFE} or more (13 is GPT-3's), or add "
                            f"{ALLOW} to match {n}-word n-grams anyway")
        warnings.append(f"warning: --ngram {n}: n-grams of fewer than {SHORTEST_SAFE} words match ordinary text; "
                        f"they are matched as asked ({ALLOW})")
    at = 0
    for each in evals:
        counts = words[at:at + len(each.texts)]
        at += len(each.texts)
        warnings += _set_lines(each, counts, n, allow_short)
    return warnings


def _set_lines(each: EvalSet, counts: list[int], n: int, allow_short: bool) -> list[str]:
    """One set's warnings; refused in one line where it protects nothing, or matches short items whole."""
    where = f"--decontaminate {each.name}"
    total = len(counts)
    empty = [k for k, count in enumerate(counts) if count == 0]
    short = [k for k, count in enumerate(counts) if 0 < count < n]
    unsafe = [k for k in short if counts[k] < SHORTEST_SAFE]
    if len(empty) == total:
        raise UserError(f"{where}: none of its {total:,} items has a word (each is empty or punctuation only); fix: "
                        "name the fields that hold the items' text with --eval-keys")
    if unsafe and not allow_short:
        raise UserError(f"{where}: {_of(len(unsafe), total)} fewer than {SHORTEST_SAFE} words "
                        f"({_named(each, unsafe)}), and an item shorter than the n-gram is matched whole, so it "
                        f"matches ordinary text; fix: take those items out, or add {ALLOW} to match them whole anyway")
    lines = []
    if empty:
        lines.append(f"warning: {where}: {_of(len(empty), total)} no word (empty or punctuation only: "
                     f"{_named(each, empty)}); an item with no word matches nothing")
    if short:
        lines.append(f"warning: {where}: {_of(len(short), total)} fewer than {n} words (the shortest "
                     f"{min(counts[k] for k in short)}; {_named(each, short)}), each matched whole as one n-gram"
                     + (f"; under {SHORTEST_SAFE} words that matches ordinary text ({ALLOW})" if unsafe else ""))
    return lines


def _of(count: int, total: int) -> str:
    """"1 of 3 items has", "2 of 3 items have"."""
    return f"{count:,} of {total:,} item{'' if total == 1 else 's'} {'has' if count == 1 else 'have'}"


def _named(each: EvalSet, positions: list[int]) -> str:
    """The first few of `positions` by their item's name and text, and how many more."""
    shown = ", ".join(f"{each.names[k]} {json.dumps(_cut(each.texts[k]), ensure_ascii=False)}"
                      for k in positions[:SHOWN])
    return shown + (f" and {len(positions) - SHOWN:,} more" if len(positions) > SHOWN else "")


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARACTERS else text[:SHOWN_CHARACTERS] + "..."
