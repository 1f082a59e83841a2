"""The margins of `helpers.audit`'s random-ids test, per tokenizer and domain: real 128-token windows of the
workshop corpus against as many windows of ids drawn uniformly, in one run.

    python benchmarks/audit_margins.py [--documents 400]

For each: the fewest equal pairs a real window had, the bound a window must stay within to count as
uniform, the most a uniform window had, and the margin (fewest real / bound: above 1, no real window is
called random). Also, for vocabularies above 65,536, the share of real tokens at or above it (what the
wrap-around check relies on), and the share of tokens equal to the next one (how well labels in the wrong
layout still match: the label check asks for 99%).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helpers.audit.statistics import WINDOW, WRAP_LIMIT, uniform_bound, window_pairs  # noqa: E402
from helpers.common.paths import RAW_DIR  # noqa: E402
from helpers.corpus.build import corpus_paths  # noqa: E402
from helpers.tokenizers.zoo import load_tokenizer  # noqa: E402

TOKENIZERS = ("llama3", "mistral", "cl100k", "bytes", "bpe")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=400, help="documents of each domain")
    args = parser.parse_args()
    texts = {domain: [json.loads(line)["text"] for line in path.open(encoding="utf-8")][:args.documents]
             for domain, path in corpus_paths(RAW_DIR).items()}
    rng = np.random.default_rng(0)
    print("tokenizer | vocab | domain | windows | fewest real pairs | uniform mean | bound | most uniform pairs "
          "| margin | share >= 65,536 | next id equal")
    for name in TOKENIZERS:
        tokenizer = load_tokenizer(name)
        vocab = tokenizer.vocab_size
        for domain, documents in texts.items():
            ids = np.array([i for text in documents for i in [*tokenizer.encode(text), tokenizer.eod_id]], np.int64)
            windows = ids[:len(ids) // WINDOW * WINDOW].reshape(-1, WINDOW)
            real = window_pairs(windows)
            uniform = window_pairs(rng.integers(0, vocab, windows.shape))
            mean, bound = uniform_bound(WINDOW, vocab)
            high = f"{np.mean(ids >= WRAP_LIMIT):.4f}" if vocab > WRAP_LIMIT else "-"
            print(f"{name} | {vocab:,} | {domain} | {len(windows):,} | {real.min()} | {mean:.2f} | {bound:.1f} | "
                  f"{uniform.max()} | {real.min() / bound:.2f} | {high} | {np.mean(ids[1:] == ids[:-1]):.3f}", flush=True)


if __name__ == "__main__":
    main()
