"""04's your-turn, `blending_order`: Megatron's greedy blending index, on the notebook's weights and reversed."""

from __future__ import annotations

from typing import Sequence

from ...datasets.blending import blending_indices


def blending_cases(weights: Sequence[float], size: int) -> tuple[list[tuple[list[float], int]], list[tuple]]:
    """The check's inputs, [(weights, size), ...], and its expected [(dataset_index, dataset_sample_index), ...]:
    the blend's normalised weights, then the same weights reversed, so the heaviest source also comes last and a
    rule right only when it comes first fails."""
    inputs = [(list(weights), int(size)), (list(weights)[::-1], int(size))]
    return inputs, [blending_indices(*case) for case in inputs]
