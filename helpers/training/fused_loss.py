"""The output layer and the cross-entropy in one GPU kernel, from a library, never the full logits.

With a 32k vocabulary and 32k tokens a step, the logits alone are a [32768, 32000] matrix: 2 GB in bf16, 4 GB
once upcast to float32 for the loss, written and read again in the backward. A fused linear + cross-entropy
computes the loss and both gradients a chunk of tokens at a time and never keeps that matrix. Two well-kept
libraries do it, both Triton (GPU only):

- `"liger"`: liger-kernel's `LigerFusedLinearCrossEntropyFunction` (exact: the full softmax of each chunk);
- `"cut"`: cut-cross-entropy's `linear_cross_entropy` (Apple's Cut Cross-Entropy; its default leaves out of
  the gradient the entries whose probability is below bf16's resolution, which its authors measured as harmless).

`"torch"` is the plain path: logits, upcast, `F.cross_entropy`. The training loop asks the model for its last
hidden states (`FastLlama(..., final_hidden=True)`) and hands them here with the output layer's weight.
"""

from __future__ import annotations

import torch

from ..common.errors import UserError

LOSS_KERNELS = ("torch", "liger", "cut")
PACKAGES = {"liger": "liger-kernel", "cut": "cut-cross-entropy"}


def check_loss_kernel(kernel: str, *, device: torch.device, implementation_fast: bool, parallel: str) -> None:
    """Refuse, in one line, a fused loss (a name `train_settings` has checked) where it cannot run: not on CUDA, not the plain-PyTorch Llama, or
    under FSDP (whose output weight is sharded); or whose library is not installed."""
    if kernel == "torch":
        return
    where = ("a CUDA device" if device.type != "cuda" else
             "the plain-PyTorch Llama (implementation='fast')" if not implementation_fast else
             "one process or DDP (FSDP shards the output layer)" if parallel == "fsdp" else None)
    if where:
        raise UserError(f"loss_kernel={kernel!r} needs {where}; fix: loss_kernel='torch'")
    try:
        library_loss(kernel)
    except ImportError:
        raise UserError(f"loss_kernel={kernel!r} needs the {PACKAGES[kernel]} package; "
                        f"fix: pip install {PACKAGES[kernel]} (GPU only), or loss_kernel='torch'") from None


def library_loss(kernel: str):
    """`(hidden [N, D], weight [V, D], labels [N]) -> summed loss` of the library `kernel` names."""
    if kernel == "liger":
        from liger_kernel.transformers.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyLoss

        fused = LigerFusedLinearCrossEntropyLoss(ignore_index=-100, reduction="sum")
        return lambda hidden, weight, labels: fused(weight, hidden, labels)
    if kernel == "cut":
        from cut_cross_entropy import linear_cross_entropy

        return lambda hidden, weight, labels: linear_cross_entropy(hidden, weight, labels, ignore_index=-100,
                                                                   reduction="sum")
    raise ValueError(kernel)


def fused_linear_loss(kernel: str, hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Summed next-token loss of `hidden` (`[B, S, D]`) through the output layer `weight` against `labels`
    (positions at -100 left out), by `kernel`'s library. Both go in as the autocast dtype (bf16) where autocast
    is on, as the output layer's matrix multiply would take them; the weight's gradient reaches the float32
    master weight through the cast."""
    dtype = torch.get_autocast_dtype("cuda") if torch.is_autocast_enabled("cuda") else hidden.dtype
    flat = hidden.flatten(0, 1).to(dtype)
    return library_loss(kernel)(flat, weight.to(dtype), labels.flatten()).float()
