"""What a tokenizer costs: compression, encoding speed, disk per token, embedding parameters."""

from __future__ import annotations

import codecs
import re
import time
from dataclasses import dataclass
from typing import Sequence

from .zoo import ZooTokenizer


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
    return _fastest(tokenizer.name, lambda: sum(len(x) for x in tokenizer.encode_batch(texts)), texts, repeats)


def _fastest(name: str, encode_all, texts: Sequence[str], repeats: int) -> EncodingMeasurement:
    """Time `encode_all()` (which returns how many tokens it made of `texts`), keeping the fastest run."""
    best, tokens = float("inf"), 0
    for _ in range(repeats):
        start = time.perf_counter()
        tokens = encode_all()
        best = min(best, time.perf_counter() - start)
    return EncodingMeasurement(tokenizer=name, texts=len(texts), bytes=sum(len(t.encode("utf-8")) for t in texts),
                               tokens=tokens, seconds=best)


def measure_fast_encoding(tokenizer: ZooTokenizer, texts: Sequence[str], repeats: int = 1
                          ) -> EncodingMeasurement | None:
    """`measure_encoding` with fastokens, where it is proved to give the tokenizer's own ids (see
    `encoders.choose_encoder`); None for a vocabulary it is not proved on. Its vocabulary is loaded before
    the clock starts, as the tokenizer's own is."""
    from .encoders import choose_encoder, encode_flat, fast_tokenizer

    if not choose_encoder(tokenizer).fast:
        return None
    fast, texts = fast_tokenizer(tokenizer), list(texts)
    return _fastest(f"{tokenizer.name} (fastokens)", lambda: int(encode_flat(fast, texts)[0].size), texts, repeats)


def token_pieces(tokenizer: ZooTokenizer, text: str) -> list[str]:
    """How `text` splits: each token decoded on its own (a piece of a multi-byte character shows as �).

    Decoding one id at a time is what a loop over `decode([i])` gives you, and it can lie: a
    SentencePiece decoder drops the `▁` that starts a word, so its pieces seem to lose their spaces.
    `raw_pieces` shows what the vocabulary really holds.
    """
    return [tokenizer.decode([i]) for i in tokenizer.encode(text)]


def _hex_bytes(error: UnicodeDecodeError) -> tuple[str, int]:
    return "".join(f"<0x{b:02X}>" for b in error.object[error.start:error.end]), error.end


codecs.register_error("helpers_hex_bytes", _hex_bytes)


def _byte_level_to_bytes() -> dict[str, int]:
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return {char: byte for byte, char in bytes_to_unicode().items()}


def raw_pieces(tokenizer: ZooTokenizer, text: str) -> list[str]:
    """How `text` splits, as each token is stored in the vocabulary.

    SentencePiece pieces come as the model holds them: `▁` for a space, `<0xF0>` for a byte of a
    character the vocabulary lacks. Byte-level vocabularies (tiktoken files, a trained BPE, bytes) hold
    byte strings: a piece is shown as its text, and bytes that are only part of a character are
    written `<0xF0>` the same way.
    """
    from .zoo import BytesZooTokenizer, SentencePieceZooTokenizer, TiktokenZooTokenizer, TrainedBpeZooTokenizer

    ids = tokenizer.encode(text)
    if isinstance(tokenizer, SentencePieceZooTokenizer):
        return [tokenizer.processor.id_to_piece(i) for i in ids]
    if isinstance(tokenizer, TiktokenZooTokenizer):
        stored = [tokenizer.encoding.decode_single_token_bytes(i) for i in ids]
    elif isinstance(tokenizer, BytesZooTokenizer):
        stored = [bytes([i]) for i in ids]
    elif isinstance(tokenizer, TrainedBpeZooTokenizer):
        to_byte = _byte_level_to_bytes()
        stored = [bytes(to_byte[c] for c in tokenizer.backend.id_to_token(i)) for i in ids]
    else:
        return token_pieces(tokenizer, text)
    return [piece.decode("utf-8", errors="helpers_hex_bytes") for piece in stored]


def disk_bytes_per_text_byte(tokenizer: ZooTokenizer, bytes_per_token: float) -> float:
    """Bytes on disk in a Megatron `.bin` for each byte of raw text: itemsize / compression."""
    return tokenizer.megatron_dtype.itemsize / bytes_per_token


def llama_parameter_split(vocab_size: int, hidden_size: int, num_layers: int, intermediate_size: int,
                          num_heads: int, num_kv_heads: int | None = None,
                          tie_embeddings: bool = False) -> dict[str, int]:
    """Parameters of a Llama (as `transformers` builds it) with this shape, split into vocabulary and body.

    vocabulary: V·h for the embedding, and V·h again for the LM head unless tied.
    each layer: q and o are h·h; k and v are h·(kv_heads·head_dim) (grouped-query attention shares
    them); the MLP's gate, up and down are 3·h·I; two RMSNorm weights are 2·h. No biases.
    body: layers · (that) + h for the final norm.
    """
    num_kv_heads = num_kv_heads or num_heads
    head_dim = hidden_size // num_heads
    attention = 2 * hidden_size * hidden_size + 2 * hidden_size * num_kv_heads * head_dim
    mlp = 3 * hidden_size * intermediate_size
    norms = 2 * hidden_size
    body = num_layers * (attention + mlp + norms) + hidden_size
    vocabulary = vocab_size * hidden_size * (1 if tie_embeddings else 2)
    return {"total": body + vocabulary, "vocabulary": vocabulary, "body": body}


def hub_style_tokenizer(tokenizer: ZooTokenizer):
    """A tiktoken-file tokenizer converted the way the model hubs' `tokenizer.json` files are built.

    transformers' `TikTokenConverter` puts the merge-learned ids in the BPE model and adds the special
    tokens on top, so `.vocab_size` counts only the first and `len(...)` counts both: for Llama 3,
    128,000 and 128,256. (The zoo's own export keeps every id in the model: its two numbers agree.)
    """
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    specials = sorted(tokenizer.special_tokens, key=tokenizer.special_tokens.get)
    backend = TikTokenConverter(vocab_file=str(tokenizer.bpe_file), pattern=tokenizer.pattern,
                                extra_special_tokens=specials).converted()
    return PreTrainedTokenizerFast(tokenizer_object=backend, eos_token=tokenizer.eod_token,
                                   bos_token=tokenizer.bos_token, clean_up_tokenization_spaces=False)


def tokenizers_for_measuring(names: Sequence[str], bpe_training_texts: Sequence[str]) -> dict[str, ZooTokenizer]:
    """Zoo tokenizers by name, where `bpe` and `bpe-N` are trained on `bpe_training_texts` here.

    (The zoo's own `bpe` is trained on the first documents of each domain; training it on texts you
    choose lets you measure it on documents it has never seen.)
    """
    from .zoo import BPE_DEFAULT_VOCAB, TrainedBpeZooTokenizer, load_tokenizer, train_bpe

    chosen = {}
    for name in names:
        match = re.fullmatch(r"bpe(?:-(\d+))?", name)
        if match:
            size = int(match.group(1) or BPE_DEFAULT_VOCAB)
            chosen[name] = TrainedBpeZooTokenizer(name, train_bpe(bpe_training_texts, size))
        else:
            chosen[name] = load_tokenizer(name)
    return chosen
