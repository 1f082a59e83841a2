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

IGNORE_INDEX = -100
BATCH_KEYS = ("input_ids", "labels", "position_ids", "document_ids")


def document_ids_after_eod(input_ids: np.ndarray, eod_id: int | None) -> np.ndarray:
    """Per token of `[B, S]` ids, the number of EODs strictly before it in its row: a new document starts
    after each EOD. Built from the few places a document starts (each row's start, each EOD's next token)
    with one `np.repeat`, a quarter of the time of a running sum over every token."""
    rows, length = input_ids.shape
    if eod_id is None:
        return np.zeros((rows, length), dtype=np.int64)
    after_eod = np.flatnonzero(input_ids == eod_id) + 1
    starts = np.union1d(np.arange(0, rows * length, length), after_eod[after_eod % length != 0])
    first_of_row = np.searchsorted(starts, starts - starts % length)
    runs = np.diff(np.append(starts, rows * length))
    return np.repeat(np.arange(starts.size) - first_of_row, runs).reshape(rows, length)


def positions_within_documents(document_ids: torch.Tensor) -> torch.Tensor:
    """0, 1, 2, ... restarting wherever `document_ids` changes along a row."""
    length = document_ids.shape[-1]
    index = torch.arange(length, device=document_ids.device).expand_as(document_ids)
    starts = torch.ones_like(document_ids, dtype=torch.bool)
    starts[..., 1:] = document_ids[..., 1:] != document_ids[..., :-1]
    start_index = torch.where(starts, index, torch.zeros_like(index))
    return index - torch.cummax(start_index, dim=-1).values


def from_windows(windows, eod_id: int | None, reset_position_ids: bool = False,
                 eod_mask_loss: bool = False) -> dict[str, torch.Tensor]:
    """A batch from windows of `seq_length + 1` consecutive tokens (`[B, S+1]`), as Megatron's GPTDataset.

    Inputs are the first S tokens, labels the last S. Documents split after each EOD. With
    `reset_position_ids`, positions restart at each document; with `eod_mask_loss`, a position whose
    input is EOD carries no loss (Megatron's `--reset-position-ids`, `--eod-mask-loss`).

    Built with numpy, one thread, and handed to torch as finished arrays (`torch.from_numpy`, no copy):
    torch's copies of whole batches run on every core, and on a node whose cores are busy (other ranks,
    DataLoader workers) their threads wait for each other.
    """
    if eod_mask_loss and eod_id is None:
        raise ValueError("eod_mask_loss needs the EOD id")
    windows = windows.numpy() if torch.is_tensor(windows) else np.asarray(windows)
    windows = windows.astype(np.int64, copy=False)
    if windows.ndim == 1:
        windows = windows[None, :]
    input_ids, labels = np.ascontiguousarray(windows[:, :-1]), windows[:, 1:].copy()
    document_ids = torch.from_numpy(document_ids_after_eod(input_ids, eod_id))
    if eod_mask_loss:
        labels[input_ids == eod_id] = IGNORE_INDEX
    if reset_position_ids:
        position_ids = positions_within_documents(document_ids)
    else:
        position_ids = torch.from_numpy(np.broadcast_to(np.arange(input_ids.shape[1]), input_ids.shape).copy())
    return {"input_ids": torch.from_numpy(input_ids), "labels": torch.from_numpy(labels),
            "position_ids": position_ids, "document_ids": document_ids}


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
