"""Near-duplicate removal against its peer, in one run: `helpers.clean --fuzzy` and datatrove's MinHash
pipeline (its defaults: word 5-grams, 14 bands of 8 hashes, no verification) on the same documents of real
text with planted near copies of known Jaccard similarity.

    python benchmarks/near_duplicates.py [--words 200] [--documents 18000] [--copies 2000] [--workers 2]
    python benchmarks/near_duplicates.py --cluster 50000 --words 35   # one original, 50,000 copies, 2,000 others
    python benchmarks/near_duplicates.py --band-stage 10000000 --memory-limit 2GB   # the band and cluster stage alone
    pip install -e '.[dedup-peer]'      # datatrove and spaCy (its English word tokenizer), for the peer's row

The documents are the workshop corpus cut into pieces of `--words` words; `--copies` of them get a copy
appended at the end with a few words replaced, its exact Jaccard (word 5-grams, as `helpers.clean.text.shingles`
counts them) measured. (datatrove 0.10 hashes shingles as str, which xxhash 4 refuses: its
hash function is given the same xxh64 of the UTF-8 bytes, as xxhash 3 computed.) Each tool runs as its own process tree on the same JSONL (two files, so that both
can read with two workers); the table gives documents/s, the peak memory of the whole tree (every process
the tool starts, polled every 50 ms, their RSS added up), the copies removed by Jaccard band (recall), the
originals removed while their copy was kept, and the planted pairs below the threshold that were removed. An
original removed as a near-duplicate of another original is not lost (that one is kept): ours names what each
removed record duplicates, so its count leaves those out; datatrove's output does not say, so its count is all.
Ours runs at thresholds 0.7, 0.8 and 0.9; datatrove has no threshold of its own, its bands decide.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helpers.common.paths import RAW_DIR  # noqa: E402
from helpers.clean.text.shingles import exact_jaccard  # noqa: E402
from helpers.corpus.build import corpus_paths  # noqa: E402
from helpers.workshop.explore.near_duplicates import plant_copies, word_pieces  # noqa: E402

BANDS = [0.70, 0.75, 0.80, 0.82, 0.85, 0.90, 0.95, 1.0001]


def pieces(words_per_piece: int, limit: int) -> list[str]:
    """The corpus cut into pieces of `words_per_piece` words, `limit` of them chosen at random."""
    texts = (json.loads(line)["text"] for path in corpus_paths(RAW_DIR).values() for line in path.open(encoding="utf-8"))
    return word_pieces(texts, words_per_piece, limit, seed=0)


def planted(texts: list[str], copies: int) -> list[tuple[int, str, float]]:
    """(original's index, copy, exact Jaccard) for `copies` originals chosen at random: 1 to 9 words replaced."""
    chosen = np.random.default_rng(1).choice(len(texts), copies, replace=False)
    return [(int(index), copy, similarity)
            for index, (copy, similarity) in zip(chosen, plant_copies([texts[i] for i in chosen], 9, seed=1))]


def peak_tree_rss(command: list[str], env: dict) -> tuple[float, float, int]:
    """Run `command`; its wall seconds, the peak of its process tree's summed RSS (MB), and the most
    processes the tree held at once."""
    import psutil

    log = tempfile.TemporaryFile("w+")  # not a pipe: a full one would stop the tool
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log, text=True)
    root, peak, most = psutil.Process(process.pid), 0, 0
    while process.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
            most = max(most, len(tree))
        except psutil.Error:
            pass
        time.sleep(0.05)
    seconds = time.perf_counter() - start
    if process.returncode:
        log.seek(0)
        raise SystemExit(f"{command[:4]} failed:\n{log.read()[-2000:]}")
    return seconds, peak / 1e6, most


