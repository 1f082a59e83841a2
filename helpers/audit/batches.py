"""What a training loop hands its model, read into plain arrays; torch tensors or numpy arrays in any of:

- a mapping (a dict, Hugging Face's `BatchEncoding`) with `input_ids` and optionally `labels`,
  `attention_mask` (0/1 integers, booleans or floats) and `loss_mask`;
- megatron-core's batch: `tokens`, `labels`, `loss_mask` (its 4-D `attention_mask` says nothing of padding and
  is not read; padding is out of the loss where `loss_mask` is 0);
- a tuple or list `(x, y)` or `(x, y, loss_mask)`, or a bare 2-D array of ids.

A label where the loss mask is 0 is out of the loss, as `ignore_index` is. Anything else is one `UserError`
line naming what was found and what is expected."""

from __future__ import annotations

from collections.abc import Mapping
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
        if str(value.dtype) == "torch.bfloat16":  # numpy has no bfloat16: its values are float32's
            value = value.float()
        value = value.numpy()
    try:
        array = np.asarray(value) if not isinstance(value, np.ndarray) else value
    except ValueError:  # numpy refuses rows of different lengths
        array = np.empty(0, object)
    if array.dtype == object:
        raise UserError(f"step {step}: {name} has rows of different lengths (ragged); fix: pad or pack the rows "
                        "to one length, one 2-D array [batch, sequence]")
    if name in MASKS and array.dtype.kind in "bf":
        if array.dtype.kind == "f" and not np.isin(array, (0.0, 1.0)).all():
            raise UserError(f"step {step}: {name} holds values other than 0 and 1; fix: a mask of 0 (left out) and 1")
        array = array.astype(np.int64)
    if array.dtype.kind == "f" and name not in MASKS:
        array = _float_ids(array, name, step)
    if array.dtype.kind not in "iu":
        raise UserError(f"step {step}: {name} holds {array.dtype} values, not integer token ids; fix: keep ids as "
                        "int64")
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2:
        raise UserError(f"step {step}: {name} has shape {tuple(array.shape)}; fix: hand over 2-D [batch, "
                        "sequence] arrays")
    return array


MASKS = ("attention_mask", "loss_mask")


def _float_ids(array: np.ndarray, name: str, step: int) -> np.ndarray:
    """Ids handed over as floats, as int64 (infinity as int64's smallest value, as torch casts it), so that the
    audit can say what the float type did to them (`helpers.audit.casts`); refused when not whole numbers."""
    finite = np.isfinite(array)
    if not (array[finite] == np.round(array[finite])).all():
        raise UserError(f"step {step}: {name} holds {array.dtype} values that are not whole numbers, not token ids; "
                        "fix: hand over the ids as int64")
    ids = np.full(array.shape, np.iinfo(np.int64).min, np.int64)
    ids[finite] = array[finite]
    return ids


def _parts(batch, step: int) -> tuple:
    """(ids, labels, attention mask, loss mask) as handed over, each None where absent."""
    if isinstance(batch, Mapping):
        key = "input_ids" if "input_ids" in batch else "tokens" if "tokens" in batch else None
        if key is None:
            raise UserError(f"step {step}: a batch without input_ids (keys: {', '.join(map(str, batch)) or 'none'}); "
                            "fix: a dict with input_ids (or megatron-core's tokens), and optionally labels, "
                            "attention_mask and loss_mask")
        mask = batch.get("attention_mask")
        if mask is not None and len(getattr(mask, "shape", ())) == 4:  # megatron-core's [b, 1, s, s] causal mask
            mask = None
        return batch[key], batch.get("labels"), mask, batch.get("loss_mask")
    if isinstance(batch, (tuple, list)) and len(batch) in (2, 3) and all(hasattr(part, "shape") for part in batch):
        return batch[0], batch[1], None, batch[2] if len(batch) == 3 else None
    if hasattr(batch, "shape") or isinstance(batch, (list, tuple)):
        return batch, None, None, None
    raise UserError(f"step {step}: a batch of type {type(batch).__name__}; fix: a dict with input_ids, an (x, y) "
                    "pair, or a 2-D array of ids")


def read_batch(batch, step: int, ignore_index: int) -> Batch:
    """The parts of one batch the audit looks at (see the module docstring): labels out of a loss mask set to
    `ignore_index`."""
    ids, labels, mask, loss_mask = _parts(batch, step)
    stored = str(getattr(ids, "dtype", "")).replace("torch.", "")
    input_ids = _array(ids, "input_ids", step)
    if input_ids.size == 0:
        raise UserError(f"step {step}: input_ids is empty (shape {tuple(input_ids.shape)}); fix: check the reader "
                        "returns tokens")
    parts = {"labels": labels, "attention_mask": mask, "loss_mask": loss_mask}
    arrays = {name: None if value is None else _array(value, name, step) for name, value in parts.items()}
    for name, array in arrays.items():
        if array is not None and array.shape != input_ids.shape:
            raise UserError(f"step {step}: {name} has shape {tuple(array.shape)}, input_ids "
                            f"{tuple(input_ids.shape)}; fix: give both the same shape")
    labels = None if arrays["labels"] is None else arrays["labels"].astype(np.int64, copy=False)
    if labels is not None and arrays["loss_mask"] is not None:
        labels = np.where(arrays["loss_mask"] == 0, ignore_index, labels)
    return Batch(input_ids=input_ids.astype(np.int64, copy=False), labels=labels,
                 attention_mask=arrays["attention_mask"], stored_dtype=stored)
