"""A Megatron-style preprocessing baseline: the pool layout of Megatron-LM's tools/preprocess_data.py.

Used by preprocess_throughput.py when no Megatron-LM checkout is given, and by notebook 02. Like
Megatron: a multiprocessing pool reads raw JSON lines with `imap(..., chunksize=32)`, each worker parses
one line and encodes its text, appends EOD; the main process writes the documents in order.

    python benchmarks/megatron_style_baseline.py INPUT.jsonl OUTPUT_PREFIX TOKENIZER WORKERS
        [--library hf|zoo] [--repeats N]

`--library hf` (the default): TOKENIZER is a Hugging Face folder, called as megatron-core's
HuggingFaceTokenizer calls it (tokenize, then convert the tokens to ids). `--library zoo`: TOKENIZER is
a zoo name (llama3 encodes with tiktoken), in the same pool layout: the pipeline stays Megatron's and
only the tokenizer library changes, so the two runs separate what the library contributes.

The last line on stdout is JSON: the encode loop's seconds (the median of `--repeats` passes over the
input, each writing the output again), timed from the moment every worker holds its tokenizer to the
files in place, so interpreter and tokenizer start-up are left out; and the bytes, documents and tokens.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import time

_encoder = None


def _load(library: str, tokenizer: str):
    """(encode, eod id, vocabulary length) for one tokenizer, loaded the way `library` is used."""
    if library == "hf":
        from transformers import AutoTokenizer

        hf = AutoTokenizer.from_pretrained(tokenizer)
        return (lambda text: hf.convert_tokens_to_ids(hf.tokenize(text))), hf.eos_token_id, len(hf)
    from helpers.tokenizers.zoo import load_tokenizer

    zoo = load_tokenizer(tokenizer)
    # Hugging Face tokenizers turn special-token strings into special ids: do the same, for the same bytes
    return (lambda text: zoo.encode(text, parse_special=True)), zoo.eod_id, zoo.vocab_size


def _init(library: str, tokenizer: str, ready) -> None:
    global _encoder
    _encoder = _load(library, tokenizer)
    ready.wait()  # the clock starts once every worker is here


def _encode(line: str) -> list[int]:
    encode, eod_id, _ = _encoder
    ids = encode(json.loads(line)["text"])
    if ids:
        ids.append(eod_id)
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input")
    parser.add_argument("output_prefix")
    parser.add_argument("tokenizer", help="a Hugging Face folder (--library hf) or a zoo name (--library zoo)")
    parser.add_argument("workers", type=int)
    parser.add_argument("--library", choices=("hf", "zoo"), default="hf")
    parser.add_argument("--repeats", type=int, default=1, help="passes over the input; the median is reported")
    args = parser.parse_args()

    from helpers.datasets.indexed import IndexedWriter
    from helpers.tokenizers.token_dtype import optimal_dtype

    _, _, vocabulary = _load(args.library, args.tokenizer)
    dtype = optimal_dtype(vocabulary)
    ready = multiprocessing.Barrier(args.workers + 1)
    seconds, documents, tokens = [], 0, 0
    with multiprocessing.Pool(args.workers, _init, (args.library, args.tokenizer, ready)) as pool:
        ready.wait()
        for _ in range(args.repeats):
            start = time.perf_counter()
            documents = tokens = 0
            with open(args.input, encoding="utf-8") as lines:
                with IndexedWriter(f"{args.output_prefix}_text_document", dtype) as writer:
                    for ids in pool.imap(_encode, lines, 32):
                        writer.add_document(ids)
                        documents += 1
                        tokens += len(ids)
                    writer.finalize()
            seconds.append(time.perf_counter() - start)
    with open(args.input, "rb") as raw:
        size = len(raw.read())
    print(json.dumps({"encode_seconds": statistics.median(seconds), "bytes": size, "documents": documents,
                      "tokens": tokens, "library": args.library, "workers": args.workers}))


if __name__ == "__main__":
    main()