DATATROVE = textwrap.dedent('''
    import sys

    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.minhash import (MinhashConfig, MinhashDedupBuckets, MinhashDedupCluster,
                                                  MinhashDedupFilter, MinhashDedupSignature)
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter


    def run(steps, tasks, name, work, workers):
        LocalPipelineExecutor(steps, tasks=tasks, workers=workers, logging_dir=f"{work}/logs/{name}").run()


    def xxhash64_of_text(data):  # datatrove 0.10 hands xxhash a str, which xxhash 4 takes as bytes only
        import xxhash

        return xxhash.xxh64_intdigest(data.encode("utf-8") if isinstance(data, str) else data)


    if __name__ == "__main__":  # its workers start from a fork server, which imports this file again
        data, work, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
        config = MinhashConfig()
        signature = MinhashDedupSignature(f"{work}/sigs", config=config)
        signature._hash_func = xxhash64_of_text
        run([JsonlReader(data), signature], 2, "sigs", work, workers)
        run([MinhashDedupBuckets(f"{work}/sigs", f"{work}/buckets", config=config)], config.num_buckets, "buckets",
            work, workers)
        run([MinhashDedupCluster(f"{work}/buckets", f"{work}/remove_ids", config=config)], 1, "clusters", work,
            workers)
        run([JsonlReader(data), MinhashDedupFilter(f"{work}/remove_ids", exclusion_writer=JsonlWriter(f"{work}/removed")),
             JsonlWriter(f"{work}/kept")], 2, "filter", work, workers)
''')


def datatrove_removed(folder: Path) -> set[str]:
    import gzip

    removed = set()
    for path in (folder / "removed").glob("*"):
        with gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path) as lines:
            removed.update(json.loads(line)["id"] for line in lines)
    return removed


def ours_removed(folder: Path) -> set[str]:
    return set(ours_duplicates(folder))


def ours_duplicates(folder: Path) -> dict[str, str]:
    """Each record our run removed as a near-duplicate, with the id of the record it duplicates."""
    lines = (folder / "removed.jsonl").read_text(encoding="utf-8").splitlines()
    return {entry["id"]: entry["duplicate_of"]["id"] for entry in map(json.loads, lines) if entry["step"] == "fuzzy"}


def row(name: str, seconds: float, peak: float, processes: int, removed: set[str] | dict[str, str], documents: int,
        plants: list[tuple[int, str, float]], threshold: float | None) -> dict:
    """One tool's figures; `removed` maps each removed id to the id it duplicates where the tool says."""
    similarity = np.array([j for _, _, j in plants])
    caught = np.array([f"c{k}" in removed for k in range(len(plants))])
    of = removed if isinstance(removed, dict) else {}
    lost = sum(f"o{index}" in removed and f"c{k}" not in removed and not of.get(f"o{index}", "c").startswith("o")
               for k, (index, _, _) in enumerate(plants))
    result = {"tool": name, "docs/s": documents / seconds, "peak MB": peak, "processes": processes,
              "removed": len(removed), "originals lost": lost,
              "removed below T": int((caught & (similarity < threshold)).sum()) if threshold else None}
    for low, high in zip(BANDS, BANDS[1:]):
        inside = (similarity >= low) & (similarity < high)
        result[f"{low:.2f}-{min(high, 1):.2f}"] = caught[inside].mean() if inside.any() else None
    if threshold:
        above = (similarity >= threshold + 0.02) & (similarity <= threshold + 0.10)
        result["recall T+0.02..0.10"] = caught[above].mean() if above.any() else None
    return result


