"""megatron-core 0.16.1 as the peer tests' reference: its dataset builder (`megatron_build`), and Megatron-LM's
`tools/preprocess_data.py` encode loop rebuilt on it (`megatron_preprocess`).

The script itself lives in the Megatron-LM repository, not in the megatron-core wheel; its loop is
short: build the tokenizer with megatron-core's `build_tokenizer` (HuggingFaceTokenizer), per JSON line
`ids = tokenizer.tokenize(text)` (for a list of strings, each one, its ids a sequence if there are any),
append `tokenizer.eod` to a non-empty document with --append-eod, `IndexedDatasetBuilder.add_document(ids,
sequence lengths)`, then `finalize`, in the dtype
`DType.optimal_dtype(tokenizer.vocab_size)`. Running the real script on the same inputs gives the
same bytes (see benchmarks/preprocess_throughput.py, which can run it from a checkout).
"""

from __future__ import annotations

import functools
import json
import warnings
from types import SimpleNamespace

import torch


@functools.cache
def core() -> SimpleNamespace:
    """The megatron-core pieces used here, imported at the first test that needs them: importing megatron-core
    takes about 3 s, which collecting these tests on a worker that runs none of them should not pay."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.datasets import helpers, indexed_dataset
        from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
        from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig, _get_ltor_masks_and_position_ids
        from megatron.core.datasets.utils import get_blend_from_list
        from megatron.core.tokenizers.text.utils.build_tokenizer import build_tokenizer
    return SimpleNamespace(indexed_dataset=indexed_dataset, helpers=helpers,
                           BlendedMegatronDatasetBuilder=BlendedMegatronDatasetBuilder, GPTDataset=GPTDataset,
                           GPTDatasetConfig=GPTDatasetConfig, get_blend_from_list=get_blend_from_list,
                           build_tokenizer=build_tokenizer, ltor_masks=_get_ltor_masks_and_position_ids)


def megatron_tokenizer(folder: str):
    """megatron-core's HuggingFaceTokenizer with preprocess_data.py's default arguments."""
    args = SimpleNamespace(
        tokenizer_type="HuggingFaceTokenizer", tokenizer_model=str(folder), vocab_file=None, merge_file=None,
        tokenizer_special_tokens=None, tokenizer_hf_use_fast=False, trust_remote_code=False,
        tokenizer_hf_include_special_tokens=False, tokenizer_metadata=None, vocab_size=None,
    )
    return core().build_tokenizer(args)


def megatron_preprocess(jsonl: str, output_prefix: str, folder: str, key: str = "text", append_eod: bool = True):
    tokenizer = megatron_tokenizer(folder)
    prefix = f"{output_prefix}_{key}_document"
    indexed_dataset = core().indexed_dataset
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


def megatron_build(data_path, split, sizes, seq_length, seed, blend_per_split=None, eod=128001, vocab_size=128_256,
                   **options):
    """(train, valid, test) as megatron-core's BlendedMegatronDatasetBuilder builds them (no index cache)."""
    megatron = core()
    get_blend_from_list = megatron.get_blend_from_list
    config = megatron.GPTDatasetConfig(
        random_seed=seed, sequence_length=seq_length, split=split,
        blend=get_blend_from_list(data_path) if data_path else None,
        blend_per_split=[get_blend_from_list(b) if b else None for b in blend_per_split] if blend_per_split else None,
        tokenizer=SimpleNamespace(vocab_size=vocab_size, eod=eod, pad=-1, special_tokens_dict={},
                                  unique_identifiers={"class": "llama3"}),
        reset_position_ids=options.get("reset_position_ids", False),
        reset_attention_mask=options.get("reset_attention_mask", False),
        eod_mask_loss=options.get("eod_mask_loss", False),
        path_to_cache=None, mmap_bin_files=True,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return megatron.BlendedMegatronDatasetBuilder(megatron.GPTDataset, list(sizes), lambda: True, config).build()
