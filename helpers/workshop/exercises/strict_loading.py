"""Notebook 00's your-turn: a loader of token ids that refuses what the silent fallback hides.

`outcomes(load, ...)` runs the learner's `load(path, n_tokens)` on three files (the real one, a missing one, one
too short) and says what it did with each; `expected_outcomes(real_ids)` is what a loader that stops on bad data
does. The short file is written here, so the check holds for any `n_tokens` of the notebook's parameters.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

AN_ERROR = "an error"
SHORT_TEXT = "To be, or not to be"  # one document of 19 bytes: 20 ids with its EOD, fewer than any n_tokens asked


def expected_outcomes(real_ids: Any) -> dict[str, Any]:
    """The real file's ids as the notebook's `load_tokens` reads them; an error for the other two files."""
    return {"real file": np.asarray(real_ids), "missing file": AN_ERROR, "file too short": AN_ERROR}


def outcomes(load: Callable[[Path, int], Any], real_path: str | os.PathLike, missing_path: str | os.PathLike,
             n_tokens: int) -> dict[str, Any] | None:
    """What `load(path, n_tokens)` gives for each file: its ids as an array, `AN_ERROR` when it raised, or a
    sentence naming what it returned instead. None while `load` is the shipped skeleton (it returns None)."""
    real = load(Path(real_path), n_tokens)
    if real is None:
        return None
    found: dict[str, Any] = {"real file": _as_ids(real)}
    with tempfile.TemporaryDirectory(prefix="short_corpus_") as folder:
        short_path = Path(folder) / "short.jsonl"
        short_path.write_text(json.dumps({"text": SHORT_TEXT, "id": "short-0"}) + "\n", encoding="utf-8")
        for case, path in (("missing file", Path(missing_path)), ("file too short", short_path)):
            try:
                ids = load(path, n_tokens)
            except Exception:  # any error stops the run: that is the point
                found[case] = AN_ERROR
            else:
                found[case] = f"returned {len(ids):,} ids" if hasattr(ids, "__len__") else f"returned {ids!r}"
    return found


def _as_ids(ids: Any) -> Any:
    """A tensor, list or array of ids as a numpy array (anything else as it is, for the check to name)."""
    if hasattr(ids, "numpy"):
        ids = ids.numpy()
    try:
        return np.asarray(ids)
    except (TypeError, ValueError):
        return ids
