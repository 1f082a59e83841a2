"""THE batch layout: every producer (GPT samples, packed rows, `.npy`/shard windows, synthetic) emits it.

A batch is a dict of int64 tensors, all `[batch, seq_length]`:

| key | meaning |
|---|---|
| `input_ids` | the tokens the model reads |
| `labels` | the token to predict at each position, already shifted; `IGNORE_INDEX` (-100) = no loss |
| `position_ids` | rotary positions: `0..S-1`, or restarting at every document when asked |
| `document_ids` | which document of the row each token belongs to (0, 1, ...); -1 = padding |

One mask convention, SDPA's: a boolean attention mask is True where a query **may attend** a key.
Masks and variable-length boundaries are derived from `document_ids` (`attention_mask`,
`varlen_boundaries`), never stored beside it. Megatron's own convention (True = masked) is its
negation, and its `loss_mask` is `labels != IGNORE_INDEX`.
"""

from __future__ import annotations

import numpy as np
import torch

from ..common.compiled import BATCH_TOKENS, compiled_pays, jit
from .batch_memory import BATCH_BLOCKS

IGNORE_INDEX = -100
BATCH_KEYS = ("input_ids", "labels", "position_ids", "document_ids")


def positions_within_documents(document_ids: torch.Tensor) -> torch.Tensor:
    """0, 1, 2, ... restarting wherever `document_ids` changes along a row."""
    length = document_ids.shape[-1]
    index = torch.arange(length, device=document_ids.device).expand_as(document_ids)
    starts = torch.ones_like(document_ids, dtype=torch.bool)
    starts[..., 1:] = document_ids[..., 1:] != document_ids[..., :-1]
    start_index = torch.where(starts, index, torch.zeros_like(index))
    return index - torch.cummax(start_index, dim=-1).values


@jit(cache=True, nogil=True)
def layout_row(window, layout, out, i):  # pragma: no cover - compiled
    """Row `i` of `out[0..3]` (input_ids, labels, position_ids, document_ids) from one window of S+1 tokens (any
    int dtype). `layout`: (EOD id or -1 for none, reset positions, mask EOD loss); a document starts after each
    EOD. Each tensor's row in a loop of its own, without a branch in the common case, so that each loop is a
    straight widening copy or count the compiler vectorises (one loop writing all four is about 1.6 times
    slower)."""
    eod, reset_positions, mask_eod_loss = layout
    length = out.shape[2]
    input_ids, labels, positions, documents = out[0, i], out[1, i], out[2, i], out[3, i]
    for j in range(length):
        input_ids[j] = window[j]
    for j in range(length):
        labels[j] = window[j + 1]
    document = 0
    for j in range(length):
        documents[j] = document
        document += window[j] == eod
    if reset_positions:
        start = 0
        for j in range(length):
            positions[j] = j - start
            if window[j] == eod:
                start = j + 1
    else:
        for j in range(length):
            positions[j] = j
    if mask_eod_loss:
        for j in range(length):
            if window[j] == eod:
                labels[j] = IGNORE_INDEX


@jit(cache=True, nogil=True)
def _fill_layout(windows, eod, reset_positions, mask_eod_loss, out):  # pragma: no cover - compiled
    """`out[0..3]` = input_ids, labels, position_ids, document_ids of `windows` (`[B, S+1]`), row by row."""
    for i in range(out.shape[1]):
        layout_row(windows[i], (eod, reset_positions, mask_eod_loss), out, i)


def _fill_layout_numpy(windows, eod, reset_positions, mask_eod_loss, out):
    """`_fill_layout` in numpy (for small batches): a document starts after each EOD, so a position's document is
    the number of EODs before it, and with `reset_positions` its position counts from just after the last one."""
    input_ids, labels, position_ids, document_ids = out[0], out[1], out[2], out[3]
    length = input_ids.shape[1]
    inputs = windows[:, :length]
    input_ids[...] = inputs
    labels[...] = windows[:, 1:length + 1]
    is_eod = inputs == eod if eod >= 0 else np.zeros(inputs.shape, dtype=bool)
    if mask_eod_loss:
        labels[is_eod] = IGNORE_INDEX
    np.cumsum(is_eod, axis=1, out=document_ids)
    document_ids -= is_eod
    if not reset_positions or length == 0:
        position_ids[...] = np.arange(length)
        return
    after_eod = np.maximum.accumulate(np.where(is_eod, np.arange(1, length + 1), 0), axis=1)
    position_ids[:, 0] = 0
    np.subtract(np.arange(1, length), after_eod[:, :-1], out=position_ids[:, 1:])


