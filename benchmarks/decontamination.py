"""Decontamination against its peer, in one run: microseconds per document on one core for the package's exact text
check (`helpers.decontamination.TextIndex`, GPT-3's 13-word n-grams, each candidate verified; called once per
document, as `helpers.clean --decontaminate` calls it, and once for all documents, `matches_each`) and for datatrove
0.10.1's `NGramsDecontFilter` (13-grams of its own words, looked up by hash alone), on the same documents, against
the same HumanEval items; and the token check over the same documents tokenized (`TokenIndex`, llama3).

    python benchmarks/decontamination.py [--repeats 3]
    pip install -e '.[dedup-peer,decontamination]'      # datatrove, and HumanEval's items

The documents are the workshop corpus (`data/raw`, its three domains, every record) and, planted on purpose so that
the match path is timed too, 20 copies of code documents with one HumanEval problem (prompt and solution) pasted
at their end. Both tools hold their index in memory and read the texts from memory; each is timed over every
document, `--repeats` times, and the fastest pass is kept. datatrove's index is built by its own functions
(`NGramsDecontIndexer.compute_hashes`' steps, which need lighteval to run as a step): each item's text as the
label, no query; its n-grams hashed by its default (64-bit xxhash) of their UTF-8 bytes, as its filter cannot with
the xxhash pinned here, which refuses the str it hands over. The two rules differ (datatrove also folds digits,
diacritics and whitespace and splits words with spaCy's rules), so the table says which documents each flags, not
only how fast.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import xxhash

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helpers.common.paths import RAW_DIR  # noqa: E402
from helpers.decontamination import TextIndex, TokenIndex, load_evals  # noqa: E402

DOMAINS = ("literature", "docs", "code")
PLANTED = 20


def documents() -> tuple[list[str], list[int]]:
    """The corpus's texts, then the planted copies; the planted ones' positions."""
    texts = [json.loads(line)["text"] for domain in DOMAINS
             for line in open(RAW_DIR / f"{domain}.jsonl", encoding="utf-8")]
    (humaneval,) = load_evals(["humaneval"])
    code = [json.loads(line)["text"] for line in open(RAW_DIR / "code.jsonl", encoding="utf-8")][:PLANTED]
    planted = [text + "\n\n" + humaneval.texts[7 * k] for k, text in enumerate(code)]
    return texts + planted, list(range(len(texts), len(texts) + PLANTED))


def fastest(run, repeats: int) -> tuple[float, object]:
    """The fastest of `repeats` timed calls of `run`, and its result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def ours(texts: list[str], items: list[str], repeats: int) -> tuple[dict, dict]:
    """The text check called once per document, and once for all of them."""
    start = time.perf_counter()
    index = TextIndex(items, 13)
    built = time.perf_counter() - start
    seconds, flagged = fastest(lambda: [bool(index.matches(text, first=True)) for text in texts], repeats)
    batch_seconds, batch_flagged = fastest(
        lambda: [bool(found) for found in index.matches_each(texts, first=True)], repeats)
    return ({"index_s": built, "seconds": seconds, "flagged": flagged},
            {"index_s": built, "seconds": batch_seconds, "flagged": batch_flagged})


def hashing(text: str) -> int:
    """datatrove's default n-gram hash (64-bit xxhash), given bytes: the xxhash this package pins refuses a str, which
    datatrove 0.10.1 hands it, so its filter fails on the first document without this."""
    return xxhash.xxh64_intdigest(text.encode("utf-8"))


def datatrove(texts: list[str], items: list[str], repeats: int) -> dict | None:
    try:
        from datatrove.data import Document
        from datatrove.pipeline.decont.n_grams import NGramsDecontConfig, NGramsDecontFilter
        from datatrove.utils.text import ngrams, simplify_text
        from datatrove.utils.word_tokenizers import load_word_tokenizer
    except ImportError:
        return None
    config = NGramsDecontConfig(n_grams=13)
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        words = load_word_tokenizer("en")
        hashes = {hashing(" ".join(gram)) for text in items
                  for gram in ngrams(words.word_tokenize(simplify_text(text, config.norm_config)), 13)}
        np.array(sorted(hashes), dtype=config.hash_config.np_descr).tofile(Path(folder) / "humaneval.index.hashes")
        step = NGramsDecontFilter(folder, config=config)
        step.hash_func = hashing
        step.load_index_hashes()
        built = time.perf_counter() - start
        documents = [Document(text=text, id=str(k)) for k, text in enumerate(texts)]

        def run():
            return [step.filter(Document(text=doc.text, id=doc.id)) is not True for doc in documents]

        seconds, flagged = fastest(run, repeats)
    return {"index_s": built, "seconds": seconds, "flagged": flagged}


def tokens(texts: list[str], items: list[str], repeats: int) -> dict:
    from helpers.tokenizers.zoo import load_tokenizer

    tokenizer = load_tokenizer("llama3")
    encoded = [np.asarray(ids, np.int32) for ids in tokenizer.encode_batch(texts)]
    stream = np.concatenate(encoded)
    starts = np.concatenate([[0], np.cumsum([ids.size for ids in encoded])[:-1]])
    index = TokenIndex.encoded(items, tokenizer)
    seconds, found = fastest(lambda: index.matches(stream, starts), repeats)
    flagged = np.zeros(len(texts), bool)
    flagged[np.searchsorted(starts, [match.start for match in found], side="right") - 1] = True
    return {"seconds": seconds, "flagged": list(flagged), "tokens": int(stream.size)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    texts, planted = documents()
    (humaneval,) = load_evals(["humaneval"])
    items = list(humaneval.texts)
    size = sum(len(text.encode("utf-8", "surrogatepass")) for text in texts)
    print(f"{len(texts):,} documents ({size / 1e6:.1f} MB, {PLANTED} with a planted HumanEval problem), "
          f"{len(items)} HumanEval items, one core, fastest of {args.repeats}")
    each, batched = ours(texts, items, args.repeats)
    rows = [("ours: text, exact (GPT-3 13-grams)", each), ("ours: text, the same, one call for all", batched),
            ("datatrove NGramsDecontFilter (13-grams)", datatrove(texts, items, args.repeats)),
            ("ours: llama3 tokens, exact (32-grams)", tokens(texts, items, args.repeats))]
    print(f"{'tool':<42} {'us/document':>12} {'MB/s':>7} {'flagged':>8} {'planted found':>14}")
    for name, row in rows:
        if row is None:
            print(f"{name:<42} {'not installed: pip install datatrove==0.10.1':>44}")
            continue
        flagged = row["flagged"]
        print(f"{name:<42} {row['seconds'] / len(texts) * 1e6:>12.1f} {size / row['seconds'] / 1e6:>7.0f} "
              f"{sum(flagged):>8} {sum(flagged[k] for k in planted):>8} of {PLANTED}")
    if rows[2][1] is not None:
        print(f"ours is {rows[2][1]['seconds'] / rows[0][1]['seconds']:.1f}x datatrove's speed per document; "
              f"index built in {rows[0][1]['index_s']:.2f} s (ours) and {rows[2][1]['index_s']:.2f} s (datatrove)")


if __name__ == "__main__":
    main()
