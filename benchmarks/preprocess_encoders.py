"""Preprocessing on the fast encoder against the reference path, whole command, side by side in one run; and
every exact encoder's own speed on the same texts, its vocabulary read apart from its encoding, on 1 and 2
threads, each checked document by document against the reference's ids.

    python benchmarks/preprocess_encoders.py [--mb 90] [--tokenizer llama3] [--workers 2] [--pairs 3]
        [--encoders-mb 90] [--quiet-s 120]

The input is the workshop corpus (all three domains), its records repeated in shuffled order to about `--mb` MB
of JSONL. `python -m helpers.preprocess --encoder reference` and `--encoder auto` run in turn as separate
processes (`--pairs` pairs after one of each to warm up and leave the early-read note), with `--append-eod`
and `--workers`; the table shows their median wall times, the median of the pairs' ratios with their range,
and checks that both wrote the same `.bin/.idx` bytes. Each timed command waits (up to `--quiet-s`) for the CPUs
to go quiet first, so that another program's work does not land in one side of a pair.

The encoders' table (`encoder_run.py`, each in a process of its own, on the input's first `--encoders-mb` MB):
tiktoken (the reference), fastokens (what the package uses), and the peers where installed
(`pip install -e '.[encoder-peer]'`): gigatoken; toktok-rs, which bundles cl100k but no Llama 3; riptoken; and
kitoken and tokie, timed reading the form of the vocabulary they saved beforehand (what a cache of a parsed
vocabulary would read). A peer that is missing or has no such vocabulary has its row say so. Each encoder also
encodes the texts the package's proof reads (`parity_sample` and each token in context: special-token strings,
scripts side by side, white space of every kind), and the table counts those whose ids differ from tiktoken's:
an encoder can agree on a corpus and not there.
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

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from encoder_run import THREAD_VARIABLES  # noqa: E402
from helpers.common.paths import RAW_DIR  # noqa: E402
from helpers.corpus.build import corpus_paths  # noqa: E402
from helpers.tokenizers.encoders import choose_encoder, parity_sample, vocabulary_texts  # noqa: E402
from helpers.tokenizers.zoo import load_tokenizer  # noqa: E402

ENCODERS = ("tiktoken", "fastokens", "gigatoken", "toktok", "riptoken", "kitoken", "tokie")
THREADS = (1, 2)


def mixed_input(target: Path, megabytes: float, head: Path | None = None, head_megabytes: float = 0.0) -> Path:
    """The corpus's records, shuffled and repeated to about `megabytes` MB of JSONL; its first `head_megabytes`
    also written to `head`."""
    lines = [line for path in corpus_paths(RAW_DIR).values()
             for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    chooser, written = random.Random(0), 0
    with open(target, "w", encoding="utf-8") as out, open(head or os.devnull, "w", encoding="utf-8") as first:
        while written < megabytes * 1e6:
            chooser.shuffle(lines)
            for line in lines:
                out.write(line + "\n")
                if written < head_megabytes * 1e6:
                    first.write(line + "\n")
                written += len(line.encode("utf-8")) + 1
    return target


def busy_share(seconds: float = 1.0) -> float:
    """The share of this machine's CPU time that was busy over `seconds` (Linux's /proc/stat; 0 elsewhere)."""
    def sample() -> list[int]:
        return [int(field) for field in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]

    try:
        before = sample()
        time.sleep(seconds)
        after = sample()
    except OSError:
        return 0.0
    spent = [b - a for a, b in zip(before, after)]
    return 1 - (spent[3] + spent[4]) / max(1, sum(spent))  # idle and I/O wait are not busy


def wait_for_quiet(limit_s: float) -> None:
    """Wait, up to `limit_s`, until another program's work leaves this machine's CPUs below a tenth busy, so
    that a timing is of this command alone."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and busy_share() > 0.10:
        pass


def wall(command: list[str], quiet_s: float = 0.0) -> float:
    wait_for_quiet(quiet_s)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def whole_commands(args, source: Path, work: Path) -> tuple[list[tuple[float, float]], bool]:
    """`--pairs` (reference, auto) wall times of the whole command, after one of each; whether their bytes agree."""
    def command(encoder: str) -> list[str]:
        return [sys.executable, "-m", "helpers.preprocess", "--input", str(source), "--output-prefix",
                str(work / encoder), "--tokenizer", args.tokenizer, "--workers", str(args.workers),
                "--append-eod", "--no-progress", "--encoder", encoder]

    wall(command("reference")), wall(command("auto"))  # the page cache, the proof and the early-read note
    pairs = [(wall(command("reference"), args.quiet_s), wall(command("auto"), args.quiet_s)) for _ in range(args.pairs)]
    same = all(filecmp.cmp(work / f"reference_text_document{s}", work / f"auto_text_document{s}", shallow=False)
               for s in (".bin", ".idx"))
    return pairs, same


def encoder_run(args, encoder: str, threads: int, texts: Path, out: Path) -> dict:
    """One encoder on `texts` in a process of its own (`encoder_run.py`): what it printed."""
    out.mkdir()
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "encoder_run.py"), encoder, str(threads),
                           args.tokenizer, str(texts), str(out)], capture_output=True, text=True, check=True,
                          env={**os.environ, **dict.fromkeys(THREAD_VARIABLES, str(threads))})
    return json.loads(done.stdout.splitlines()[-1])


def proof_texts(tokenizer, target: Path) -> Path:
    """The texts the package's proof of an encoder reads (its fixed sample, then every token of the vocabulary in
    the contexts where merging makes it), as JSONL: special-token strings, scripts side by side, white space of
    every kind, which a corpus rarely holds."""
    with open(target, "w", encoding="utf-8") as out:
        for text in [*parity_sample(), *vocabulary_texts(tokenizer)]:
            out.write(json.dumps({"text": text}) + "\n")
    return target


