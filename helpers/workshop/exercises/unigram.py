"""Notebook 06's your-turn: the unigram entropy of the tokens a run is scored on, in nats.

The check hands the learner's function two inputs: every training target, and the first few hundred of them. In
the short one most of the vocabulary never occurs, so an answer that lets an unseen id add 0 · ln 0 = nan, or that
spreads probability over all V ids, fails there even where the long input would let it pass.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from ...audit.statistics import unigram_entropy

FIRST_TARGETS = 500  # the short input: far fewer tokens than ids, so most counts are 0


def scored_targets(loader) -> np.ndarray:
    """Every label of every batch of `loader`, the ignored ones (-100) left out: what the run is scored on."""
    labels = torch.cat([loader.batch_at(step)["labels"].flatten() for step in range(len(loader))])
    return labels[labels >= 0].numpy()


def check_inputs(train_ids: np.ndarray) -> dict[str, np.ndarray]:
    """The ids the check hands the learner's function, by name."""
    return {"all training targets": train_ids, f"the first {FIRST_TARGETS} targets": train_ids[:FIRST_TARGETS]}


def expected_entropies(inputs: dict[str, np.ndarray], vocab_size: int) -> dict[str, float]:
    return {name: unigram_entropy(np.bincount(ids, minlength=vocab_size)) for name, ids in inputs.items()}


def your_entropies(entropy: Callable[[np.ndarray, int], Any], inputs: dict[str, np.ndarray],
                   vocab_size: int) -> dict[str, Any] | None:
    """`entropy(ids, vocab_size)` on each input; None while it is the shipped skeleton (it returns None)."""
    found = {name: entropy(ids, vocab_size) for name, ids in inputs.items()}
    return None if any(value is None for value in found.values()) else found
