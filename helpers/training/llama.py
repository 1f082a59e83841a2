"""A small plain-PyTorch Llama for training speed: the same function as transformers' `LlamaForCausalLM`,
with less around it.

What it does differently, each for a measured reason on a GPU:
- one matrix for query, key and value, and one for the gate and up projections (two matrix multiplies per
  block fewer, on wider matrices);
- the rotary cosine and sine tables computed once, as buffers, and indexed by position;
- attention by `scaled_dot_product_attention(is_causal=True)` for plain rows (a flash kernel, the causal half
  only), never a dense `[B, 1, S, S]` mask; packed rows (`document_ids` given) by FlexAttention with a
  document block mask, exact and still block-sparse;
- the residual stream in the dtype of the weights' compute (bf16 under autocast), normalisation in float32.

Its parameters have the names and shapes of a transformers Llama where they can, and `from_transformers`
copies a `LlamaForCausalLM`'s weights in: the same logits and gradients (tested in float64 on CPU), so a
notebook's figures keep their meaning whichever model trained.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class CausalLMOutput:
    """What `next_token_loss` reads from a model's forward: the logits, `[batch, seq, vocab]`, or, when asked
    for them instead (a fused output layer and loss), the last hidden states, `[batch, seq, hidden]`."""

    logits: torch.Tensor | None
    hidden_states: torch.Tensor | None = None


class RMSNorm(nn.Module):
    """Root-mean-square normalisation with a learned scale, computed in float32 at least (as Llama's)."""

    def __init__(self, width: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        wide = x.to(torch.promote_types(x.dtype, torch.float32))
        normed = wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * normed.to(x.dtype)


def rotary_tables(head_dim: int, positions: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Cosine and sine of every position's rotary angles, `[positions, head_dim]`, in float32 (the halves
    layout: the angle of pair i repeated at i and i + head_dim/2)."""
    inverse_frequency = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim)
    angles = torch.outer(torch.arange(positions, dtype=torch.float32), inverse_frequency)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos(), angles.sin()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of `x` (`[B, S, heads, d]`, as the projection lays it out) with per-token `cos`/`sin`
    (`[B, S, 1, d]`), in the dtype of `x` (bf16 under autocast, so query, key and value reach attention in one
    dtype). Rotating before the heads are transposed keeps this elementwise pass, and its backward, on
    contiguous memory: on an H100 the transposed version's backward took 17% of the step."""
    first, second = x.chunk(2, dim=-1)
    return x * cos.to(x.dtype) + torch.cat((-second, first), dim=-1) * sin.to(x.dtype)


def document_block_mask(document_ids: torch.Tensor):
    """FlexAttention's block mask for packed rows: a query attends to keys before it in its own document."""
    from torch.nn.attention.flex_attention import create_block_mask

    def same_document_causal(b, h, q, k):
        return (document_ids[b, q] == document_ids[b, k]) & (q >= k)

    rows, length = document_ids.shape
    return create_block_mask(same_document_causal, B=rows, H=None, Q_LEN=length, KV_LEN=length,
                             device=document_ids.device)


class Attention(nn.Module):
    """Grouped-query attention with one fused query/key/value projection."""

    def __init__(self, hidden: int, heads: int, kv_heads: int):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.qkv_proj = nn.Linear(hidden, (heads + 2 * kv_heads) * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, block_mask=None) -> torch.Tensor:
        rows, length, _ = x.shape
        heads = self.qkv_proj(x).view(rows, length, self.heads + 2 * self.kv_heads, self.head_dim)
        query, key, value = heads.split((self.heads, self.kv_heads, self.kv_heads), dim=2)
        query, key = rotate(query, cos, sin), rotate(key, cos, sin)
        query, key, value = (t.transpose(1, 2) for t in (query, key, value))  # [B, heads, S, d] for attention
        grouped = self.kv_heads != self.heads
        if block_mask is None:
            out = F.scaled_dot_product_attention(query, key, value, is_causal=True, enable_gqa=grouped)
        else:
            from torch.nn.attention.flex_attention import flex_attention

            out = flex_attention(query, key, value, block_mask=block_mask, enable_gqa=grouped)
        return self.o_proj(out.transpose(1, 2).reshape(rows, length, -1))


class MLP(nn.Module):
    """SwiGLU with one fused gate/up projection."""

    def __init__(self, hidden: int, intermediate: int):
        super().__init__()
        self.gate_up_proj = nn.Linear(hidden, 2 * intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(F.silu(gate) * up)


class Block(nn.Module):
    """One pre-norm decoder layer: attention, then the MLP, each added to the residual stream."""

    def __init__(self, config):
        super().__init__()
        heads = config.num_attention_heads
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.self_attn = Attention(config.hidden_size, heads, config.num_key_value_heads or heads)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = MLP(config.hidden_size, config.intermediate_size)

    def forward(self, x, cos, sin, block_mask=None):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, block_mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    """The embedding, the layers and the final norm (`model.model`, as in transformers)."""

    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)


class FastLlama(nn.Module):
    """A Llama language model from a transformers `LlamaConfig` (untied output layer, rotary positions).

    `model(input_ids=, position_ids=None, document_ids=None).logits`: plain causal rows when
    `document_ids` is None; otherwise each token attends only within its document (packed rows).
    `final_hidden=True` returns the normed last hidden states instead of the logits, for a loss that applies
    the output layer itself (`helpers.training.fused_loss`).
    """

    takes_document_ids = True  # the training loop hands it `document_ids` where rows are packed
    returns_final_hidden = True  # `final_hidden=True`: the last hidden states, for a fused output layer + loss

    def __init__(self, config):
        super().__init__()
        if config.tie_word_embeddings:
            raise ValueError("FastLlama keeps its output layer untied; set tie_word_embeddings=False")
        self.config = config
        self.model = Decoder(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        base = float((getattr(config, "rope_parameters", None) or {}).get("rope_theta", 10000.0))
        cos, sin = rotary_tables(config.hidden_size // config.num_attention_heads,
                                 config.max_position_embeddings, base)
        self.register_buffer("rotary_cos", cos, persistent=False)
        self.register_buffer("rotary_sin", sin, persistent=False)
        self.apply(self._initialise)

    def _initialise(self, module: nn.Module) -> None:
        """Normal(0, initializer_range) matrices and embeddings, as transformers initialises a Llama."""
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=self.config.initializer_range)

    def forward(self, input_ids: torch.Tensor, position_ids: torch.Tensor | None = None,
                document_ids: torch.Tensor | None = None, final_hidden: bool = False, **unused) -> CausalLMOutput:
        length = input_ids.shape[1]
        if position_ids is None:
            position_ids = torch.arange(length, device=input_ids.device).expand_as(input_ids)
        x = self.model.embed_tokens(input_ids)
        if torch.is_autocast_enabled(x.device.type):  # the residual stream in the autocast dtype (bf16)
            x = x.to(torch.get_autocast_dtype(x.device.type))
        cos, sin = self.rotary_cos[position_ids].unsqueeze(2), self.rotary_sin[position_ids].unsqueeze(2)
        block_mask = None if document_ids is None else document_block_mask(document_ids)
        for layer in self.model.layers:
            x = layer(x, cos, sin, block_mask)
        x = self.model.norm(x)
        return CausalLMOutput(None, x) if final_hidden else CausalLMOutput(self.lm_head(x))


@torch.no_grad()
def from_transformers(llama) -> FastLlama:
    """A `FastLlama` with the weights of a transformers `LlamaForCausalLM` (fused where it fuses them)."""
    fast = FastLlama(llama.config).to(device=llama.lm_head.weight.device, dtype=llama.lm_head.weight.dtype)
    fast.model.embed_tokens.weight.copy_(llama.model.embed_tokens.weight)
    for ours, theirs in zip(fast.model.layers, llama.model.layers):
        attention = theirs.self_attn
        ours.self_attn.qkv_proj.weight.copy_(torch.cat((attention.q_proj.weight, attention.k_proj.weight,
                                                        attention.v_proj.weight)))
        ours.self_attn.o_proj.weight.copy_(attention.o_proj.weight)
        ours.mlp.gate_up_proj.weight.copy_(torch.cat((theirs.mlp.gate_proj.weight, theirs.mlp.up_proj.weight)))
        ours.mlp.down_proj.weight.copy_(theirs.mlp.down_proj.weight)
        ours.input_layernorm.weight.copy_(theirs.input_layernorm.weight)
        ours.post_attention_layernorm.weight.copy_(theirs.post_attention_layernorm.weight)
    fast.model.norm.weight.copy_(llama.model.norm.weight)
    fast.lm_head.weight.copy_(llama.lm_head.weight)
    return fast
