"""Is packed training exact, and what does document masking change?

With a block-diagonal causal mask, position ids restarting per document and labels cut at document
ends, a packed row is the same computation as its documents run one by one: same loss (summed over
tokens), same gradients, up to float rounding. Without the mask, every document after the first one in
a row attends to the documents before it: `logit_change_without_mask` shows which tokens' outputs move,
and `cross_document_attention` counts, for a whole pack plan, how much of a plain causal mask's
attention crosses a document boundary.
"""

from __future__ import annotations

import numpy as np
import torch

from ..common.errors import UserError
from ..loading.packing import PackPlan, pack, packed_batch
from .train import build_model, llama_config


def tiny_llama(vocab_size: int = 101, seed: int = 0):
    """A 2-layer Llama from a config (no downloaded weights), in float64 so rounding stays tiny."""
    config = llama_config("cpu-tiny", vocab_size=vocab_size, hidden_size=32, intermediate_size=64,
                          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                          max_position_embeddings=512)
    return build_model(config, "cpu", seed=seed).double()


def loss_and_gradients(model, input_ids, labels, **inputs) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Summed next-token loss (labels already shifted, -100 ignored) and every parameter's gradient."""
    model.zero_grad()
    logits = model(input_ids=input_ids, **inputs).logits
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1),
                                             ignore_index=-100, reduction="sum")
    loss.backward()
    return loss.detach(), {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def compare_packed_and_separate(model, documents: dict[int, np.ndarray], capacity: int) -> dict[str, float]:
    """Pack `documents` (any keys) into one row and compare with running each alone."""
    ordered = [documents[key] for key in sorted(documents)]  # a plan numbers documents by position
    plan = _one_row(ordered, capacity)
    batch = packed_batch(plan, [0], ordered, sdpa_mask=True)
    packed, packed_grads = loss_and_gradients(model, batch["input_ids"], batch["labels"],
                                              attention_mask=batch["attention_mask"],
                                              position_ids=batch["position_ids"])
    separate, grads = torch.zeros((), dtype=torch.float64), None
    for document in ordered:
        ids = torch.as_tensor(document).unsqueeze(0)
        labels = torch.cat([ids[:, 1:], torch.tensor([[-100]])], dim=1)
        loss, g = loss_and_gradients(model, ids, labels)
        separate = separate + loss
        grads = g if grads is None else {n: grads[n] + g[n] for n in g}
    leaky, _ = loss_and_gradients(model, batch["input_ids"], batch["labels"], position_ids=batch["position_ids"])
    gap = max(float((packed_grads[n] - grads[n]).abs().max()) for n in grads)
    return {"packed_loss": float(packed), "separate_loss": float(separate), "unmasked_packed_loss": float(leaky),
            "max_gradient_difference": gap}


def _one_row(documents: list[np.ndarray], capacity: int):
    """The pack plan of `documents` in one row of `capacity` tokens; refused when they need more rows."""
    plan = pack(np.array([len(ids) for ids in documents]), capacity, "best_fit_decreasing")
    if plan.rows != 1:
        raise UserError(f"the documents need {plan.rows} rows of {capacity} tokens; fix: give a capacity of at "
                        f"least {sum(len(ids) for ids in documents)}, or fewer documents")
    return plan


def logit_change_without_mask(model, documents: dict[int, np.ndarray], capacity: int) -> list[dict]:
    """Pack `documents` into one row and run it with and without the document mask (positions restart
    in both): per document, its tokens and the largest change of any output logit."""
    ordered = [documents[key] for key in sorted(documents)]
    plan = _one_row(ordered, capacity)
    batch = packed_batch(plan, [0], ordered, sdpa_mask=True)
    with torch.no_grad():
        masked = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                       position_ids=batch["position_ids"]).logits[0]
        plain = model(input_ids=batch["input_ids"], position_ids=batch["position_ids"]).logits[0]
    change = (masked - plain).abs().amax(dim=-1)
    document_ids = batch["document_ids"][0]
    keys = sorted(documents)
    return [{"document": keys[k], "tokens": int((document_ids == k).sum()),
             "max_logit_change": float(change[document_ids == k].max())} for k in range(len(ordered))]


def cross_document_attention(plan: PackPlan) -> dict[str, float]:
    """Under a plain causal mask (no document masking), how much attention crosses documents in `plan`.

    A segment at offset o of its row, n tokens long, has n*o (query, key) pairs that reach back into
    earlier documents and n(n+1)/2 within itself; padding is not counted as a query.
    """
    length = plan.length.astype(np.float64)
    ends = np.cumsum(plan.length)
    row_first = np.searchsorted(plan.row, plan.row)  # index of the first segment of each segment's row
    offset = (ends - plan.length) - (ends[row_first] - plan.length[row_first])
    crossing = float((length * offset).sum())
    within = float((length * (length + 1) / 2).sum())
    tokens = float(length.sum())
    return {"pair_share": crossing / (crossing + within) if tokens else 0.0,
            "token_share": float(length[offset > 0].sum()) / tokens if tokens else 0.0}
