"""`helpers.check PREFIX --decontaminate EVAL`: an evaluation set's token n-grams found in a finished `.bin/.idx`
(`helpers.decontamination.token_index`: each item encoded alone with the data's tokenizer, every match checked token
for token, none across a document's end). What a token match can miss is said there; `helpers.clean
--decontaminate` on the text before it was tokenized is the exact check."""

from __future__ import annotations

import numpy as np

from ..decontamination.evals import EvalSet, flat_items

LISTED = 20  # matches listed under the checks, at most


def eval_overlap(ds, tokens: np.ndarray, tokenizer, *, evals: list[EvalSet], ngram: int, report) -> list[str]:
    """Add the check to `report`; the lines that list where the first matches are (sequence, tokens, item), the last
    saying how many more there are when the list is cut."""
    from ..decontamination.token_index import TokenIndex  # numba, loaded only when asked for

    names, texts = flat_items(evals)
    index = TokenIndex.encoded(texts, tokenizer, ngram)
    starts = np.asarray(ds.sequence_pointers, np.int64) // ds.dtype.itemsize
    matches = index.matches(tokens, starts)
    listed, seen = [], set()
    for match in matches:
        sequence = int(np.searchsorted(starts, match.start, side="right")) - 1
        if (sequence, match.item) in seen:
            continue
        seen.add((sequence, match.item))
        if len(listed) < LISTED:
            offset = match.start - int(starts[sequence])
            text = tokenizer.decode(tokens[match.start:match.end].tolist())
            listed.append(f"sequence {sequence:,}, tokens {offset:,}-{offset + match.end - match.start:,}: "
                          f"{names[match.item]} {text!r}")
    if len(seen) > LISTED:
        listed.append(f"... the first {LISTED} of {len(seen):,} (sequence, item) pairs listed; "
                      f"{len(seen) - LISTED:,} more not shown")
    benchmarks = ", ".join(each.name for each in evals)
    sequences, items = len({sequence for sequence, _ in seen}), len({item for _, item in seen})
    report.add(f"no {benchmarks} n-gram", not matches,
               f"no window of {ngram} tokens equals one of the {index.patterns:,} of {len(names):,} items, each "
               f"encoded alone by {tokenizer.name} (a token match misses changed case or spacing: the text check "
               "helpers.clean --decontaminate is exact)" if not matches else
               f"{sequences:,} sequences hold {ngram}-token n-grams of {items:,} items ({len(matches):,} windows), "
               "listed below; fix: python -m helpers.clean --decontaminate on the text, then preprocess again")
    return listed
