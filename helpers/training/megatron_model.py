"""megatron-core's own `GPTModel`, shaped as the workshop's small Llama, fed by megatron-core's own
`GPTDataset` reading the workshop's prefixes.

On a GPU the model is megatron-core's local layer spec unchanged (its `DotProductAttention` and
`RotaryEmbedding`). Those two are its only parts a data-parallel run (tensor and pipeline parallel size 1)
cannot use without CUDA: the attention allocates its work buffer on the current CUDA device and the rotary
tables are built there. So on a CPU the spec's `core_attention` slot, the place megatron-core gives for
another attention, takes `SdpaCoreAttention` (torch's scaled-dot-product attention, causal, rotary applied
to queries and keys), and the model is built without its own position embedding. Nothing inside
megatron-core is changed. Its `DistributedDataParallel` and optimizers want CUDA too, so the examples wrap
the model in torch's `DistributedDataParallel` and step torch's Adam, on CPU and GPU alike.
`copy_llama_weights` starts it from a transformers Llama's weights: the same logits, so the same loss curve.
"""

from __future__ import annotations

import logging
import warnings
from contextlib import contextmanager
from types import SimpleNamespace

import torch
import torch.nn.functional as F

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "Transformer Engine and Apex are not installed": the local spec needs neither
    from megatron.core import parallel_state
    from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
    from megatron.core.datasets.utils import get_blend_from_list
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer import MegatronModule, TransformerConfig
    from megatron.core.transformer.spec_utils import ModuleSpec

from ..datasets.sidecar import data_facts


def rotated(x: torch.Tensor, base: float) -> torch.Tensor:
    """Rotary position embedding of `x` ([sequence, batch, heads, head_dim]) at positions 0, 1, ...; the
    halves layout (not interleaved), as megatron-core's default and Llama's."""
    length, width = x.shape[0], x.shape[-1]
    inverse_frequency = base ** (-torch.arange(0, width, 2, device=x.device, dtype=torch.float32) / width)
    angles = torch.outer(torch.arange(length, device=x.device, dtype=torch.float32), inverse_frequency)
    angles = torch.cat((angles, angles), dim=-1)[:, None, None, :]
    first, second = x.chunk(2, dim=-1)
    turned = torch.cat((-second, first), dim=-1)
    return x * angles.cos().to(x.dtype) + turned * angles.sin().to(x.dtype)


class SdpaCoreAttention(MegatronModule):
    """Causal attention by `torch.nn.functional.scaled_dot_product_attention`, rotary applied first; takes
    and returns what megatron-core's core attention does ([s, b, heads, d] in, [s, b, heads * d] out)."""

    def __init__(self, config: TransformerConfig, layer_number: int, attn_mask_type, attention_type: str,
                 attention_dropout: float | None = None, softmax_scale: float | None = None,
                 rotary_base: float = 10000.0, **unused):
        super().__init__(config=config)
        self.softmax_scale, self.rotary_base = softmax_scale, rotary_base

    def forward(self, query, key, value, attention_mask, attn_mask_type=None, attention_bias=None,
                packed_seq_params=None):
        if packed_seq_params is not None or attention_bias is not None:
            raise NotImplementedError("SdpaCoreAttention takes plain causal rows only")
        query, key = rotated(query, self.rotary_base), rotated(key, self.rotary_base)
        query, key, value = (x.permute(1, 2, 0, 3) for x in (query, key, value))  # [b, heads, s, d]
        out = F.scaled_dot_product_attention(query, key, value, is_causal=True, scale=self.softmax_scale,
                                             enable_gqa=key.shape[1] != query.shape[1])
        return out.permute(2, 0, 1, 3).flatten(2)


def start_megatron(seed: int, device: torch.device) -> None:
    """megatron-core's process groups (tensor and pipeline parallel 1: data parallel over every rank),
    and on CUDA its model-parallel random state, which its attention's dropout draws from."""
    if not parallel_state.model_parallel_is_initialized():
        parallel_state.initialize_model_parallel(1, 1)
    if device.type == "cuda":
        from megatron.core.tensor_parallel import model_parallel_cuda_manual_seed

        model_parallel_cuda_manual_seed(seed)


def megatron_gpt(config, device: torch.device, seed: int = 0) -> GPTModel:
    """A `GPTModel` with the shape of a transformers `LlamaConfig`: RMSNorm, SwiGLU, no biases, rotary
    positions, grouped-query attention as configured, untied output layer, float32."""
    rope_base = float((getattr(config, "rope_parameters", None) or {}).get("rope_theta", 10000.0))
    transformer = TransformerConfig(
        num_layers=config.num_hidden_layers, hidden_size=config.hidden_size,
        ffn_hidden_size=config.intermediate_size, num_attention_heads=config.num_attention_heads,
        num_query_groups=config.num_key_value_heads or config.num_attention_heads, normalization="RMSNorm",
        layernorm_epsilon=config.rms_norm_eps, gated_linear_unit=True, activation_func=F.silu,
        add_bias_linear=False, attention_dropout=0.0, hidden_dropout=0.0, bias_dropout_fusion=False,
        init_method_std=config.initializer_range, use_cpu_initialization=device.type != "cuda",
        params_dtype=torch.float32, cuda_graph_scope=[])
    spec = get_gpt_layer_local_spec(normalization="RMSNorm")
    position_embedding = "rope"
    if device.type != "cuda":
        spec.submodules.self_attention.submodules.core_attention = ModuleSpec(
            module=SdpaCoreAttention, params={"rotary_base": rope_base})
        position_embedding = "none"
    torch.manual_seed(seed)
    model = GPTModel(transformer, spec, vocab_size=config.vocab_size,
                     max_sequence_length=config.max_position_embeddings,
                     position_embedding_type=position_embedding, rotary_base=int(rope_base),
                     share_embeddings_and_output_weights=bool(config.tie_word_embeddings))
    return model.to(device)


