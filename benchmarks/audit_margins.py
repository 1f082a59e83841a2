"""The margins of `helpers.audit`, per tokenizer and text, in one run: how far real text stays from what the
audit calls a bug, and how soon it names random ids.

    python benchmarks/audit_margins.py [--documents 400] [--windows 2000] [--kinds licences,code] [--only rates]

Two tables:
- `windows`: real 128- and 256-token windows of the workshop corpus and of the machine's text against as
  many windows of ids drawn uniformly: the fewest equal pairs a real window had, the bound of the per-row
  test, the most a uniform window had, and the margin (fewest real / bound: above 1, no real window is
  called random). Also, for vocabularies above 65,536, the share of real tokens at or above it (what the
  wrap-around check relies on) and the share of tokens equal to the next one (how well labels in the wrong
  layout still match).
- `rates`: nanoGPT-style windows (random offsets into the documents of one kind, end-of-document ids
  between them) of 16 to 1,024 tokens, over the corpus and over real text of the machine (licences, man
  pages, translations, C headers, JSON, base64, hex dumps, logs, code), one window a step: the false alarms
  per 10,000 healthy windows (steps with any finding; `random` those naming random ids), and the steps after
  a `torch.randint(0, V)` fallback starts (`V` column, batches of 1 and of 8 windows) and after a
  `torch.randint(0, 100)` one (`100` column, batches of 1) until `random-tokens` is named.

It drives the audit through `StreamAudit.look` only, so the same file measures an older version of the
package too (copied into that checkout, with `helpers/corpus/machine_text.py`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helpers.audit.statistics import WRAP_LIMIT, uniform_bound, window_pairs  # noqa: E402
from helpers.audit.stream import AuditSettings, StreamAudit  # noqa: E402
from helpers.common.paths import RAW_DIR  # noqa: E402
from helpers.corpus.build import corpus_paths  # noqa: E402
from helpers.corpus.machine_text import KINDS, texts  # noqa: E402
from helpers.tokenizers.zoo import load_tokenizer  # noqa: E402

TOKENIZERS = ("llama3", "mistral", "cl100k", "bytes", "bpe")
LENGTHS = (16, 32, 48, 64, 128, 1024)
HEALTHY_BEFORE = 40  # healthy steps before a fallback starts


def token_stream(tokenizer, documents: list[str]) -> np.ndarray:
    return np.array([i for text in documents for i in [*tokenizer.encode(text), tokenizer.eod_id]], np.int64)


def windows_table(sources: dict[str, list[str]]) -> None:
    rng = np.random.default_rng(0)
    print("tokenizer | vocab | domain | window | windows | fewest real pairs | uniform mean | bound | most uniform "
          "pairs | margin | share >= 65,536 | next id equal")
    for name in TOKENIZERS:
        tokenizer = load_tokenizer(name)
        vocab = tokenizer.vocab_size
        for domain, documents in sources.items():
            ids = token_stream(tokenizer, documents)
            for size in (128, 256):
                windows = ids[:len(ids) // size * size].reshape(-1, size)
                real = window_pairs(windows)
                uniform = window_pairs(rng.integers(0, vocab, windows.shape))
                mean, bound = uniform_bound(size, vocab)
                high = f"{np.mean(ids >= WRAP_LIMIT):.4f}" if vocab > WRAP_LIMIT else "-"
                print(f"{name} | {vocab:,} | {domain} | {size} | {len(windows):,} | {real.min()} | {mean:.2f} | "
                      f"{bound:.1f} | {uniform.max()} | {real.min() / bound:.2f} | {high} | "
                      f"{np.mean(ids[1:] == ids[:-1]):.3f}", flush=True)


def healthy_batches(ids: np.ndarray, length: int, rows: int, steps: int, rng) -> list[dict]:
    """nanoGPT's get_batch: `rows` windows at random offsets, labels one token on."""
    batches = []
    for _ in range(steps):
        starts = rng.integers(0, len(ids) - length - 1, rows)
        x = np.stack([ids[s:s + length] for s in starts])
        y = np.stack([ids[s + 1:s + 1 + length] for s in starts])
        batches.append({"input_ids": x, "labels": y})
    return batches


def false_alarms(batches: list[dict], settings: AuditSettings) -> tuple[int, int]:
    """(steps with any finding, steps with random-tokens) over a healthy stream."""
    audit = StreamAudit(settings)
    alarms = random = 0
    for batch in batches:
        codes = {finding.code for finding in audit.look(batch)}
        alarms += bool(codes)
        random += "random-tokens" in codes
    return alarms, random


def steps_to_name(batches: list[dict], settings: AuditSettings, high: int, rng) -> str:
    """Steps from the first fallback batch (ids uniform in [0, high)) to the first random-tokens finding."""
    audit = StreamAudit(settings)
    for step, batch in enumerate(batches[:HEALTHY_BEFORE]):
        audit.look(batch)
    shape = batches[0]["input_ids"].shape
    for delay in range(400):
        window = rng.integers(0, high, (shape[0], shape[1] + 1))
        found = audit.look({"input_ids": window[:, :-1], "labels": window[:, 1:]})
        if any(finding.code == "random-tokens" for finding in found):
            return str(delay)
    return "never"


def rates_table(sources: dict[str, list[str]], windows: int) -> None:
    print("tokenizer | text | length | windows | false alarms /10k | random /10k | V: steps to name (1 row, 8 rows) "
          "| 100: steps to name")
    for name in TOKENIZERS:
        tokenizer = load_tokenizer(name)
        settings = AuditSettings(vocab_size=tokenizer.vocab_size, labels="shifted", eod_id=tokenizer.eod_id)
        for text, documents in sources.items():
            ids = token_stream(tokenizer, documents)
            for length in LENGTHS:
                rng = np.random.default_rng(length)
                count = windows if length < 1024 else windows // 4
                if len(ids) < 2 * length + 2:
                    continue
                alarms, random = false_alarms(healthy_batches(ids, length, 1, count, rng), settings)
                one = steps_to_name(healthy_batches(ids, length, 1, HEALTHY_BEFORE, rng), settings,
                                    tokenizer.vocab_size, rng)
                eight = steps_to_name(healthy_batches(ids, length, 8, HEALTHY_BEFORE, rng), settings,
                                      tokenizer.vocab_size, rng)
                small = (steps_to_name(healthy_batches(ids, length, 1, HEALTHY_BEFORE, rng), settings, 100, rng)
                         if tokenizer.vocab_size > 1000 else "-")
                print(f"{name} | {text} | {length} | {count:,} | {alarms / count * 1e4:.0f} | "
                      f"{random / count * 1e4:.0f} | {one}, {eight} | {small}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=400, help="documents of each corpus domain")
    parser.add_argument("--windows", type=int, default=2000, help="healthy windows a cell of the rates table")
    parser.add_argument("--kinds", default=",".join(KINDS), help="kinds of machine text for the rates table")
    parser.add_argument("--only", choices=["windows", "rates"], default=None)
    args = parser.parse_args()
    corpus = {f"corpus {domain}": [json.loads(line)["text"] for line in path.open(encoding="utf-8")][:args.documents]
              for domain, path in corpus_paths(RAW_DIR).items()}
    sources = {**corpus, **{kind: texts(kind, 200_000) for kind in args.kinds.split(",") if kind}}
    if args.only != "rates":
        windows_table(sources)
    if args.only != "windows":
        rates_table(sources, args.windows)


if __name__ == "__main__":
    main()
