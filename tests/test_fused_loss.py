"""The output layer and the loss in one library kernel (`loss_kernel`): a setting checked by name, refused in
one line where it cannot run, the same loss and gradients as the plain path where it can (on a GPU)."""

from __future__ import annotations

import pytest
import torch

from helpers.common.errors import UserError
from helpers.training.train import build_model, llama_config, next_token_loss, train, train_settings

SHAPE = dict(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4)


def batch(rows: int = 2, length: int = 32, device: str = "cpu", seed: int = 0) -> dict:
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randint(0, SHAPE["vocab_size"], (rows, length), generator=generator)
    labels = torch.randint(0, SHAPE["vocab_size"], (rows, length), generator=generator)
    labels[:, :3] = -100  # some positions left out, as after a document's end
    return {"input_ids": inputs.to(device), "labels": labels.to(device),
            "position_ids": torch.arange(length).expand(rows, length).to(device)}


def test_an_unknown_loss_kernel_is_refused_by_name():
    with pytest.raises(UserError, match="loss_kernel 'fused'.*torch, liger, cut"):
        train_settings("h100", loss_kernel="fused")


@pytest.mark.parametrize("kernel, implementation, why", [
    ("liger", "fast", "needs a CUDA device"),
    ("cut", "transformers", "needs a CUDA device"),
])
def test_a_fused_loss_where_it_cannot_run_is_one_line_before_any_step(kernel, implementation, why):
    model = build_model(llama_config("cpu-tiny", **SHAPE), implementation=implementation)
    settings = train_settings("cpu-tiny", steps=1, batch_size=2, seq_length=32, loss_kernel=kernel)
    with pytest.raises(UserError, match=f"loss_kernel='{kernel}' {why}; fix: loss_kernel='torch'"):
        train(model, [batch()], settings, progress=False)


def test_the_fast_llama_hands_out_the_hidden_states_its_output_layer_reads():
    model = build_model(llama_config("cpu-tiny", **SHAPE), implementation="fast").double()
    inputs = batch()
    hidden = model(input_ids=inputs["input_ids"], final_hidden=True).hidden_states
    logits = model(input_ids=inputs["input_ids"]).logits
    assert hidden.shape == (2, 32, SHAPE["hidden_size"])
    assert torch.equal(model.lm_head(hidden), logits)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("kernel, module", [("liger", "liger_kernel"), ("cut", "cut_cross_entropy")])
def test_a_fused_loss_gives_the_plain_loss_and_gradients_in_bf16(kernel, module):
    pytest.importorskip(module)
    model = build_model(llama_config("cpu-tiny", **SHAPE), "cuda", implementation="fast")
    inputs = batch(rows=4, length=64, device="cuda")
    results = {}
    for name in ("torch", kernel):
        model.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = next_token_loss(model, inputs, reduction="sum", loss_kernel=name)
        loss.backward()
        results[name] = (loss.detach().float(), model.lm_head.weight.grad.clone(),
                         model.model.embed_tokens.weight.grad.clone())
    (loss, head, embed), (fused_loss, fused_head, fused_embed) = results["torch"], results[kernel]
    assert abs(float(fused_loss - loss)) < 1e-2 * abs(float(loss))
    for ours, theirs in ((fused_head, head), (fused_embed, embed)):
        assert float((ours - theirs).norm() / theirs.norm()) < 2e-2  # bf16 operands, not another function
