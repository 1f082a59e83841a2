"""Preprocessing throughput: ours against Megatron's tool (or a Megatron-style baseline), side by side,
ours with one partition against ours with several, and ours on the same records as Parquet.

    python benchmarks/preprocess_throughput.py [--input X.jsonl] [--tokenizer llama3] [--workers 2]
        [--partitions 2] [--repeats 3] [--parquet-mb 50]
        [--megatron-lm PATH]   # or MEGATRON_LM=PATH: a Megatron-LM checkout (e.g. tag core_v0.16.1)

All run as separate processes on the same JSONL, same tokenizer (ours by zoo name, Megatron's on our
exported Hugging Face folder) and the same worker count in total; the wall time of each whole command is
measured, start-up included (the median of `--repeats` runs), and the outputs are compared byte for byte:
ours with `--partitions P` must equal ours with one partition. Megatron-LM's script needs
packages the workshop does not install (its training package imports `triton`): put them on
MEGATRON_PYTHONPATH. Without a checkout, the reference is benchmarks/megatron_style_baseline.py, and
the output says so. The default input is the workshop corpus, all three domains in one file. The Parquet
row writes the same records as one Parquet file (every field a column, row groups of 128 rows) and needs
pyarrow (the `parquet` extra); its output must equal the JSONL run's. It is measured on the records as
they are and repeated to `--parquet-mb` MB (50), as a shard of a web corpus is.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
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
from helpers.datasets.indexed import IndexedDataset  # noqa: E402
from helpers.tokenizers.zoo import load_tokenizer  # noqa: E402


def timed(command: list[str], env: dict | None = None, repeats: int = 1) -> float:
    """The median wall time of `repeats` runs of a whole command."""
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def same_dataset(prefix_a: Path, prefix_b: Path) -> bool:
    return all(filecmp.cmp(f"{prefix_a}{s}", f"{prefix_b}{s}", shallow=False) for s in (".bin", ".idx"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", type=Path, help="JSONL with a 'text' field (default: the corpus, mixed)")
    parser.add_argument("--tokenizer", default="llama3")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=2, help="ours with this many partitions, same workers")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each command (the median is shown)")
    parser.add_argument("--parquet-mb", type=int, default=50,
                        help="Parquet is also compared on the records repeated to at least this many MB")
    parser.add_argument("--megatron-lm", default=os.environ.get("MEGATRON_LM"), help="Megatron-LM checkout")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="preprocess-bench-"))
    try:
        run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, work: Path) -> None:
    """Every command on the same input in `work`, then the table."""
    source = args.input
    if source is None:
        source = work / "mixed.jsonl"
        with open(source, "wb") as out:
            for path in corpus_paths(RAW_DIR).values():
                out.write(path.read_bytes())
    size_mb = source.stat().st_size / 1e6
    folder = load_tokenizer(args.tokenizer).export(work / "hf")

    def ours_cmd(name: str, partitions: int, given: Path = source) -> list[str]:
        return [sys.executable, "-m", "helpers.preprocess", "--input", str(given), "--output-prefix",
                str(work / name), "--tokenizer", args.tokenizer, "--workers", str(args.workers), "--partitions",
                str(partitions), "--append-eod", "--no-progress", "--parse-special-tokens"]
    env = dict(os.environ)
    if args.megatron_lm:
        reference = "Megatron-LM tools/preprocess_data.py"
        env["PYTHONPATH"] = os.pathsep.join(p for p in (args.megatron_lm, os.environ.get("MEGATRON_PYTHONPATH"),
                                                         os.environ.get("PYTHONPATH")) if p)
        ref_cmd = [sys.executable, str(Path(args.megatron_lm) / "tools" / "preprocess_data.py"), "--input", str(source),
                   "--output-prefix", str(work / "ref"), "--tokenizer-type", "HuggingFaceTokenizer",
                   "--tokenizer-model", str(folder), "--workers", str(args.workers), "--append-eod",
                   "--log-interval", "1000000"]
    else:
        reference = "Megatron-style baseline (benchmarks/megatron_style_baseline.py; no Megatron-LM checkout given)"
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        ref_cmd = [sys.executable, str(ROOT / "benchmarks" / "megatron_style_baseline.py"), str(source),
                   str(work / "ref"), str(folder), str(args.workers)]

    ours_env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ours_s = timed(ours_cmd("ours", 1), env=ours_env, repeats=args.repeats)
    parts_s = timed(ours_cmd("parts", args.partitions), env=ours_env, repeats=args.repeats)
    ref_s = timed(ref_cmd, env=env, repeats=args.repeats)
    tokens = IndexedDataset(work / "ours_text_document").num_tokens
    identical = same_dataset(work / "ours_text_document", work / "ref_text_document")
    parts_identical = same_dataset(work / "ours_text_document", work / "parts_text_document")
    print(f"input      {source} ({size_mb:.1f} MB), tokenizer {args.tokenizer}, {args.workers} workers, "
          f"{os.cpu_count()} cores, median of {args.repeats} runs")
    print(f"reference  {reference}")
    print(f"{'':22} {'wall s':>8} {'MB/s':>8} {'tokens/s':>12}")
    rows = (("reference", ref_s), ("ours, 1 partition", ours_s), (f"ours, {args.partitions} partitions", parts_s))
    for name, seconds in rows:
        print(f"{name:<22} {seconds:8.2f} {size_mb / seconds:8.2f} {tokens / seconds:12,.0f}")
    print(f"speed-up   {ref_s / ours_s:.1f}x (same {tokens:,} tokens; outputs byte-identical: {identical})")
    print(f"partitions {args.partitions} vs 1: {ours_s / parts_s:.2f}x (outputs byte-identical: {parts_identical})")
    if not has_pyarrow():
        print("parquet    not measured: it needs pyarrow (pip install -e '.[parquet]')")
        return
    print(f"{'Parquet vs JSONL':<22} {'MB':>8} {'JSONL s':>8} {'Parquet s':>10} {'ratio':>6}  identical")
    for copies in sorted({1, max(1, -(-args.parquet_mb * 10**6 // source.stat().st_size))}):
        jsonl = source if copies == 1 else repeated(source, work / f"x{copies}.jsonl", copies)
        parquet = as_parquet(jsonl, work / f"x{copies}.parquet")
        jsonl_s, parquet_s, ratio = paired(ours_cmd(f"j{copies}", 1, jsonl), ours_cmd(f"p{copies}", 1, parquet),
                                           env=ours_env, repeats=max(args.repeats, 5))
        same = same_dataset(work / f"j{copies}_text_document", work / f"p{copies}_text_document")
        print(f"{f'records x{copies}':<22} {jsonl.stat().st_size / 1e6:8.1f} {jsonl_s:8.2f} {parquet_s:10.2f} "
              f"{ratio:5.2f}x  {same}")
    print("parquet    ratio: the median over pairs run back to back of JSONL wall time / Parquet wall time, one "
          "partition; above 1 Parquet is faster. Each run pays pyarrow's import once, which weighs on the small "
          "input only")


def paired(command_a: list[str], command_b: list[str], env: dict, repeats: int) -> tuple[float, float, float]:
    """A and B run in turn, `repeats` pairs after one of each to warm up: their median wall times and the
    median of the pairs' ratios A/B (a pair shares the machine's mood, so the ratio drifts less than either)."""
    timed(command_a, env=env), timed(command_b, env=env)
    pairs = [(timed(command_a, env=env), timed(command_b, env=env)) for _ in range(repeats)]
    return (statistics.median(a for a, _ in pairs), statistics.median(b for _, b in pairs),
            statistics.median(a / b for a, b in pairs))


def has_pyarrow() -> bool:
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def repeated(source: Path, target: Path, copies: int) -> Path:
    """`source`'s records `copies` times over, one file."""
    data = source.read_bytes()
    with open(target, "wb") as out:
        for _ in range(copies):
            out.write(data if data.endswith(b"\n") else data + b"\n")
    return target


def as_parquet(source: Path, target: Path) -> Path:
    """The records of JSONL `source` as one Parquet file, every field a column, row groups of 128 rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open(source, encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    pq.write_table(pa.Table.from_pylist(records), target, row_group_size=128)
    return target


if __name__ == "__main__":
    main()