def megatron_train_samples(data_path: list[str], seq_length: int, num_samples: int, seed: int,
                           split: str = "100,0,0") -> GPTDataset:
    """megatron-core's train split of `data_path` (prefixes or a weighted blend), built by its
    `BlendedMegatronDatasetBuilder` with the tokenizer facts of the first prefix's sidecar (no valid or test
    samples asked for)."""
    blend = get_blend_from_list(data_path)
    facts = data_facts(blend[0][0])
    tokenizer = SimpleNamespace(vocab_size=facts.vocab_size, eod=facts.eod_id, pad=-1, special_tokens_dict={},
                                unique_identifiers={"class": facts.tokenizer})
    config = GPTDatasetConfig(random_seed=seed, sequence_length=seq_length, split=split, blend=blend,
                              tokenizer=tokenizer, reset_position_ids=False, reset_attention_mask=False,
                              eod_mask_loss=False, path_to_cache=None, mmap_bin_files=True,
                              create_attention_mask=False)
    with warnings.catch_warnings(), quiet_logger("megatron.core"):
        warnings.simplefilter("ignore")
        return BlendedMegatronDatasetBuilder(GPTDataset, [num_samples, 0, 0], lambda: True, config).build()[0]


@contextmanager
def quiet_logger(name: str):
    """Only errors from logger `name` while inside: megatron-core warns of an index cache nobody asked for."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def megatron_batch(samples, step: int, batch_size: int, ranks) -> dict[str, torch.Tensor]:
    """This rank's slice of global batch `step`, as Megatron's pretraining sampler cuts it (consecutive
    samples; rank r takes the r-th run of `batch_size`), in megatron-core's keys."""
    first = (step * ranks.world_size + ranks.rank) * batch_size
    return torch.utils.data.default_collate([samples[i] for i in range(first, first + batch_size)])


def from_our_layout(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A batch of `helpers.datasets.layout` in megatron-core's keys (labels at -100 become a loss mask)."""
    labelled = batch["labels"] != -100
    return {"tokens": batch["input_ids"], "labels": batch["labels"].clamp(min=0),
            "loss_mask": labelled.to(torch.float32), "position_ids": batch["position_ids"]}


def megatron_loss(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The mean token loss of a batch in megatron-core's keys: `GPTModel` gives each token's loss when
    handed labels, and the loss mask weighs them as Megatron's training loop does."""
    token_losses = model(batch["tokens"], batch["position_ids"], None, labels=batch["labels"])
    mask = batch["loss_mask"].to(token_losses.dtype)
    return (token_losses * mask).sum() / mask.sum()


@torch.no_grad()
def copy_llama_weights(gpt: GPTModel, llama) -> GPTModel:
    """`gpt` given the weights of a transformers `LlamaForCausalLM` of the same shape, so both start from
    the same point. Megatron keeps query, key and value in one matrix, grouped by key-value head (each
    group's queries, then its key, then its value), and the gate and up projections stacked in one."""
    config, source = llama.config, llama.model
    heads, groups = config.num_attention_heads, config.num_key_value_heads or config.num_attention_heads
    head_dim = config.hidden_size // heads
    gpt.embedding.word_embeddings.weight.copy_(source.embed_tokens.weight)
    for ours, theirs in zip(gpt.decoder.layers, source.layers):
        attention = theirs.self_attn
        query = attention.q_proj.weight.view(groups, heads // groups * head_dim, -1)
        key = attention.k_proj.weight.view(groups, head_dim, -1)
        value = attention.v_proj.weight.view(groups, head_dim, -1)
        ours.self_attention.linear_qkv.weight.copy_(torch.cat((query, key, value), dim=1).flatten(0, 1))
        ours.self_attention.linear_proj.weight.copy_(attention.o_proj.weight)
        ours.mlp.linear_fc1.weight.copy_(torch.cat((theirs.mlp.gate_proj.weight, theirs.mlp.up_proj.weight)))
        ours.mlp.linear_fc2.weight.copy_(theirs.mlp.down_proj.weight)
        ours.input_layernorm.weight.copy_(theirs.input_layernorm.weight)
        ours.pre_mlp_layernorm.weight.copy_(theirs.post_attention_layernorm.weight)
    gpt.decoder.final_layernorm.weight.copy_(source.norm.weight)
    gpt.output_layer.weight.copy_(llama.lm_head.weight)
    return gpt
