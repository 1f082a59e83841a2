"""What a training loop hands its model, read into plain arrays: a dict with `input_ids` (and optional
`labels`, `attention_mask`), a tuple or list `(x, y)`, or a bare 2-D array of ids; torch tensors or numpy
arrays. Anything else is one `UserError` line naming what was found and what is expected."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..common.errors import UserError


@dataclass
class Batch:
    """One batch as int64 arrays `[rows, length]`; `stored_dtype` is the ids' dtype as handed over (a uint16
    array holds no id above 65,535, whatever the vocabulary)."""

    input_ids: np.ndarray
    labels: np.ndarray | None
    attention_mask: np.ndarray | None
    stored_dtype: str


def _array(value, name: str, step: int) -> np.ndarray:
    """A tensor or array as numpy (a GPU tensor is copied to the host), refused when not integers."""
    if hasattr(value, "detach"):  # torch, without importing it
        value = value.detach()
        if getattr(value, "is_cuda", False) or str(getattr(value, "device", "cpu")) != "cpu":
            value = value.cpu()
        value = value.numpy()
    try:
        array = np.asarray(value) if not isinstance(value, np.ndarray) else value
    except ValueError:  # numpy refuses rows of different lengths
        array = np.empty(0, object)
    if array.dtype == object:
        raise UserError(f"step {step}: {name} has rows of different lengths (ragged); fix: pad or pack the rows "
                        "to one length, one 2-D array [batch, sequence]")
    if array.dtype.kind == "b" and name == "attention_mask":
        return array.astype(np.int64)
    if array.dtype.kind not in "iu":
        raise UserError(f"step {step}: {name} holds {array.dtype} values, not integer token ids (float32 loses ids "
                        "above 2**24); fix: keep ids as int64")
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2:
        raise UserError(f"step {step}: {name} has shape {tuple(array.shape)}; fix: hand over 2-D [batch, "
                        "sequence] arrays")
    return array


def read_batch(batch, step: int) -> Batch:
    """The parts of one batch the audit looks at (see the module docstring)."""
    if isinstance(batch, dict):
        if "input_ids" not in batch:
            raise UserError(f"step {step}: a batch without input_ids (keys: {', '.join(map(str, batch)) or 'none'}); "
                            "fix: a dict with input_ids, and optionally labels and attention_mask")
        ids, labels, mask = batch["input_ids"], batch.get("labels"), batch.get("attention_mask")
    elif isinstance(batch, (tuple, list)) and len(batch) == 2 and all(hasattr(part, "shape") for part in batch):
        (ids, labels), mask = batch, None
    elif hasattr(batch, "shape") or isinstance(batch, (list, tuple)):
        ids, labels, mask = batch, None, None
    else:
        raise UserError(f"step {step}: a batch of type {type(batch).__name__}; fix: a dict with input_ids, an "
                        "(x, y) pair, or a 2-D array of ids")
    stored = str(getattr(ids, "dtype", "")).replace("torch.", "")
    input_ids = _array(ids, "input_ids", step)
    if input_ids.size == 0:
        raise UserError(f"step {step}: input_ids is empty (shape {tuple(input_ids.shape)}); fix: check the reader "
                        "returns tokens")
    parts = {"labels": labels, "attention_mask": mask}
    arrays = {name: None if value is None else _array(value, name, step) for name, value in parts.items()}
    for name, array in arrays.items():
        if array is not None and array.shape != input_ids.shape:
            raise UserError(f"step {step}: {name} has shape {tuple(array.shape)}, input_ids "
                            f"{tuple(input_ids.shape)}; fix: give both the same shape")
    return Batch(input_ids=input_ids.astype(np.int64, copy=False),
                 labels=None if arrays["labels"] is None else arrays["labels"].astype(np.int64, copy=False),
                 attention_mask=arrays["attention_mask"], stored_dtype=stored)
