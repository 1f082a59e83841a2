"""What the labels and the attention mask say about what is trained on, beyond the labels' layout:

- `no-labels`: every label of a batch is ignore_index, so the loss has nothing to average (Hugging Face logs
  0.0, a plain mean gives NaN) and the model never changes;
- `attention-mask-inverted`: a mask that is 0 on every token of a row, or 1 on the padding (the pad id) and 0 on
  the text: the model reads padding and skips the text; its fix is the mask, never labels of -100 where the
  mask is 0 (that would take every real token out of the loss);
- the padding a mask of all ones hides: with `pad_id` given, a row whose mask is all 1 yet ends (or starts) with
  the pad id is padded all the same (`helpers.audit.statistics.padding_positions` on the ids alone).
"""

from __future__ import annotations

import numpy as np

from .statistics import padding_positions

FEWEST_LABELS = 64  # a batch of this many label positions or more, all ignored, is a finding


def no_labels(labels: np.ndarray, ignore_index: int) -> str | None:
    """The finding's line when every label of a batch (of `FEWEST_LABELS` or more) is ignored, else None."""
    if labels.size < FEWEST_LABELS or (labels != ignore_index).any():
        return None
    return (f"every one of the batch's {labels.size:,} labels is {ignore_index} (ignored): nothing is trained, the "
            "loss is 0 or NaN and the weights never change; fix: labels are the ids to predict (input_ids, or "
            f"x[t+1]), {ignore_index} only on padding and on what must not be learned (a prompt)")


def inverted_mask(ids: np.ndarray, mask: np.ndarray | None, pad_id: int | None) -> str | None:
    """The finding's line when the mask is 0 on whole rows, or (with `pad_id`) 1 on padding and 0 on the text."""
    if mask is None:
        return None
    if pad_id is not None:
        pads = padding_positions(ids, None, pad_id, None) & (ids == pad_id)
        on_padding, off_text = int((mask.astype(bool) & pads).sum()), int((~mask.astype(bool) & ~pads).sum())
        masked = int((mask == 0).sum())
        if pads.any() and masked and on_padding * 2 >= int(pads.sum()) and off_text * 2 >= masked:
            return (f"attention_mask is 1 on {on_padding:,} padding positions (pad id {pad_id}) and 0 on {off_text:,} "
                    "of the text's: the mask is the wrong way round, so the model reads the padding and skips the "
                    "text; fix: attention_mask is 1 on real tokens and 0 on padding (as tokenizer(..., padding=True) "
                    "returns it), not 1 - mask")
    blank = ~mask.any(axis=1)
    blank &= (ids != ids[:, :1]).any(axis=1)  # a row of one id throughout is padding only: an empty document
    empty = int(blank.sum())
    if empty:
        return (f"attention_mask is 0 on every token of {empty} of {mask.shape[0]} rows: the model attends to nothing "
                "there (a mask of zeros, or one the wrong way round over rows without padding); fix: "
                "attention_mask is 1 on the tokens to read and 0 on padding only (as tokenizer(..., padding=True) "
                "returns it)")
    return None


def hidden_padding(ids: np.ndarray, mask: np.ndarray | None, pad_id: int | None, eod_id: int | None) -> np.ndarray:
    """Where a row is padding: the mask's zeros, and in rows whose mask is all 1 (or without a mask) the pad id's
    run at the row's end or start (`padding_positions` on the ids alone)."""
    by_ids = padding_positions(ids, None, pad_id, eod_id)
    if mask is None:
        return by_ids
    by_mask = mask == 0
    all_ones = ~by_mask.any(axis=1)
    return by_mask | (by_ids & all_ones[:, None])