def cluster_row(args: argparse.Namespace, work: Path, env: dict) -> None:
    """One original with `--cluster` near copies beside 2,000 other documents, against as many distinct
    documents: ours at T = 0.8, time, peak memory, and the copies at J >= 0.82 removed."""
    texts = pieces(args.words, args.cluster + 2_001)
    original, others = texts[0], texts[1:2_001]
    copies = [f"{original.rsplit(' ', 1)[0]} copy{k}" for k in range(args.cluster)]  # the last word replaced
    similarity = np.array([exact_jaccard(original, copies[0])])  # the same for every copy
    corpora = {"cluster": [original] + others + copies, "distinct": texts[:len(copies) + 2_001]}
    results = {}
    for name, corpus in corpora.items():
        path = work / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"id": f"{name}{i}", "text": t}) + "\n" for i, t in enumerate(corpus)))
        out = work / f"out-{name}"
        results[name] = peak_tree_rss([sys.executable, "-m", "helpers.clean", "--input", str(path), "--output-dir",
                                       str(out), "--fuzzy", "--threshold", "0.8", "--workers", str(args.workers),
                                       "--no-progress"], env)
        removed = ours_removed(out)
        print(f"{name:<9} {len(corpus):,} documents: {results[name][0]:.1f} s, peak {results[name][1]:,.0f} MB over "
              f"{results[name][2]} processes, {len(removed):,} removed")
    copies_removed = len(ours_removed(work / "out-cluster") & {f"cluster{i}" for i in range(2_001, 2_001 + args.cluster)})
    print(f"cluster   each copy's Jaccard with the original {similarity[0]:.3f}; removed {copies_removed:,} of {args.cluster:,}; time {results['cluster'][0] / results['distinct'][0]:.2f}x "
          "the distinct corpus's")


