"""What a tokenizer costs: compression, encoding speed, disk per token, embedding parameters."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

from .tokenizers import ZooTokenizer


@dataclass
class EncodingMeasurement:
    """One timed encode of a set of texts."""

    tokenizer: str
    texts: int
    bytes: int
    tokens: int
    seconds: float

    @property
    def bytes_per_token(self) -> float:
        return self.bytes / max(self.tokens, 1)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds

    @property
    def megabytes_per_second(self) -> float:
        return self.bytes / 1e6 / self.seconds


def measure_encoding(tokenizer: ZooTokenizer, texts: Sequence[str], repeats: int = 1) -> EncodingMeasurement:
    """Encode `texts` with the tokenizer's batch encoder; keep the fastest of `repeats` timings."""
    text_bytes = sum(len(t.encode("utf-8")) for t in texts)
    best, tokens = float("inf"), 0
    for _ in range(repeats):
        start = time.perf_counter()
        ids = tokenizer.encode_batch(texts)
        best = min(best, time.perf_counter() - start)
        tokens = sum(len(x) for x in ids)
    return EncodingMeasurement(tokenizer.name, len(texts), text_bytes, tokens, best)


def token_pieces(tokenizer: ZooTokenizer, text: str) -> list[str]:
    """How `text` splits: each token decoded on its own (a piece of a multi-byte character shows as �)."""
    return [tokenizer.decode([i]) for i in tokenizer.encode(text)]


def disk_bytes_per_text_byte(tokenizer: ZooTokenizer, bytes_per_token: float) -> float:
    """Bytes on disk in a Megatron `.bin` for each byte of raw text: itemsize / compression."""
    return tokenizer.megatron_dtype.itemsize / bytes_per_token


def llama_parameter_split(vocab_size: int, hidden_size: int, num_layers: int, intermediate_size: int,
                          num_heads: int, tie_embeddings: bool = False) -> dict[str, int]:
    """Parameters of a transformers Llama with this shape, split into vocabulary and body.

    The model is built on the meta device: nothing is allocated, the count is exact.
    """
    import torch
    from transformers import LlamaForCausalLM

    from .train import llama_config

    config = llama_config("h100", vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=num_layers,
                          intermediate_size=intermediate_size, num_attention_heads=num_heads,
                          num_key_value_heads=num_heads, tie_word_embeddings=tie_embeddings)
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    total = sum(p.numel() for p in model.parameters())
    vocabulary = model.model.embed_tokens.weight.numel()
    if not tie_embeddings:
        vocabulary += model.lm_head.weight.numel()
    return {"total": total, "vocabulary": vocabulary, "body": total - vocabulary}
