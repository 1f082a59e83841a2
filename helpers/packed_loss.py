"""Is packed training exact? Loss and gradients of a tiny Llama on a packed row vs the documents alone.

With a block-diagonal causal mask, position ids restarting per document and labels cut at document
ends, a packed row is the same computation as its documents run one by one: same loss (summed over
tokens), same gradients, up to float rounding. Without the mask, documents attend to each other and
the loss changes.
"""

from __future__ import annotations

import numpy as np
import torch

from .packing import pack, packed_batch
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
    plan = pack(np.array([len(ids) for ids in ordered]), capacity, "best_fit_decreasing")
    if plan.rows != 1:
        raise ValueError(f"the documents need {plan.rows} rows of {capacity}; give a larger capacity")
    batch = packed_batch(plan, [0], ordered, sdpa_mask=True)
    packed, packed_grads = loss_and_gradients(model, batch["input_ids"], batch["labels"],
                                              attention_mask=batch["attention_mask"], position_ids=batch["position_ids"])
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