def encoder_rows(args, texts: Path, work: Path) -> list[dict]:
    """Each encoder on 1 and 2 threads, in its own process; each row's documents whose ids differ from
    tiktoken's on 2 threads, and each encoder's texts of the proof whose ids differ from tiktoken's."""
    rows, proof = [], proof_texts(load_tokenizer(args.tokenizer), work / "proof.jsonl")
    for encoder in ENCODERS:
        for threads in THREADS:
            wait_for_quiet(args.quiet_s)
            out = work / f"{encoder}-{threads}"
            rows.append({"encoder": encoder, "threads": threads, "out": out,
                         **encoder_run(args, encoder, threads, texts, out)})
            if "read_s" not in rows[-1]:
                break  # missing or unsupported: one row says so
        else:
            rows[-1]["proof_out"] = work / f"{encoder}-proof"
            encoder_run(args, encoder, 1, proof, rows[-1]["proof_out"])
    tiktoken = next(row for row in rows if row["encoder"] == "tiktoken" and row["threads"] == max(THREADS))
    reference = {kind: tiktoken[kind] for kind in ("out", "proof_out")}
    for row in rows:
        if "read_s" in row:
            row["differing"] = differing_documents(reference["out"], row["out"])
        if "proof_out" in row:
            row["proof_differing"] = differing_documents(reference["proof_out"], row["proof_out"])
            row["proof_texts"] = len(np.load(reference["proof_out"] / "offsets.npy")) - 1
    return rows


def differing_documents(reference: Path, other: Path) -> int:
    """How many documents' ids differ between two runs' saved ids (a document missing counts as differing)."""
    ids = [np.load(folder / "ids.npy") for folder in (reference, other)]
    offsets = [np.load(folder / "offsets.npy") for folder in (reference, other)]
    if len(offsets[0]) != len(offsets[1]):
        return abs(len(offsets[0]) - len(offsets[1])) + min(len(offsets[0]), len(offsets[1])) - 1
    return sum(not np.array_equal(ids[0][offsets[0][k]:offsets[0][k + 1]], ids[1][offsets[1][k]:offsets[1][k + 1]])
               for k in range(len(offsets[0]) - 1))


def print_encoders(rows: list[dict], megabytes: float, documents: int) -> None:
    print(f"the encoders alone: {megabytes:.1f} MB of text in {documents:,} documents, each encoder in its own "
          "process")
    print(f"{'encoder':<22} {'threads':>7} {'read s':>7} {'MB/s':>7} {'MB/s read incl.':>16} {'docs differing':>15} "
          f"{'proof texts differing':>22}")
    for row in rows:
        name = f"{row['encoder']} {row.get('version', '')}".strip()
        if "read_s" not in row:
            print(f"{row['encoder']:<22} {'':>7} {row.get('missing') or row.get('unsupported')}")
            continue
        alone, whole = megabytes / row["encode_s"], megabytes / (row["encode_s"] + row["read_s"])
        proof = f"{row['proof_differing']:,} of {row['proof_texts']:,}" if "proof_differing" in row else ""
        print(f"{name:<22} {row['threads']:>7} {row['read_s']:7.2f} {alone:7.1f} {whole:16.1f} "
              f"{row['differing']:>15,} {proof:>22}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=90.0, help="MB of JSONL the whole command preprocesses")
    parser.add_argument("--tokenizer", default="llama3")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=3, help="reference/fast pairs timed (the median is shown)")
    parser.add_argument("--quiet-s", type=float, default=120.0,
                        help="seconds to wait at most, before each timed command, for the CPUs to go quiet")
    parser.add_argument("--encoders-mb", type=float, default=90.0,
                        help="MB of the input the encoders' table encodes (0: no table)")
    args = parser.parse_args()
    chosen = choose_encoder(load_tokenizer(args.tokenizer), "fast")  # the proof runs here, not in a timed command
    work = Path(tempfile.mkdtemp(prefix="encoder-bench-"))
    try:
        head = work / "head.jsonl"
        source = mixed_input(work / "mixed.jsonl", args.mb, head, min(args.encoders_mb, args.mb))
        size_mb = source.stat().st_size / 1e6
        pairs, same = whole_commands(args, source, work)
        for prefix in ("reference", "auto"):
            for suffix in (".bin", ".idx", ".json"):
                (work / f"{prefix}_text_document{suffix}").unlink(missing_ok=True)  # room for the table's ids
        rows = encoder_rows(args, head, work) if args.encoders_mb > 0 else []
        text_mb = sum(len(json.loads(line)["text"].encode("utf-8")) for line in head.open(encoding="utf-8"))
        documents = sum(1 for _ in head.open(encoding="utf-8"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ratios = [a / b for a, b in pairs]
    print(f"input     {size_mb:.1f} MB of mixed corpus JSONL, tokenizer {args.tokenizer}, {args.workers} workers, "
          f"{os.cpu_count()} cores, {args.pairs} pairs")
    print(f"fast      {chosen.name}: {chosen.reason}")
    print(f"{'whole command':<34} {'wall s':>8} {'MB/s':>8}")
    for label, times in (("--encoder reference", [a for a, _ in pairs]), ("--encoder auto (fast)", [b for _, b in pairs])):
        print(f"{label:<34} {statistics.median(times):8.2f} {size_mb / statistics.median(times):8.1f}")
    print(f"speed-up  {statistics.median(ratios):.2f}x (median of the pairs' ratios; {min(ratios):.2f}-"
          f"{max(ratios):.2f}x); outputs byte-identical: {same}")
    if rows:
        print_encoders(rows, text_mb / 1e6, documents)


if __name__ == "__main__":
    main()
