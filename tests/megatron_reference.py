"""Megatron-LM's `tools/preprocess_data.py` encode loop, rebuilt on megatron-core 0.16.1 for the peer tests.

The script itself lives in the Megatron-LM repository, not in the megatron-core wheel; its loop is
short: build the tokenizer with megatron-core's `build_tokenizer` (HuggingFaceTokenizer), per JSON line
`ids = tokenizer.tokenize(text)` (for a list of strings, each one, its ids a sequence if there are any),
append `tokenizer.eod` to a non-empty document with --append-eod, `IndexedDatasetBuilder.add_document(ids,
sequence lengths)`, then `finalize`, in the dtype
`DType.optimal_dtype(tokenizer.vocab_size)`. Running the real script on the same inputs gives the
same bytes (see benchmarks/preprocess_throughput.py, which can run it from a checkout).
"""

from __future__ import annotations

import json
import warnings
from types import SimpleNamespace

import torch

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from megatron.core.datasets import indexed_dataset
    from megatron.core.tokenizers.text.utils.build_tokenizer import build_tokenizer


def megatron_tokenizer(folder: str):
    """megatron-core's HuggingFaceTokenizer with preprocess_data.py's default arguments."""
    args = SimpleNamespace(
        tokenizer_type="HuggingFaceTokenizer", tokenizer_model=str(folder), vocab_file=None, merge_file=None,
        tokenizer_special_tokens=None, tokenizer_hf_use_fast=False, trust_remote_code=False,
        tokenizer_hf_include_special_tokens=False, tokenizer_metadata=None, vocab_size=None,
    )
    return build_tokenizer(args)


def megatron_preprocess(jsonl: str, output_prefix: str, folder: str, key: str = "text", append_eod: bool = True):
    tokenizer = megatron_tokenizer(folder)
    prefix = f"{output_prefix}_{key}_document"
    builder = indexed_dataset.IndexedDatasetBuilder(
        f"{prefix}.bin", dtype=indexed_dataset.DType.optimal_dtype(tokenizer.vocab_size))
    with open(jsonl, encoding="utf-8") as handle:
        for line in handle:
            value = json.loads(line)[key]
            ids, lengths = [], []
            for sentence in value if isinstance(value, list) else [value]:  # a list: one sequence per string
                sentence_ids = list(tokenizer.tokenize(sentence))
                if sentence_ids:
                    ids += sentence_ids
                    lengths.append(len(sentence_ids))
            if ids and append_eod:
                ids.append(tokenizer.eod)
                lengths[-1] += 1
            builder.add_document(torch.tensor(ids, dtype=torch.int64), lengths)
    builder.finalize(f"{prefix}.idx")
    return prefix