def from_windows(windows, eod_id: int | None, reset_position_ids: bool = False,
                 eod_mask_loss: bool = False) -> dict[str, torch.Tensor]:
    """A batch from windows of `seq_length + 1` consecutive tokens (`[B, S+1]`), as Megatron's GPTDataset.

    Inputs are the first S tokens, labels the last S. Documents split after each EOD. With
    `reset_position_ids`, positions restart at each document; with `eod_mask_loss`, a position whose
    input is EOD carries no loss (Megatron's `--reset-position-ids`, `--eod-mask-loss`).

    The windows may be in the data's own dtype (uint16, uint32: a quarter or half the bytes of int64 to
    hand between processes). The four tensors are written by compiled loops, one per tensor (numpy for a small
    batch: `helpers.common.compiled`), one thread, into one recycled block (`batch_memory`): torch's copies run on
    every core, and on a node whose cores are busy (other ranks, DataLoader workers) their threads wait for
    each other; fresh memory costs a page fault per 4 KB.
    Each tensor is contiguous and has its own storage.
    """
    if eod_mask_loss and eod_id is None:
        raise ValueError("eod_mask_loss needs the EOD id")
    windows = windows.numpy() if torch.is_tensor(windows) else np.asarray(windows)
    if windows.ndim == 1:
        windows = windows[None, :]
    if windows.dtype.kind not in "iu":
        raise ValueError(f"token windows must be integers, got {windows.dtype}")
    rows, width = windows.shape
    block = BATCH_BLOCKS.block((len(BATCH_KEYS), rows, max(width - 1, 0)))
    fill = _fill_layout if compiled_pays(windows.size, BATCH_TOKENS) else _fill_layout_numpy
    fill(windows, -1 if eod_id is None else int(eod_id), reset_positions=reset_position_ids,
         mask_eod_loss=eod_mask_loss, out=block)
    return batch_of(block)


def batch_of(block: np.ndarray) -> dict[str, torch.Tensor]:
    """The batch whose four tensors are `block[0..3]` (`[4, B, S]` int64, laid out)."""
    return {"input_ids": torch.from_numpy(block[0]), "labels": torch.from_numpy(block[1]),
            "position_ids": torch.from_numpy(block[2]), "document_ids": torch.from_numpy(block[3])}  # BATCH_KEYS


def attention_mask(document_ids: torch.Tensor) -> torch.Tensor:
    """`[B, 1, S, S]` bool, True = may attend: causal, within one document; a padding token sees itself."""
    length = document_ids.shape[-1]
    causal = torch.tril(torch.ones(length, length, dtype=torch.bool, device=document_ids.device))
    same = document_ids[:, :, None] == document_ids[:, None, :]
    padding = document_ids[:, :, None] < 0
    eye = torch.eye(length, dtype=torch.bool, device=document_ids.device)
    return ((causal & same & ~padding) | (padding & eye)).unsqueeze(1)


def varlen_boundaries(document_ids: torch.Tensor) -> torch.Tensor:
    """`cu_seqlens` (int32) for variable-length attention over the flattened batch: each document,
    and each row's padding, is one sequence."""
    rows, length = document_ids.shape
    change = torch.ones_like(document_ids, dtype=torch.bool)
    change[:, 1:] = document_ids[:, 1:] != document_ids[:, :-1]
    starts = torch.nonzero(change.flatten()).flatten()
    return torch.cat([starts, torch.tensor([rows * length], device=starts.device)]).to(torch.int32)


def loss_mask(labels: torch.Tensor) -> torch.Tensor:
    """Megatron's float `loss_mask`: 1 where a label counts."""
    return (labels != IGNORE_INDEX).float()
