"""Notebook 09's your-turn: the equal pairs the audit counts in each window of a batch's rows."""

from __future__ import annotations

import numpy as np

from ...audit.statistics import row_windows, window_pairs


def batch_windows(input_ids) -> np.ndarray:
    """The windows the audit's per-row test reads in a batch's `input_ids` (rows × length, tensor or array)."""
    return row_windows(np.asarray(input_ids))


def expected_pairs(windows: np.ndarray) -> list[int]:
    """Equal pairs in each window, as the audit counts them: positions i < j holding the same id."""
    return window_pairs(windows).tolist()
