"""The shape of the workshop's Llama as plain data, and the weights transformers' `LlamaForCausalLM` starts from,
both without importing transformers (about 1.5 CPU seconds of every process that trains the plain-PyTorch Llama).

`LlamaShape` holds the fields of a transformers `LlamaConfig` that the models here read, with `LlamaConfig`'s
defaults (its key/value heads the attention heads when not given); `transformers_config()` gives the
`LlamaConfig` itself where transformers' model is asked for.

`TransformersLayout(shape)` is a module with the names and shapes of `LlamaForCausalLM`'s parameters, built and
drawn as transformers does: the decoder's layers built (each `nn.Linear` and `nn.Embedding` drawing torch's default
initialisation), then its matrices and embedding drawn from Normal(0, initializer_range), children before their
parent; then the output layer built and drawn the same way. The same modules built and drawn in the same order take
the same numbers from the generator, so after the same `torch.manual_seed` it holds transformers' initial weights
bit for bit (tests/test_fast_llama.py holds it to transformers' for several shapes).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class LlamaShape:
    """A Llama's shape and initialisation, as `LlamaConfig` names them."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int | None = None  # None: one per attention head (plain multi-head attention)
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = False
    rms_norm_eps: float = 1e-6
    initializer_range: float = 0.02

    def __post_init__(self):
        if self.num_key_value_heads is None:
            object.__setattr__(self, "num_key_value_heads", self.num_attention_heads)

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def transformers_config(self):
        """This shape as transformers' `LlamaConfig` (attention by PyTorch's scaled dot product)."""
        from transformers import LlamaConfig

        return LlamaConfig(**asdict(self), attn_implementation="sdpa")


class Scale(nn.Module):
    """A normalisation's learned scale, ones at the start (what a Llama's RMSNorm holds)."""

    def __init__(self, width: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))


class TransformersLayout(nn.Module):
    """Parameters named, shaped and initialised as `LlamaForCausalLM(shape)`'s (no forward: a source of weights,
    for `helpers.training.llama.from_transformers` or Megatron's `copy_llama_weights`)."""

    def __init__(self, shape: LlamaShape):
        super().__init__()
        self.config = shape
        hidden, heads, kv_heads = shape.hidden_size, shape.num_attention_heads, shape.num_key_value_heads
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(shape.vocab_size, hidden)
        self.model.layers = nn.ModuleList(self._layer(shape, hidden, heads, kv_heads)
                                          for _ in range(shape.num_hidden_layers))
        self.model.norm = Scale(hidden)
        self.model.apply(self._draw)  # the decoder is drawn before the output layer is built
        self.lm_head = nn.Linear(hidden, shape.vocab_size, bias=False)
        self._draw(self.lm_head)

    @staticmethod
    def _layer(shape: LlamaShape, hidden: int, heads: int, kv_heads: int) -> nn.Module:
        layer, width = nn.Module(), shape.head_dim
        layer.self_attn = nn.Module()
        for name, outputs in (("q_proj", heads), ("k_proj", kv_heads), ("v_proj", kv_heads)):
            setattr(layer.self_attn, name, nn.Linear(hidden, outputs * width, bias=False))
        layer.self_attn.o_proj = nn.Linear(heads * width, hidden, bias=False)
        layer.mlp = nn.Module()
        layer.mlp.gate_proj = nn.Linear(hidden, shape.intermediate_size, bias=False)
        layer.mlp.up_proj = nn.Linear(hidden, shape.intermediate_size, bias=False)
        layer.mlp.down_proj = nn.Linear(shape.intermediate_size, hidden, bias=False)
        layer.input_layernorm, layer.post_attention_layernorm = Scale(hidden), Scale(hidden)
        return layer

    def _draw(self, module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=self.config.initializer_range)
