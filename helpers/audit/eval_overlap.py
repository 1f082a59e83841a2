"""`eval-overlap`: a batch that holds an n-gram of an evaluation item, found as the model is fed
(`helpers.decontamination.token_index`: each item encoded alone with the run's tokenizer, every match checked token
for token). The index is built once, when the auditor is made; each batch is then one compiled scan of its ids.
No window runs from one row into the next, nor across an EOD (with `eod_id`): two documents packed into one row are
looked at apart, as the text of each was."""

from __future__ import annotations

import numpy as np

from ..common.errors import UserError
from ..decontamination.evals import EvalSet, flat_items
from ..decontamination.lengths import TOKEN_NGRAM


class EvalOverlap:
    """The n-grams of `evals` (`EvalSet`s) as `tokenizer` encodes them, `ngram` tokens each, for `find(ids)`."""

    def __init__(self, evals: list[EvalSet], tokenizer, ngram: int = TOKEN_NGRAM, eod_id: int | None = None):
        from ..decontamination.token_index import (
            TokenIndex,  # numba, loaded only when asked for
        )

        self.names, texts = flat_items(evals)
        self.index = TokenIndex.encoded(texts, tokenizer, ngram)
        self.tokenizer, self.ngram = tokenizer, ngram
        self.eod_id = tokenizer.eod_id if eod_id is None else eod_id
        self.sharing: dict[bytes, int] = {}

    def find(self, ids: np.ndarray) -> str | None:
        """The finding's line for the first window of a batch's ids (`[rows, length]`) that is an item's n-gram,
        with how many rows hold one; None when none does."""
        rows, length = ids.shape
        flat = np.ascontiguousarray(ids).reshape(-1)
        after_eod = np.flatnonzero(flat == self.eod_id) + 1
        starts = np.unique(np.concatenate([np.arange(rows) * length, after_eod[after_eod < flat.size]]))
        matches = self.index.matches(flat, starts)
        if not matches:
            return None
        first = matches[0]
        row, offset = divmod(first.start, length)
        held = len({match.start // length for match in matches})
        text = self.tokenizer.decode(flat[first.start:first.end].tolist())
        sharing = self.items_holding(flat[first.start:first.end])
        where = (f"row {row}, tokens {offset}-{offset + first.end - first.start} hold an n-gram of "
                 f"{self.names[first.item]} ({self.ngram} tokens: {text[:80]!r}); {held} of {rows} rows hold one")
        if sharing > 1:
            return (f"{where}; this n-gram is shared by {sharing} of the {len(self.names):,} evaluation items: text "
                    "that many items share is boilerplate (a licence header, a template, a prompt's framing), found in "
                    "the training data as in any document that carries it, rather than one leaked item; fix: if the "
                    "evaluation should not reward it, take the shared text out of the items, or remove it from the "
                    "training text with python -m helpers.clean --decontaminate")
        return (f"{where}; fix: the training data holds an evaluation item (this n-gram is in 1 of the "
                f"{len(self.names):,} items, shared with the training data: a leak, or the same document on both "
                "sides of a split), so its score would mean nothing: python -m helpers.clean --decontaminate on the "
                "text, then preprocess again")

    def items_holding(self, window: np.ndarray) -> int:
        """How many evaluation items hold `window`'s tokens in a row (kept per window: boilerplate comes back)."""
        key = window.tobytes()
        if key not in self.sharing:
            size = window.size
            self.sharing[key] = sum(
                1 for item in self.index.items if item.size >= size and bool(
                    (np.lib.stride_tricks.sliding_window_view(item, size) == window).all(axis=1).any()))
        return self.sharing[key]


def eval_overlap(evals: list | None, tokenizer, ngram: int | None = None, eod_id: int | None = None):
    """An `EvalOverlap` for `evals`, or None without any; refused in one line without the tokenizer to encode them."""
    if not evals:
        return None
    if tokenizer is None:
        raise UserError("evals given without the tokenizer the run's ids come from; fix: pass tokenizer=, e.g. "
                        "load_tokenizer('llama3') (--tokenizer NAME on the command line)")
    return EvalOverlap(evals, tokenizer, TOKEN_NGRAM if ngram is None else ngram, eod_id)
