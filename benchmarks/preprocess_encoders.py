"""Preprocessing on the fast encoder against today's tiktoken-limited path, whole command, side by side in one
run; and each encoder's own speed on the same texts, for the ceiling.

    python benchmarks/preprocess_encoders.py [--mb 100] [--tokenizer llama3] [--workers 2] [--pairs 3]

The input is the workshop corpus (all three domains), its records repeated in shuffled order to about
`--mb` MB of JSONL. `python -m helpers.preprocess --encoder reference` and `--encoder fast` run in turn as
separate processes (`--pairs` pairs after one of each to warm up), with `--append-eod` and `--workers`; the
table shows their median wall times and the median of the pairs' ratios, and checks that both wrote the
same `.bin/.idx` bytes. The encoders' own speed: the reference's batch call on `--workers` threads and
fastokens' flat batch call (its threads are its own), on the same texts in this process, no I/O; and
fastokens with the time it takes to read its vocabulary, which every command pays once.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helpers.common.paths import RAW_DIR  # noqa: E402
from helpers.corpus.build import corpus_paths  # noqa: E402
from helpers.tokenizers.encoders import choose_encoder, encode_flat, fast_tokenizer, vocabulary_seconds  # noqa: E402
from helpers.tokenizers.zoo import load_tokenizer  # noqa: E402


def mixed_input(target: Path, megabytes: float) -> tuple[Path, list[str]]:
    """The corpus's records, shuffled and repeated to about `megabytes` MB of JSONL, and their texts."""
    lines = [line for path in corpus_paths(RAW_DIR).values()
             for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    chooser, written, texts = random.Random(0), 0, []
    with open(target, "w", encoding="utf-8") as out:
        while written < megabytes * 1e6:
            chooser.shuffle(lines)
            for line in lines:
                out.write(line + "\n")
                texts.append(json.loads(line)["text"])
                written += len(line.encode("utf-8")) + 1
    return target, texts


def wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def encoder_speeds(tokenizer, texts: list[str], threads: int) -> dict[str, float]:
    """MB/s of each encoder alone on `texts`: the reference's batch call, fastokens' flat call."""
    megabytes = sum(len(text.encode("utf-8")) for text in texts) / 1e6
    speeds = {}
    start = time.perf_counter()
    if hasattr(tokenizer, "encoding"):
        tokenizer.encoding.encode_ordinary_batch(texts, num_threads=threads)
    else:
        tokenizer.encode_batch(texts)
    speeds["reference"] = megabytes / (time.perf_counter() - start)
    fast = fast_tokenizer(tokenizer)
    start = time.perf_counter()
    encode_flat(fast, texts)
    encode_s = time.perf_counter() - start
    speeds["fast"] = megabytes / encode_s
    speeds["fast, with reading its vocabulary"] = megabytes / (encode_s + vocabulary_seconds(tokenizer))
    return speeds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=100.0, help="MB of JSONL to preprocess")
    parser.add_argument("--tokenizer", default="llama3")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=3, help="reference/fast pairs timed (the median is shown)")
    args = parser.parse_args()
    tokenizer = load_tokenizer(args.tokenizer)
    chosen = choose_encoder(tokenizer, "fast")  # the proof runs here, once, not inside a timed command
    work = Path(tempfile.mkdtemp(prefix="encoder-bench-"))
    try:
        source, texts = mixed_input(work / "mixed.jsonl", args.mb)
        size_mb = source.stat().st_size / 1e6

        def command(encoder: str) -> list[str]:
            return [sys.executable, "-m", "helpers.preprocess", "--input", str(source), "--output-prefix",
                    str(work / encoder), "--tokenizer", args.tokenizer, "--workers", str(args.workers),
                    "--append-eod", "--no-progress", "--encoder", encoder]

        wall(command("reference")), wall(command("fast"))  # warm the page cache and the proofs
        pairs = [(wall(command("reference")), wall(command("fast"))) for _ in range(args.pairs)]
        same = all(filecmp.cmp(work / f"reference_text_document{s}", work / f"fast_text_document{s}", shallow=False)
                   for s in (".bin", ".idx"))
        speeds = encoder_speeds(tokenizer, texts, args.workers)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    reference_s = statistics.median(a for a, _ in pairs)
    fast_s = statistics.median(b for _, b in pairs)
    ratio = statistics.median(a / b for a, b in pairs)
    print(f"input     {size_mb:.1f} MB of mixed corpus JSONL, tokenizer {args.tokenizer}, {args.workers} workers, "
          f"{os.cpu_count()} cores, median of {args.pairs} pairs")
    print(f"fast      {chosen.name}: {chosen.reason}")
    print(f"{'whole command':<34} {'wall s':>8} {'MB/s':>8}")
    print(f"{'--encoder reference (today)':<34} {reference_s:8.2f} {size_mb / reference_s:8.1f}")
    print(f"{'--encoder fast':<34} {fast_s:8.2f} {size_mb / fast_s:8.1f}")
    print(f"speed-up  {ratio:.2f}x (median of the pairs' ratios); outputs byte-identical: {same}")
    print(f"{'the encoder alone, same texts':<34} {'MB/s':>8}")
    for name, speed in speeds.items():
        print(f"{name:<34} {speed:8.1f}")
    print(f"the whole fast command at {size_mb / fast_s / speeds['fast']:.0%} of the fast encoder's own speed, "
          f"{size_mb / fast_s / speeds['fast, with reading its vocabulary']:.0%} of it with its vocabulary read")


if __name__ == "__main__":
    main()
