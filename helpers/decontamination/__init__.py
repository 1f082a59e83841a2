"""Exact decontamination: an evaluation set's n-grams found in text (`TextIndex`, GPT-3's words), in a finished
`.bin/.idx` and in live batches (`TokenIndex`, the items' tokens), each candidate verified against the item itself.

- `helpers.decontamination.evals`: the evaluation sets, read offline (a JSONL or Parquet file, or `humaneval`);
- `helpers.decontamination.words`: GPT-3's words; `helpers.decontamination.spans`: GPT-3's span removal;
- `helpers.clean --decontaminate EVAL`, `helpers.check PREFIX --decontaminate EVAL` and `helpers.audit`'s
  `eval-overlap` use them.
"""

from .evals import EvalSet, load_evals
from .lengths import TEXT_NGRAM, TOKEN_NGRAM

__all__ = ["TEXT_NGRAM", "TOKEN_NGRAM", "EvalSet", "Match", "TextIndex", "TokenIndex", "load_evals"]


def __getattr__(name: str):
    """The indexes on first use: they load numba, which reading an evaluation set does not need."""
    if name in ("Match", "TextIndex"):
        from . import text_index

        return getattr(text_index, name)
    if name == "TokenIndex":
        from .token_index import TokenIndex

        return TokenIndex
    raise AttributeError(f"module 'helpers.decontamination' has no attribute {name!r}")
