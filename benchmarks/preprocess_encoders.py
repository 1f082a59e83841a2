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

A peer's row, where `pip install -e '.[encoder-peer]'` installed it: gigatoken, another exact BPE encoder a
user could pick, alone on the same texts, with and without reading its vocabulary, and whether its ids
equal the reference's on every text. The package does not use it: it reads its vocabulary holding the
interpreter lock (so the input cannot be parsed meanwhile) and hands results back as awkward arrays.
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
from importlib import metadata
from itertools import chain
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helpers.common.paths import RAW_DIR  # noqa: E402
from helpers.corpus.build import corpus_paths  # noqa: E402
from helpers.tokenizers.encoders import (  # noqa: E402
    choose_encoder, encode_flat, fast_tokenizer, tokenizer_json, vocabulary_seconds)
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


def encoder_speeds(tokenizer, texts: list[str], threads: int) -> tuple[dict[str, float], tuple[np.ndarray, np.ndarray]]:
    """MB/s of each encoder alone on `texts`: the reference's batch call, fastokens' flat call; and the
    reference's ids, flat with each text's offset, for a peer to be compared with."""
    megabytes = sum(len(text.encode("utf-8")) for text in texts) / 1e6
    speeds = {}
    start = time.perf_counter()
    if hasattr(tokenizer, "encoding"):
        reference = tokenizer.encoding.encode_ordinary_batch(texts, num_threads=threads)
    else:
        reference = tokenizer.encode_batch(texts)
    speeds["reference"] = megabytes / (time.perf_counter() - start)
    lengths = np.fromiter(map(len, reference), dtype=np.int64, count=len(reference))
    flat = np.fromiter(chain.from_iterable(reference), dtype=np.int64, count=int(lengths.sum()))
    del reference  # a Python int per id: gone before the next encoder is timed
    fast = fast_tokenizer(tokenizer)
    start = time.perf_counter()
    encode_flat(fast, texts)
    encode_s = time.perf_counter() - start
    speeds["fast"] = megabytes / encode_s
    speeds["fast, with reading its vocabulary"] = megabytes / (encode_s + vocabulary_seconds(tokenizer))
    return speeds, (flat, np.concatenate([[0], np.cumsum(lengths)]))


def peer_speeds(tokenizer, texts: list[str], reference: tuple[np.ndarray, np.ndarray]) -> dict[str, float] | None:
    """gigatoken alone on `texts` (its own threads), as the reference's peer: MB/s without and with reading
    its vocabulary (the same `tokenizer.json` as fastokens', less the special tokens, so that their strings
    are text), and whether its ids equal the reference's on every text. None where it is not installed."""
    try:
        import awkward  # noqa: F401  (gigatoken returns awkward arrays: imported here, not timed)
        from gigatoken.gigatoken_rs import load_hf_json
    except ImportError:
        return None
    content = json.loads(tokenizer_json(tokenizer).read_text(encoding="utf-8"))
    content["added_tokens"] = []
    definition = json.dumps(content, ensure_ascii=False)
    start = time.perf_counter()
    peer = load_hf_json(definition)
    read_s = time.perf_counter() - start
    start = time.perf_counter()
    encoded = peer.encode_batch(texts, parallel=True).layout
    encode_s = time.perf_counter() - start
    megabytes = sum(len(text.encode("utf-8")) for text in texts) / 1e6
    flat, offsets = reference
    exact = (np.array_equal(np.asarray(encoded.offsets.data), offsets)
             and np.array_equal(np.asarray(encoded.content.data), flat))
    return {"alone": megabytes / encode_s, "with reading its vocabulary": megabytes / (encode_s + read_s),
            "vocabulary read s": read_s, "exact": exact}


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
        speeds, reference = encoder_speeds(tokenizer, texts, args.workers)
        peer = peer_speeds(tokenizer, texts, reference)
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
    if peer is None:
        print("gigatoken (peer): not measured; fix: pip install -e '.[encoder-peer]'")
        return
    print(f"{'gigatoken ' + metadata.version('gigatoken') + ' (peer)':<34} {peer['alone']:8.1f}")
    print(f"{'gigatoken, with reading its vocab.':<34} {peer['with reading its vocabulary']:8.1f}")
    print(f"gigatoken read its vocabulary in {peer['vocabulary read s']:.2f} s (holding the interpreter lock); "
          f"ids equal to the reference's on every text: {peer['exact']}")


if __name__ == "__main__":
    main()
