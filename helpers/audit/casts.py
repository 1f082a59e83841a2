"""`ids-rounded`: token ids that went through a float type on their way to the embedding.

A float holds every integer only up to 2**p, p its significand's bits: bfloat16 up to 256, float16 up to 2,048,
float32 up to 2**24. Above that it keeps multiples of 2, 4, 8, ... (from 2**k up, multiples of 2**(k - p + 1)),
and float16 has nothing above 65,504 (an id there becomes infinity, and infinity cast back to int64 becomes
its smallest value). So ids cast to bfloat16 and back land on that grid: 66% of Llama 3's change, 75% of
Mistral's. Real ids fall off it often: an id from 512 up lies on bfloat16's grid one time in four at best, so
`EVIDENCE` distinct ids above the limit, all on the grid, are a cast (a chance of 4**-16 at most).
"""

from __future__ import annotations

import numpy as np

SIGNIFICAND = {"bfloat16": 8, "float16": 11, "float32": 24, "float64": 53}
FLOAT16_MAX = 65_504
EVIDENCE = 16  # distinct ids above a type's exact limit, all on its grid


def exact_limit(dtype: str) -> int:
    """The largest integer up to which `dtype` holds every integer."""
    return 1 << SIGNIFICAND[dtype]


def on_grid(ids: np.ndarray, dtype: str) -> np.ndarray:
    """For ids above `dtype`'s exact limit: whether each is a value that type holds."""
    bits = SIGNIFICAND[dtype]
    spacing = np.left_shift(np.int64(1), np.maximum(np.floor(np.log2(np.maximum(ids, 1))).astype(np.int64) - bits + 1,
                                                    0))
    return ids % spacing == 0


def handed_over_as_float(dtype: str, vocab_size: int) -> str | None:
    """The finding's line for ids handed over in a float type too narrow for the vocabulary, else None."""
    if dtype not in SIGNIFICAND or vocab_size <= exact_limit(dtype):
        return None
    return (f"ids handed over as {dtype}, which holds integers exactly only up to {exact_limit(dtype):,}"
            f"{_beyond(dtype)}: ids above it were rounded before the audit saw them; fix: keep token ids as "
            "int64 (torch.long) from the loader to the embedding; cast only the model's activations")


def _beyond(dtype: str) -> str:
    return f" (and nothing above {FLOAT16_MAX:,})" if dtype == "float16" else ""


class RoundingWatch:
    """Across a stream's batches: are the ids above bfloat16's (or float16's) exact limit all on its grid? The
    distinct such ids seen since the last one off the grid are kept, up to `EVIDENCE` per type."""

    def __init__(self):
        self.seen: dict[str, set[int]] = {"bfloat16": set(), "float16": set()}

    def look(self, ids: np.ndarray, vocab_size: int) -> str | None:
        """The finding's line once the evidence is in, else None."""
        inside = ids[(ids >= 0) & (ids < vocab_size)]
        for dtype, seen in self.seen.items():
            above = np.unique(inside[inside >= exact_limit(dtype)])
            if not above.size:
                continue
            if not on_grid(above, dtype).all():
                seen.clear()
                continue
            seen.update(above[:EVIDENCE].tolist())
            if len(seen) >= EVIDENCE:
                return self._line(ids, inside, dtype)
        return None

    @staticmethod
    def _line(ids: np.ndarray, inside: np.ndarray, dtype: str) -> str:
        limit = exact_limit(dtype)
        lost = int((ids == np.iinfo(np.int64).min).sum())
        infinite = f"; {lost:,} ids above {FLOAT16_MAX:,} became infinity, then {np.iinfo(np.int64).min}" if lost else ""
        return (f"every id above {limit:,} in the batch is a value {dtype} holds (its {int((inside >= limit).sum()):,} "
                f"such ids are multiples of 2, 4, 8, ... by size, as {dtype} rounds them; real ids fall off that grid)"
                f"{infinite}: the ids were cast to {dtype} and back, so the model reads other tokens than the text's; "
                "fix: keep token ids as int64 (torch.long) up to the embedding (an autocast or a .to(dtype) on the "
                "whole batch casts them too); cast only the model's activations")
