"""The check after a `your-turn` cell: the learner's answer against what `helpers` computes, in one line.

A `your-turn` cell ships as a skeleton that returns `None`, so a headless run of the notebook stays green and
says "not yet"; once the learner writes the piece, the check says `pass` or where the two first differ.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def first_difference(yours: Any, expected: Any, where: str = "") -> str | None:
    """Where `yours` first differs from `expected` (arrays, sequences, mappings, numbers), or None when equal."""
    if isinstance(yours, range):  # a natural answer for a run of indices
        yours = list(yours)
    if isinstance(expected, np.ndarray) or isinstance(yours, np.ndarray):
        yours_array, expected_array = np.asarray(yours), np.asarray(expected)
        if yours_array.shape != expected_array.shape:
            return f"{where or 'the array'} has shape {yours_array.shape}, expected {expected_array.shape}"
        unequal = np.flatnonzero(yours_array.ravel() != expected_array.ravel())
        if unequal.size:
            at = np.unravel_index(unequal[0], expected_array.shape)
            at = at[0] if len(at) == 1 else at
            return (f"{where}[{at}] is {yours_array[at].item()!r}, expected {expected_array[at].item()!r} "
                    f"({unequal.size:,} of {expected_array.size:,} values differ)")
        return None
    if isinstance(expected, dict):
        if not isinstance(yours, dict) or set(yours) != set(expected):
            keys = sorted(yours) if isinstance(yours, dict) else type(yours).__name__
            return f"{where or 'the answer'} has keys {keys}, expected {sorted(expected)}"
        for key in expected:
            found = first_difference(yours[key], expected[key], f"{where}[{key!r}]")
            if found:
                return found
        return None
    if isinstance(expected, (list, tuple)):
        if not isinstance(yours, (list, tuple, np.ndarray)) or len(yours) != len(expected):
            size = len(yours) if hasattr(yours, "__len__") else type(yours).__name__
            return f"{where or 'the answer'} has {size} items, expected {len(expected)}"
        for k, (mine, theirs) in enumerate(zip(yours, expected)):
            found = first_difference(mine, theirs, f"{where}[{k}]")
            if found:
                return found
        return None
    if isinstance(expected, float) and isinstance(yours, (int, float)):
        equal = math.isclose(yours, expected, rel_tol=1e-6, abs_tol=1e-9)
    else:
        equal = yours == expected
    return None if equal else f"{where or 'the answer'} is {yours!r}, expected {expected!r}"


def close_difference(yours: Any, expected: Any, tolerance: float) -> str | None:
    """Where floating-point `yours` first strays from `expected` by more than `tolerance` (relative), or None."""
    yours_array, expected_array = np.asarray(yours, dtype=float), np.asarray(expected, dtype=float)
    if yours_array.shape != expected_array.shape:
        return f"the answer has shape {yours_array.shape}, expected {expected_array.shape}"
    far = np.flatnonzero(~np.isclose(yours_array, expected_array, rtol=tolerance, atol=0.0))
    if far.size:
        at = far[0]
        return (f"[{at}] is {yours_array.ravel()[at]:.6g}, expected {expected_array.ravel()[at]:.6g} "
                f"({far.size:,} of {expected_array.size:,} values differ by more than {tolerance:g})")
    return None


def check(what: str, yours: Any, expected: Any, solution: str, tolerance: float | None = None) -> bool:
    """Print `pass`, `not yet` (the shipped skeleton's None) or the first difference; True only on a pass.

    `solution` names where the worked answer is, e.g. "solutions/03_solutions.ipynb"; `tolerance` (relative)
    compares numbers computed in floating point, where another order of the same operations differs a little."""
    if yours is None:
        print(f"not yet: {what} still returns None. Write it in the cell above and run both cells "
              f"(a worked answer is in {solution}).")
        return False
    found = first_difference(yours, expected) if tolerance is None else close_difference(yours, expected, tolerance)
    if found:
        print(f"differs: {what}: {found}")
        return False
    print(f"pass: {what} matches helpers")
    return True
