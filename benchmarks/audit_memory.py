"""What a live `Auditor` holds over a long run: its digests and the process's memory, step by step, for nanoGPT's
`get_batch` (random offsets into the workshop corpus, tokenized with Llama 3) at 8 x 1,024 tokens a step.

    python benchmarks/audit_memory.py [--steps 1000000] [--remember 2097152] [--every 100000]

Every `--every` steps: the sample and batch digests held, the bytes of their frozen blocks, the newest
digests still in a dict, the process's resident memory (RSS) and its growth since the first step, and the
time a step takes. With the bound, the digests held stop growing at `--remember` and so does the memory.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helpers.audit.live import Auditor  # noqa: E402
from helpers.common.paths import RAW_DIR  # noqa: E402
from helpers.corpus.build import corpus_paths  # noqa: E402
from helpers.tokenizers.zoo import load_tokenizer  # noqa: E402


def corpus_tokens(documents: int) -> tuple[np.ndarray, int, int]:
    tokenizer = load_tokenizer("llama3")
    ids = [i for path in corpus_paths(RAW_DIR).values()
           for line in path.open(encoding="utf-8").readlines()[:documents]
           for i in [*tokenizer.encode(json.loads(line)["text"]), tokenizer.eod_id]]
    return np.array(ids, np.int64), tokenizer.vocab_size, tokenizer.eod_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--remember", type=int, default=None, help="the auditor's bound (default: its own)")
    parser.add_argument("--every", type=int, default=100_000)
    parser.add_argument("--documents", type=int, default=2000, help="documents of each corpus domain")
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--length", type=int, default=1024)
    args = parser.parse_args()
    ids, vocab, eod = corpus_tokens(args.documents)
    bound = {} if args.remember is None else {"remember": args.remember}
    auditor = Auditor(vocab_size=vocab, labels="shifted", eod_id=eod, on_finding="warn", **bound)
    process, rng = psutil.Process(), np.random.default_rng(0)
    print(f"{len(ids):,} corpus tokens; {args.steps:,} steps of {args.rows} x {args.length}; remember "
          f"{auditor.settings.remember:,}")
    print("step | sample digests | batch digests | frozen MB | newest in dict | RSS MB | RSS growth MB | ms a step")
    start = time.perf_counter()
    first_rss = None
    for step in range(1, args.steps + 1):
        starts = rng.integers(0, len(ids) - args.length - 1, args.rows)
        window = ids[starts[:, None] + np.arange(args.length + 1)]
        auditor.step({"input_ids": window[:, :-1], "labels": window[:, 1:]})
        if step == 1:
            first_rss = process.memory_info().rss
        if step % args.every == 0 or step == args.steps:
            seen, rss = auditor.stream.seen, process.memory_info().rss
            frozen = (seen.samples.nbytes() + seen.batches.nbytes()) / 1e6
            newest = len(seen.samples.recent) + len(seen.batches.recent)
            elapsed = (time.perf_counter() - start) / step * 1e3
            print(f"{step:,} | {len(seen.samples):,} | {len(seen.batches):,} | {frozen:.1f} | {newest:,} | "
                  f"{rss / 1e6:.0f} | {(rss - first_rss) / 1e6:.0f} | {elapsed:.2f}", flush=True)
    print(f"findings: {[finding.line()[:160] for finding in auditor.report.findings] or 'none'}")


if __name__ == "__main__":
    main()
