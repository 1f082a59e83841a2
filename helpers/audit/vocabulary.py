"""What the highest id seen says about the data's vocabulary, once `WRAP_TOKENS` tokens have come.

BPE vocabularies number their tokens by merge order, so real text reaches the top of its own vocabulary's range
within a few thousand tokens: over any 16,384 tokens of the machine's text the highest id was at least 0.77 of
the vocabulary for Llama 3 (English text leaves its multilingual top alone), 0.90 for Mistral, 0.97 for cl100k,
0.62 for an 8,192-id BPE on text in scripts it was not trained on. Two bugs stay far below:

- ids from a smaller vocabulary (a 32,000-id tokenizer's data under a model of 50,257, 100,277 or 128,256 ids:
  0.64 to 0.25): `vocab-mismatch`, below `MISMATCH_SHARE` of the model's vocabulary;
- ids wrapped by a uint16 array under a vocabulary above 65,536: every id below 65,536, yet up against it (the
  wrapped ids fill the range): `id-wraparound`, from `WRAPPED_SHARE` of 65,536 up.
Vocabularies of `SMALLEST` ids or fewer are bytes, whose ASCII text uses under half of them: not judged.
"""

from __future__ import annotations

from .statistics import WRAP_LIMIT, WRAP_TOKENS

MISMATCH_SHARE = 0.7
WRAPPED_SHARE = 0.9
SMALLEST = 1024


def verdict(max_id: int, vocab_size: int, tokenizer_vocab: int | None = None) -> tuple[str, str] | None:
    """(code, line) for the highest id of the first `WRAP_TOKENS` tokens, or None when it is what real data gives."""
    if vocab_size > WRAP_LIMIT and WRAPPED_SHARE * WRAP_LIMIT <= max_id < WRAP_LIMIT:
        return "id-wraparound", (
            f"no id >= 65,536 in the first {WRAP_TOKENS:,} tokens of a {vocab_size:,}-id vocabulary, though the ids "
            f"reach {max_id:,}, up against 65,535 (real text uses ids from 65,536 up for about 2% of its tokens): ids "
            "wrapped by a uint16 array; fix: store them as int32 or int64")
    if vocab_size <= SMALLEST or max_id >= MISMATCH_SHARE * vocab_size:
        return None
    theirs = (f"; the tokenizer given has {tokenizer_vocab:,} ids" if tokenizer_vocab is not None
              and tokenizer_vocab != vocab_size else "")
    return "vocab-mismatch", (
        f"the highest id in the first {WRAP_TOKENS:,} tokens is {max_id:,}, {max_id / vocab_size:.0%} of the model's "
        f"{vocab_size:,}-id vocabulary{theirs} (real text reaches 77% or more of its own tokenizer's ids by then): the "
        f"data looks tokenized with a vocabulary of about {max_id + 1:,} ids, so the model reads another tokenizer's "
        "ids and never uses its upper embeddings; fix: preprocess the data with the model's tokenizer, or make the "
        "model for the data's tokenizer (vocab_size = that tokenizer's size)")
