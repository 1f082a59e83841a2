"""The plain-PyTorch Llama computes what transformers' `LlamaForCausalLM` computes from the same weights
(logits and gradients, in float64), calls attention the fast way (SDPA with `is_causal=True`, no mask) for
plain rows, and keeps packed rows within their documents exactly, without a dense mask."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from helpers.training.llama import FastLlama, from_transformers
from helpers.training.train import build_model, llama_config

SHAPE = dict(vocab_size=97, hidden_size=48, intermediate_size=96, num_hidden_layers=2, num_attention_heads=6,
             max_position_embeddings=32)
# transformers' RMSNorm rounds through float32 even in a float64 model; everything else agrees to float64
NORM_IN_FLOAT32 = 1e-5


def pair(**overrides):
    llama = build_model(llama_config("cpu-tiny", **{**SHAPE, **overrides}), seed=3).to(torch.float64)
    return llama, from_transformers(llama)


def batch(rows=3, length=32, vocab=97, seed=0):
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (rows, length + 1), generator=generator)
    return ids[:, :-1], ids[:, 1:]


@pytest.mark.parametrize("kv_heads", [6, 2], ids=["multi-head", "grouped-query"])
def test_same_logits_and_gradients_as_transformers(kv_heads):
    llama, fast = pair(num_key_value_heads=kv_heads)
    inputs, labels = batch()
    positions = torch.arange(inputs.shape[1]).expand_as(inputs)
    theirs = llama(input_ids=inputs, position_ids=positions).logits
    ours = fast(input_ids=inputs, position_ids=positions).logits
    assert ours.dtype == torch.float64 and torch.allclose(ours, theirs, rtol=0, atol=NORM_IN_FLOAT32)
    F.cross_entropy(theirs.flatten(0, 1), labels.flatten()).backward()
    F.cross_entropy(ours.flatten(0, 1), labels.flatten()).backward()
    layer, fast_layer = llama.model.layers[0], fast.model.layers[0]
    fused = torch.cat((layer.self_attn.q_proj.weight.grad, layer.self_attn.k_proj.weight.grad,
                       layer.self_attn.v_proj.weight.grad))
    assert torch.allclose(fast_layer.self_attn.qkv_proj.weight.grad, fused, atol=NORM_IN_FLOAT32)
    gate_up = torch.cat((layer.mlp.gate_proj.weight.grad, layer.mlp.up_proj.weight.grad))
    assert torch.allclose(fast_layer.mlp.gate_up_proj.weight.grad, gate_up, atol=NORM_IN_FLOAT32)
    assert torch.allclose(fast.model.embed_tokens.weight.grad, llama.model.embed_tokens.weight.grad,
                          atol=NORM_IN_FLOAT32)


def test_positions_default_to_a_plain_row_and_restarted_positions_are_honoured():
    _, fast = pair()
    inputs, _ = batch(rows=2)
    plain = torch.arange(32).expand_as(inputs)
    with torch.no_grad():
        default = fast(input_ids=inputs).logits
        assert torch.equal(default, fast(input_ids=inputs, position_ids=plain).logits)
        restarts = torch.cat((torch.arange(12), torch.arange(20))).expand_as(inputs)
        restarted = fast(input_ids=inputs, position_ids=restarts).logits
    assert torch.equal(restarted[:, :12], default[:, :12])  # same positions so far, causal: the same
    assert not torch.allclose(restarted[:, 12:], default[:, 12:])  # then the rotary angles differ


def attention_calls(model, **inputs) -> list[tuple]:
    """(mask shape or None, is_causal) of every SDPA call one forward makes."""
    calls, original = [], F.scaled_dot_product_attention

    def spy(*args, attn_mask=None, is_causal=False, **kwargs):
        calls.append((None if attn_mask is None else tuple(attn_mask.shape), is_causal))
        return original(*args, attn_mask=attn_mask, is_causal=is_causal, **kwargs)

    torch.nn.functional.scaled_dot_product_attention = spy
    try:
        with torch.no_grad():
            model(**inputs)
    finally:
        torch.nn.functional.scaled_dot_product_attention = original
    return calls


def test_plain_rows_call_causal_sdpa_without_a_mask():
    llama, fast = pair()
    inputs, _ = batch()
    for positions in (None, torch.arange(32).expand_as(inputs)):
        for model in (fast, llama):  # transformers' too, eager, with the installed version
            calls = attention_calls(model, input_ids=inputs, position_ids=positions)
            assert calls == [(None, True)] * SHAPE["num_hidden_layers"], (type(model).__name__, calls)


def test_packed_rows_attend_within_their_documents_exactly():
    _, fast = pair()
    inputs, _ = batch(rows=2)
    documents = torch.zeros_like(inputs)
    documents[0, 10:] = 1
    documents[0, 25:] = 2
    documents[1, 16:] = 1
    positions = torch.stack([torch.cat([torch.arange((row == d).sum()) for d in row.unique()]) for row in documents])
    assert attention_calls(fast, input_ids=inputs, position_ids=positions, document_ids=documents) == []  # no SDPA
    with torch.no_grad():  # FlexAttention has no backward on CPU; on CUDA it trains (compiled)
        packed = fast(input_ids=inputs, position_ids=positions, document_ids=documents).logits
        for row in range(2):  # each document alone, as its own row, gives the same logits
            for document in documents[row].unique():
                span = documents[row] == document
                alone = fast(input_ids=inputs[row, span][None]).logits[0]
                assert torch.allclose(packed[row, span], alone, atol=1e-10)


def test_either_implementation_trains_the_same_steps_and_the_h100_preset_takes_the_fast_one():
    from helpers.loading.loader import make_dataloader
    from helpers.training.train import preset_implementation, train, train_settings

    assert preset_implementation("h100") == "fast" and preset_implementation("cpu-tiny") == "transformers"
    settings = train_settings("cpu-tiny", steps=4, batch_size=2, seq_length=32, dtype="float64", eval_every=0,
                              warmup_steps=1)
    curves = {}
    for implementation in ("transformers", "fast"):
        batches = make_dataloader(source="synthetic", vocab_size=97, seq_length=32, batch_size=2, num_samples=8,
                                  seed=0)
        model = build_model(llama_config("cpu-tiny", **SHAPE), seed=3, implementation=implementation)
        assert isinstance(model, FastLlama) == (implementation == "fast")
        curves[implementation] = [row["loss"] for row in train(model, batches, settings, progress=False).log]
    assert curves["fast"] == pytest.approx(curves["transformers"], abs=NORM_IN_FLOAT32)


@pytest.mark.parametrize("overrides", [{}, {"num_key_value_heads": 2, "num_hidden_layers": 3},
                                       {"vocab_size": 4096, "hidden_size": 72, "initializer_range": 0.05}],
                         ids=["multi-head", "grouped-query", "wider"])
def test_the_layout_drawn_without_transformers_holds_transformers_initial_weights(overrides):
    """`TransformersLayout` draws what `LlamaForCausalLM` draws for a seed, every parameter bit for bit, and leaves
    the generator where transformers leaves it; the plain model built from a `LlamaShape` imports no transformers."""
    from helpers.training.llama_shape import TransformersLayout
    from helpers.training.train import model_shape

    overrides = dict(overrides)
    spread = overrides.pop("initializer_range", None)
    shape = model_shape("cpu-tiny", **{**SHAPE, **overrides})
    if spread is not None:
        shape = dataclasses.replace(shape, initializer_range=spread)
    torch.manual_seed(11)
    theirs = build_model(shape.transformers_config(), seed=11)
    after_theirs = torch.rand(4)
    torch.manual_seed(11)
    ours = TransformersLayout(shape)
    assert torch.equal(torch.rand(4), after_theirs)
    expected = dict(theirs.named_parameters())
    drawn = dict(ours.named_parameters())
    assert sorted(drawn) == sorted(expected)
    assert all(torch.equal(drawn[name], expected[name]) for name in expected), \
        [name for name in expected if not torch.equal(drawn[name], expected[name])]
    fast = build_model(shape, seed=11, implementation="fast")
    assert torch.equal(fast.lm_head.weight, expected["lm_head.weight"])
    assert torch.equal(fast.model.layers[0].self_attn.qkv_proj.weight[:shape.hidden_size],
                       expected["model.layers.0.self_attn.q_proj.weight"])


def test_the_shape_holds_the_fields_of_transformers_config_with_its_defaults():
    from helpers.training.train import model_shape

    for overrides in ({}, {"num_key_value_heads": 2}):
        shape = model_shape("cpu-tiny", **overrides)
        config = shape.transformers_config()
        for field in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                      "num_key_value_heads", "max_position_embeddings", "tie_word_embeddings", "rms_norm_eps",
                      "initializer_range", "head_dim"):
            assert getattr(shape, field) == getattr(config, field), field
    assert model_shape("cpu-tiny").num_key_value_heads == 6  # None: one per attention head, as LlamaConfig
    assert model_shape("cpu-tiny").max_position_embeddings == 128  # the preset's sequence length


def test_the_command_trains_the_plain_model_without_importing_transformers(tmp_path):
    """`python -m helpers.training --implementation fast` never imports transformers (3 s of every start)."""
    import subprocess
    import sys

    probe = ("import sys, runpy; sys.argv = ['helpers.training'] + sys.argv[1:]\n"
             "try:\n    runpy.run_module('helpers.training', run_name='__main__')\n"
             "finally:\n    print('transformers imported:', 'transformers' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", probe, "--synthetic", "--vocab-size", "97", "--steps", "2",
                          "--global-batch-size", "2", "--seq-length", "16", "--model", "hidden_size=24",
                          "--model", "num_attention_heads=2", "--model", "num_hidden_layers=1",
                          "--implementation", "fast", "--no-progress"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "transformers imported: False" in run.stdout and "2 steps on 1 process(es)" in run.stdout, run.stdout


def test_the_loop_hands_document_ids_only_to_a_model_that_masks_packed_rows_itself():
    from helpers.common.errors import UserError
    from helpers.training.train import packed_rows, to_device

    inputs, labels = batch(rows=2, length=8)
    plain = {"input_ids": inputs, "labels": labels, "position_ids": torch.arange(8).expand(2, 8),
             "document_ids": torch.zeros(2, 8, dtype=torch.long)}
    packed = {**plain, "position_ids": torch.tensor([0, 1, 2, 0, 1, 2, 3, 4]).expand(2, 8),
              "document_ids": torch.tensor([0, 0, 0, 1, 1, 1, 1, 1]).expand(2, 8)}
    assert not packed_rows(plain["position_ids"]) and packed_rows(packed["position_ids"])
    llama, fast = pair()
    cpu = torch.device("cpu")
    assert "document_ids" not in to_device(plain, cpu, fast) and "document_ids" not in to_device(packed, cpu, llama)
    with pytest.raises(UserError, match="CUDA only"):  # FlexAttention has no backward on CPU: said, not crashed
        to_device(packed, cpu, fast)


def test_under_autocast_the_residual_stream_is_bf16_and_the_logits_close():
    llama, fast = pair()
    fast, llama = fast.float(), llama.float()
    seen = []
    fast.model.layers[1].register_forward_pre_hook(lambda module, args: seen.append(args[0].dtype))
    inputs, _ = batch()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        ours = fast(input_ids=inputs).logits.float()
        theirs = llama(input_ids=inputs).logits.float()
    assert seen == [torch.bfloat16]
    assert (ours - theirs).abs().max() < 0.05 * theirs.abs().max()  # bf16 rounding, not another function


@pytest.mark.parametrize("implementation", ["fast", "transformers"])
def test_the_loss_traces_as_one_graph_so_it_compiles_with_fullgraph(implementation):
    from helpers.training.train import next_token_loss

    model = build_model(llama_config("cpu-tiny", **SHAPE), implementation=implementation)
    inputs, labels = batch(rows=2)
    plain = {"input_ids": inputs, "labels": labels, "position_ids": torch.arange(32).expand_as(inputs)}
    explained = torch._dynamo.explain(lambda b: next_token_loss(model, b, reduction="sum"))(plain)
    assert explained.graph_count == 1 and explained.graph_break_count == 0, explained.break_reasons


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_packed_rows_train_compiled_in_bf16_on_cuda():
    """The h100 preset's settings (bf16, torch.compile with FlexAttention's document mask) on packed rows."""
    from helpers.training.train import train, train_settings

    model = build_model(llama_config("cpu-tiny", **{**SHAPE, "hidden_size": 96, "intermediate_size": 192}), "cuda",
                        seed=3, implementation="fast")
    inputs, labels = batch(rows=2)
    documents = torch.zeros_like(inputs)
    documents[:, 12:] = 1
    positions = torch.cat([torch.arange(12), torch.arange(20)]).expand_as(inputs)
    packed = {"input_ids": inputs, "labels": labels, "position_ids": positions, "document_ids": documents}
    settings = train_settings("h100", steps=4, batch_size=2, seq_length=32, eval_every=0, eval_batches=1,
                              warmup_steps=1, lr=3e-3, min_lr=3e-3)
    result = train(model, [packed] * 4, settings, "cuda", eval_batches=[packed], progress=False)
    losses = [row["loss"] for row in result.log]
    assert all(torch.isfinite(torch.tensor(losses))) and losses[-1] < losses[0]
    assert result.eval_loss < losses[0]  # a NaN fails this too
