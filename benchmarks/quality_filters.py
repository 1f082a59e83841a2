"""The quality filters against their peer, in one run: `helpers.clean --filters` and datatrove 0.10.1's filters of
the same names, each filter alone and the four as one stage, and `--pii` against datatrove's `PIIFormatter`, on
the same documents of real text, 2 workers each.

    python benchmarks/quality_filters.py [--limit 0] [--workers 2] [--only NAME]
    pip install -e '.[dedup-peer]'      # datatrove and spaCy, for the peer's rows

The documents are the workshop corpus (`data/raw`, its three domains; the first `--limit` records of each, all by
default: 1,645 documents, 15.7 MB). Each tool's whole run is timed, start-up included, so a small `--limit`
measures mostly the start-ups: with one record of each domain, ours took about 1 s (most of it loading numba's
compiled n-gram loops, once, before the workers fork) and datatrove 2.5 times as long, on a 2-core machine.

Each tool runs as its own process tree on the same three JSONL files: ours as `python -m helpers.clean`, datatrove
as a `LocalPipelineExecutor` of its `JsonlReader`, the filter(s) and its `JsonlWriter`, with as many tasks as
workers. The table gives documents/s, the ratio, the peak memory of each whole tree (every process it starts,
polled every 50 ms, their RSS added up: `benchmarks/near_duplicates.py`), and whether the two kept the same
documents with the same text (C4's filter cuts lines from the documents it keeps). For `--pii`, as `--pii
email,ip` (the kinds datatrove's `PIIFormatter()` masks): the same spans replaced (datatrove takes its stand-ins in
turn over all of a task's documents, ours start again with each document, so each stand-in is read as its kind).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from near_duplicates import peak_tree_rss  # noqa: E402

from helpers.clean.steps.pii import DATATROVE_KINDS, EMAIL_STAND_INS, IP_STAND_INS  # noqa: E402
from helpers.common.paths import RAW_DIR  # noqa: E402

DOMAINS = ("literature", "docs", "code")
PEER = {"gopher-quality": "GopherQualityFilter()", "gopher-repetition": "GopherRepetitionFilter()",
        "c4-quality": "C4QualityFilter()", "fineweb-quality": "FineWebQualityFilter()"}
STAGE = ",".join(PEER)
STAGES = [(name, ["--filters", name], PEER[name]) for name in PEER] + [
    (STAGE, ["--filters", STAGE], ", ".join(PEER.values())), ("--pii", ["--pii", ",".join(DATATROVE_KINDS)], "PIIFormatter()")]

DATATROVE = textwrap.dedent('''
    import sys

    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter, GopherQualityFilter,
                                            GopherRepetitionFilter)
    from datatrove.pipeline.formatters import PIIFormatter
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    if __name__ == "__main__":
        source, out, logs, workers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
        LocalPipelineExecutor(pipeline=[JsonlReader(source, glob_pattern="*.jsonl"), {filters},
                                        JsonlWriter(out, compression=None)],
                              tasks=workers, workers=workers, logging_dir=logs).run()
''')


def kept(folder: Path) -> dict[str, str]:
    """id -> text of the records a tool wrote into `folder` (JSONL, gzip or not)."""
    found = {}
    for path in sorted(folder.rglob("*.jsonl*")):
        if path.name == "removed.jsonl":
            continue
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                found[str(record["id"])] = record["text"]
    return found


def kinds(text: str) -> str:
    """`text` with each PII stand-in read as its kind."""
    for kind, stand_ins in (("<email>", EMAIL_STAND_INS), ("<ip>", IP_STAND_INS)):
        for stand_in in stand_ins:
            text = text.replace(stand_in, kind)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=0, help="records of each domain (0: all)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", default=None, help="one row: a filter's name, the four's, or --pii")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="quality-filters-"))
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    try:
        source = work / "data"
        source.mkdir()
        documents = 0
        for domain in DOMAINS:
            with open(RAW_DIR / f"{domain}.jsonl", encoding="utf-8") as handle:
                lines = [line for number, line in enumerate(handle) if not args.limit or number < args.limit]
            (source / f"{domain}.jsonl").write_text("".join(lines), encoding="utf-8")
            documents += len(lines)
        megabytes = sum(path.stat().st_size for path in source.iterdir()) / 1e6
        print(f"{documents:,} documents ({megabytes:.1f} MB) of the workshop corpus, {args.workers} workers each")
        print(f"{'filters':<70} {'ours docs/s':>11} {'datatrove':>10} {'ratio':>6} {'ours MB':>8} "
              f"{'peer MB':>8}  same decisions")
        for label, flags, peer_steps in [stage for stage in STAGES if args.only in (None, stage[0])]:
            ours_out, peer_out = work / "ours", work / "peer"
            shutil.rmtree(ours_out, ignore_errors=True), shutil.rmtree(peer_out, ignore_errors=True)
            ours_s, ours_mb, _ = peak_tree_rss([
                sys.executable, "-m", "helpers.clean", "--input", *map(str, sorted(source.iterdir())),
                "--output-dir", str(ours_out), *flags, "--workers", str(args.workers), "--no-progress"], env)
            script = work / "peer.py"
            script.write_text(DATATROVE.format(filters=peer_steps))
            peer_s, peer_mb, _ = peak_tree_rss([sys.executable, str(script), str(source), str(peer_out),
                                                str(work / "logs"), str(args.workers)], env)
            ours_kept, theirs = kept(ours_out), kept(peer_out)
            if label == "--pii":
                ours_kept = {key: kinds(text) for key, text in ours_kept.items()}
                theirs = {key: kinds(text) for key, text in theirs.items()}
            same = ours_kept == theirs
            print(f"{label:<70} {documents / ours_s:>11,.0f} {documents / peer_s:>10,.0f} "
                  f"{peer_s / ours_s:>5.1f}x {ours_mb:>8,.0f} {peer_mb:>8,.0f}  {same}", flush=True)
            shutil.rmtree(work / "logs", ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
