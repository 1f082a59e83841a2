"""A Megatron-style preprocessing baseline: the pool layout of Megatron-LM's tools/preprocess_data.py.

Used by preprocess_throughput.py when no Megatron-LM checkout is given. Like Megatron: a
multiprocessing pool reads raw JSON lines with `imap(..., chunksize=32)`, each worker parses one line
and calls the Hugging Face tokenizer on its text (tokenize, then ids, as megatron-core's
HuggingFaceTokenizer does), appends EOD; the main process writes the documents in order.

    python benchmarks/megatron_style_baseline.py INPUT.jsonl OUTPUT_PREFIX HF_FOLDER WORKERS
"""

from __future__ import annotations

import json
import multiprocessing
import sys

_tokenizer = None


def _init(folder: str) -> None:
    global _tokenizer
    from transformers import AutoTokenizer

    _tokenizer = AutoTokenizer.from_pretrained(folder)


def _encode(line: str) -> list[int]:
    text = json.loads(line)["text"]
    ids = _tokenizer.convert_tokens_to_ids(_tokenizer.tokenize(text))
    if ids:
        ids.append(_tokenizer.eos_token_id)
    return ids


def main() -> None:
    from transformers import AutoTokenizer

    from helpers.indexed import IndexedWriter, optimal_dtype

    source, prefix, folder, workers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    dtype = optimal_dtype(len(AutoTokenizer.from_pretrained(folder)))
    with open(source, encoding="utf-8") as lines, multiprocessing.Pool(workers, _init, (folder,)) as pool:
        with IndexedWriter(f"{prefix}_text_document", dtype) as writer:
            for ids in pool.imap(_encode, lines, 32):
                writer.add_document(ids)
            writer.finalize()


if __name__ == "__main__":
    main()