def band_stage(documents: int, memory_limit: str, work: Path, bands: int = 14) -> dict:
    """The band and cluster stage of `--fuzzy` alone, on `documents` synthetic band keys written as 8 ranges'
    workers write them (in batches): every hundredth document a copy of the one before (all bands equal), and
    50,000 documents equal on one band only (one hot bucket). Every candidate counts as verified. Returns the
    counts and seconds; run in a process of its own, whose peak memory the caller measures."""
    from helpers.clean.text.band_files import BandKeys, KeyWriter, band_budget, band_paths, parse_size
    from helpers.clean.text.lsh import cluster

    rng = np.random.default_rng(0)
    files, counts, batch = [], [], 1 << 20
    started = time.perf_counter()
    for index, start in enumerate(range(0, documents, -(-documents // 8))):
        count = min(-(-documents // 8), documents - start)
        paths = band_paths(work / f".keys{index}.tmp-0", bands)
        writer = KeyWriter(paths)
        for first in range(start, start + count, batch):
            size = min(batch, start + count - first)
            keys = rng.integers(0, 2**63, size=(bands, size), dtype=np.uint64)
            rows = np.arange(first, first + size)
            copies = np.flatnonzero(rows % 100 == 1)
            copies = copies[copies > 0]  # a copy at a batch's first column would need the batch before
            keys[:, copies] = keys[:, copies - 1]
            keys[0, rows < 50_000] = 7  # one hot bucket in band 0
            writer.append(keys)
        writer.close()
        files.append(paths)
        counts.append(count)
    written = time.perf_counter() - started
    limit = parse_size(memory_limit)
    keys = BandKeys(files, counts)
    budget = band_budget(limit, documents)
    started = time.perf_counter()
    found = cluster(documents, keys.buckets(bands, budget), lambda i, j: True)
    removed = int((found.roots != np.arange(documents)).sum())
    return {"documents": documents, "bands": bands, "slices": keys.slices(budget), "written_s": written,
            "cluster_s": time.perf_counter() - started, "removed": removed, "buckets": found.buckets,
            "comparisons": found.comparisons, "most_representatives": found.most_representatives}


def band_stage_row(args: argparse.Namespace, env: dict) -> None:
    """`band_stage` in a process of its own, its peak memory measured from outside."""
    work = Path(tempfile.mkdtemp(prefix="near-dup-bands-"))
    try:
        result_file = work / "result.json"
        code = (f"import sys, json; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); from pathlib import Path; "
                f"import near_duplicates as b; json.dump(b.band_stage({args.band_stage}, {args.memory_limit!r}, "
                f"Path({str(work)!r})), open({str(result_file)!r}, 'w'))")
        seconds, peak, _ = peak_tree_rss([sys.executable, "-c", code], env)
        result = json.loads(result_file.read_text())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    planted = len(range(50_001, args.band_stage, 100)) + 50_000 - 1  # copies beyond the hot bucket, and its members
    print(f"band stage: {result['documents']:,} documents x {result['bands']} bands, --memory-limit "
          f"{args.memory_limit}: {result['slices']} slice(s) a band; keys written in {result['written_s']:.1f} s, "
          f"buckets and clusters in {result['cluster_s']:.1f} s; peak {peak:,.0f} MB; removed {result['removed']:,} "
          f"(planted {planted:,}); {result['buckets']:,} buckets, {result['comparisons']:,} checks, at most "
          f"{result['most_representatives']} representatives; {seconds:.1f} s in all")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=200, help="words per document")
    parser.add_argument("--documents", type=int, default=18_000, help="documents cut from the corpus, at most")
    parser.add_argument("--copies", type=int, default=2_000, help="near copies planted")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cluster", type=int, default=0,
                        help="instead: one original with this many near copies beside 2,000 other documents")
    parser.add_argument("--band-stage", type=int, default=0,
                        help="instead: the band and cluster stage alone on this many synthetic documents")
    parser.add_argument("--memory-limit", default="2GB", help="with --band-stage: helpers.clean's --memory-limit")
    args = parser.parse_args()
    if args.band_stage:
        band_stage_row(args, {**os.environ, "PYTHONPATH": str(ROOT)})
        return
    if args.cluster:
        work = Path(tempfile.mkdtemp(prefix="near-dup-cluster-"))
        try:
            cluster_row(args, work, {**os.environ, "PYTHONPATH": str(ROOT)})
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    texts = pieces(args.words, args.documents)
    plants = planted(texts, args.copies)
    records = ([{"id": f"o{i}", "text": t} for i, t in enumerate(texts)]
               + [{"id": f"c{k}", "text": copy} for k, (_, copy, _) in enumerate(plants)])
    work = Path(tempfile.mkdtemp(prefix="near-dup-bench-"))
    try:
        (work / "data").mkdir()
        half = len(records) // 2
        for name, part in (("a.jsonl", records[:half]), ("b.jsonl", records[half:])):
            (work / "data" / name).write_text("".join(json.dumps(r) + "\n" for r in part), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        similarity = np.array([j for _, _, j in plants])
        print(f"{len(records):,} documents of {args.words} words ({len(texts):,} pieces of the corpus, "
              f"{len(plants):,} planted copies, Jaccard {similarity.min():.2f} to {similarity.max():.2f}); "
              f"{args.workers} workers, {os.cpu_count()} cores")
        rows = []
        for threshold in (0.7, 0.8, 0.9):
            out = work / f"ours-{threshold}"
            measured = peak_tree_rss([sys.executable, "-m", "helpers.clean", "--input", str(work / "data" / "a.jsonl"),
                                      str(work / "data" / "b.jsonl"), "--output-dir", str(out), "--fuzzy",
                                      "--threshold", str(threshold), "--workers", str(args.workers),
                                      "--no-progress"], env)
            rows.append(row(f"helpers.clean, T={threshold}", *measured, ours_duplicates(out), len(records), plants,
                            threshold))
        try:
            import datatrove  # noqa: F401
            import spacy  # noqa: F401
        except ImportError:
            print("datatrove: not measured; fix: pip install -e '.[dedup-peer]'")
        else:
            script = work / "datatrove_minhash.py"
            script.write_text(DATATROVE)
            measured = peak_tree_rss([sys.executable, str(script), str(work / "data"), str(work / "dt"),
                                      str(args.workers)], env)
            rows.append(row("datatrove 0.10 (14x8)", *measured, datatrove_removed(work / "dt"), len(records),
                            plants, None))
        columns = list(rows[0])
        print(" | ".join(columns))
        for entry in rows:
            print(" | ".join("-" if entry.get(c) is None else f"{entry[c]:.2f}" if isinstance(entry.get(c), float)
                             else str(entry.get(c)) for c in columns))
        print("recall columns: the share of planted copies removed whose Jaccard with their original is in that band")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
