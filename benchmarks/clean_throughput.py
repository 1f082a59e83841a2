"""Cleaning throughput, side by side in one run: `clean --exact --lines` against our preprocessing of the
same input, each step on its own (documents/s), MinHash signatures alone on two cores, and the Ray engine
against the local one (Ray's start-up included, and alone).

    python benchmarks/clean_throughput.py [--workers 2] [--repeats 3] [--tokenizer llama3] [--no-ray]

Every command runs as its own process on the workshop corpus (the three domain files as three inputs;
preprocessing reads them joined into one file, the same bytes); the wall time of each whole command is
measured, start-up included, and the median of `--repeats` runs is shown. The goals: exact + lines at
least as fast as preprocessing (ratio >= 1), signatures at 20,000 documents/s or more on two cores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from preprocess_throughput import timed as preprocess_timed  # noqa: E402  (this folder is on the path)

from helpers.clean.text.shingles import signatures  # noqa: E402
from helpers.common.paths import RAW_DIR  # noqa: E402
from helpers.corpus.build import corpus_paths  # noqa: E402

STEP_FLAGS = {"normalize": ["--normalize"], "exact": ["--exact"], "lines": ["--lines"], "fuzzy": ["--fuzzy"],
              "exact + lines": ["--exact", "--lines"]}


def timed(command: list[str], repeats: int) -> float:
    """The median wall time of `repeats` runs of a whole command, run with this checkout on its path."""
    return preprocess_timed(command, env={**os.environ, "PYTHONPATH": str(ROOT)}, repeats=repeats)


def outputs_digest(folder: Path) -> str:
    """One sha256 over the kept records and removed.jsonl (the report holds timings, so it differs)."""
    digest = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        if path.name != "report.json":
            digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


_texts: list[str] = []


def _warm_up() -> None:
    signatures(_texts[:8])  # imports (rensa among them) done in this process


def _sign_repeatedly(job: tuple[int, int, int]) -> float:
    """The median seconds of `repeats` signings of texts [start, stop) in this worker."""
    start, stop, repeats = job
    seconds = []
    for _ in range(repeats):
        began = time.perf_counter()
        signatures(_texts[start:stop])
        seconds.append(time.perf_counter() - began)
    return statistics.median(seconds)


def signature_rate(texts: list[str], workers: int, repeats: int) -> float:
    """Documents/s of MinHash signatures alone (word 5-grams, 128 permutations): the texts split among
    `workers` forked processes that already hold them and have warmed up, all signing at once."""
    global _texts
    _texts = texts
    step = -(-len(texts) // workers)
    jobs = [(start, min(start + step, len(texts)), repeats) for start in range(0, len(texts), step)]
    with get_context("fork").Pool(len(jobs), initializer=_warm_up) as pool:
        slowest = max(pool.map(_sign_repeatedly, jobs, chunksize=1))
    return len(texts) / slowest


def ray_start_seconds(workers: int) -> float:
    """Seconds to start a local Ray cluster and get one trivial task back, in a fresh process."""
    code = ("import time; t = time.perf_counter()\n"
            "from helpers.engines.ray_cluster import ray_session, ray_map\n"
            f"with ray_session(None, num_cpus={workers}):\n"
            "    ray_map(abs, [-1])\n"
            "    print(time.perf_counter() - t)\n")
    result = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    return float(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each command (the median is shown)")
    parser.add_argument("--tokenizer", default="llama3", help="preprocessing's tokenizer, the speed to reach")
    parser.add_argument("--no-ray", action="store_true", help="leave out the Ray engine")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="clean-bench-"))
    try:
        run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, work: Path) -> None:
    inputs = [str(path) for path in corpus_paths(RAW_DIR).values()]
    joined = work / "mixed.jsonl"
    with open(joined, "wb") as out:
        for path in inputs:
            out.write(Path(path).read_bytes())
    size_mb = joined.stat().st_size / 1e6
    documents = sum(1 for path in inputs for line in open(path, "rb") if line.strip())

    def clean_cmd(name: str, flags: list[str], *extra: str) -> list[str]:
        return [sys.executable, "-m", "helpers.clean", "--input", *inputs, "--output-dir", str(work / name),
                "--workers", str(args.workers), "--no-progress", *flags, *extra]

    preprocess_s = timed([sys.executable, "-m", "helpers.preprocess", "--input", str(joined), "--output-prefix",
                          str(work / "tokens"), "--tokenizer", args.tokenizer, "--workers", str(args.workers),
                          "--append-eod", "--no-progress"], args.repeats)
    print(f"input      the workshop corpus: {len(inputs)} files, {documents:,} documents, {size_mb:.1f} MB; "
          f"{args.workers} workers, {os.cpu_count()} cores, median of {args.repeats} runs of each whole command")
    print(f"{'command':<34} {'wall s':>7} {'MB/s':>7} {'docs/s':>9}")
    print(f"{'preprocess (' + args.tokenizer + ')':<34} {preprocess_s:7.2f} {size_mb / preprocess_s:7.2f} "
          f"{documents / preprocess_s:9,.0f}")
    walls = {}
    for step, flags in STEP_FLAGS.items():
        walls[step] = timed(clean_cmd(step.replace(" + ", "_"), flags), args.repeats)
        print(f"{'clean ' + ' '.join(flags):<34} {walls[step]:7.2f} {size_mb / walls[step]:7.2f} "
              f"{documents / walls[step]:9,.0f}")
    report = json.loads((work / "fuzzy" / "report.json").read_text())
    texts = [json.loads(line)["text"] for path in inputs for line in open(path, "rb") if line.strip()]
    rate = signature_rate(texts, args.workers, args.repeats)
    print(f"exact + lines vs preprocessing: {preprocess_s / walls['exact + lines']:.2f}x (goal >= 1)")
    print(f"signatures alone, {args.workers} processes: {rate:,.0f} documents/s (goal >= 20,000); inside the "
          f"--fuzzy run, its pass: {report['documents_per_second'].get('signatures', 0):,.0f} documents/s "
          "(reading and parsing included)")
    if args.no_ray:
        return
    ray_s = timed(clean_cmd("ray", STEP_FLAGS["exact + lines"], "--engine", "ray"), args.repeats)
    start_s = ray_start_seconds(args.workers)
    same = outputs_digest(work / "ray") == outputs_digest(work / "exact_lines")
    print(f"clean --exact --lines --engine ray: {ray_s:.2f} s against {walls['exact + lines']:.2f} s local "
          f"({ray_s - walls['exact + lines']:+.2f} s); starting a local Ray cluster alone: {start_s:.2f} s; "
          f"outputs identical to the local engine's: {same}")


if __name__ == "__main__":
    main()
