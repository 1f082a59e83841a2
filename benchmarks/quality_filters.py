"""The quality filters against their peer, in one run: `helpers.clean --filters` and datatrove 0.10.1's filters of
the same names, each filter alone and the four as one stage, and `--pii` against datatrove's `PIIFormatter`, on
the same documents of real text, 2 workers each.

    python benchmarks/quality_filters.py [--corpus workshop|outside] [--runs 3] [--limit 0] [--workers 2]
        [--only NAME] [--profile]
    pip install -e '.[dedup-peer]'      # datatrove and spaCy, for the peer's rows

The documents are the workshop corpus (`--corpus workshop`: `data/raw`, its three domains, 1,645 documents,
15.7 MB) or text the project did not write (`--corpus outside`: `benchmarks/outside_corpus.py` builds it from
this machine's manuals, standard-library docstrings and sources, READMEs, licences, HTML pages and translation
catalogues; about 2,900 documents, 17 MB); the first `--limit` records of each file, all by default. Each
tool's whole run is timed, start-up included, so a small `--limit` measures mostly the start-ups. The speed is
documents per CPU second: the user and system time of the tool's whole process tree, so that a busy machine or
a tool that leaves a core idle does not move it; the wall time is shown beside it. Each row is run `--runs`
times, the tools in turn; the table gives the median and the range of the ratio.

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
import itertools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from outside_corpus import build as build_outside  # noqa: E402

from helpers.clean.steps.pii import DATATROVE_KINDS, EMAIL_STAND_INS, IP_STAND_INS  # noqa: E402
from helpers.common.paths import RAW_DIR  # noqa: E402

DOMAINS = ("literature", "docs", "code")
PEER = {"gopher-quality": "GopherQualityFilter()", "gopher-repetition": "GopherRepetitionFilter()",
        "c4-quality": "C4QualityFilter()", "fineweb-quality": "FineWebQualityFilter()"}
STAGE = ",".join(PEER)
SPLIT_BATCH = 64  # new runs split at a time when the profile times their splitting (a text brings about that many)
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


def tree_cpu(command: list[str], env: dict) -> tuple[float, float, float]:
    """Run `command`: the CPU seconds of its whole process tree (user and system time), its wall seconds and the
    peak of its summed RSS (MB). Two counts of the CPU time, each short of it in its own way, and the larger
    taken: every process of the tree as last seen, polled every 20 ms (a process's last moments are missed),
    and the kernel's count of the children waited for (a process pool's workers that no one waits for, as
    under a fork server, are missed)."""
    import psutil

    log = tempfile.TemporaryFile("w+")  # not a pipe: a full one would stop the tool
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log, text=True)
    root, peak, seconds = psutil.Process(process.pid), 0, {}
    while process.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            tree = []
        rss = 0
        for member in tree:
            try:
                with member.oneshot():
                    times, rss = member.cpu_times(), rss + member.memory_info().rss
                seconds[member.pid, member.create_time()] = times.user + times.system
            except psutil.Error:
                pass
        peak = max(peak, rss)
        time.sleep(0.02)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode:
        log.seek(0)
        raise SystemExit(f"{command[:4]} failed:\n{log.read()[-2000:]}")
    waited = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return max(sum(seconds.values()), waited), wall, peak / 1e6


def corpus(source: Path, which: str, limit: int) -> tuple[int, float]:
    """The chosen corpus's JSONL files in `source` (the first `limit` records of each): (documents, MB)."""
    if which == "outside":
        build_outside(source / "full", 3.0)
        files = sorted((source / "full").iterdir())
    else:
        files = [RAW_DIR / f"{domain}.jsonl" for domain in DOMAINS]
    documents = 0
    for path in files:
        with open(path, encoding="utf-8") as handle:
            lines = [line for number, line in enumerate(handle) if not limit or number < limit]
        (source / path.name).write_text("".join(lines), encoding="utf-8")
        documents += len(lines)
    shutil.rmtree(source / "full", ignore_errors=True)
    return documents, sum(path.stat().st_size for path in source.iterdir()) / 1e6


def one_row(work: Path, source: Path, stage: tuple, args) -> tuple[list, list, tuple, bool]:
    """One row's runs, each tool in turn: ([(cpu, wall, MB)] ours, the same of datatrove's, same decisions)."""
    label, flags, peer_steps = stage
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    ours, peer, same = [], [], True
    script = work / "peer.py"
    script.write_text(DATATROVE.format(filters=peer_steps))
    for _ in range(args.runs):
        ours_out, peer_out = work / "ours", work / "peer"
        shutil.rmtree(ours_out, ignore_errors=True), shutil.rmtree(peer_out, ignore_errors=True)
        ours.append(tree_cpu([sys.executable, "-m", "helpers.clean", "--input", *map(str, sorted(source.iterdir())),
                              "--output-dir", str(ours_out), *flags, "--workers", str(args.workers),
                              "--no-progress"], env))
        peer.append(tree_cpu([sys.executable, str(script), str(source), str(peer_out), str(work / "logs"),
                              str(args.workers)], env))
        shutil.rmtree(work / "logs", ignore_errors=True)
        ours_kept, theirs = kept(ours_out), kept(peer_out)
        if label == "--pii":
            ours_kept = {key: kinds(text) for key, text in ours_kept.items()}
            theirs = {key: kinds(text) for key, text in theirs.items()}
        same = same and ours_kept == theirs
    return ours, peer, same


def profile(source: Path) -> None:
    """Where our stage's time goes, in this process: per input file (a kind of text), the CPU seconds each filter
    took on the documents that reached it (the four in order, as one stage; a filter's first ask for a text's
    words splits them, so the words count where first asked for), and how many reached it; then, of the stage's
    time, how much went to splitting runs of characters the splitter had not met before (spaCy's affix algorithm
    in Python, once per distinct run) and how many such runs each file brought."""
    from helpers.clean.steps.filters import FILTERS, english_words

    steps = [FILTERS[name]() for name in PEER]
    for step in steps:
        step.warm_up()
    first_met = FirstMetRuns(english_words())
    print("\nwhere our stage's time goes (CPU s, one process; documents that reached each filter)")
    print(f"{'input':<20} {'docs':>6} {'MB':>5} " + " ".join(f"{name:>24}" for name in PEER) +
          f" {'stage':>7} {'new runs':>9} {'split s':>8}")
    for path in sorted(source.iterdir()):
        texts = [json.loads(line)["text"] for line in path.open(encoding="utf-8")]
        seconds, reached = [0.0] * len(steps), [0] * len(steps)
        for text in texts:
            for index, step in enumerate(steps):
                start = time.process_time()
                text, reason = step.apply(text, {})
                seconds[index] += time.process_time() - start
                reached[index] += 1
                if reason is not None:
                    break
        megabytes, (new_runs, split_seconds) = path.stat().st_size / 1e6, first_met.counted()
        cells = " ".join(f"{f'{spent:.2f} s ({count:,})':>24}" for spent, count in zip(seconds, reached))
        print(f"{path.stem:<20} {len(texts):>6,} {megabytes:>5.1f} {cells} {sum(seconds):>7.2f} "
              f"{new_runs:>9,} {split_seconds:>8.2f}", flush=True)


class FirstMetRuns:
    """The runs of characters the splitter met for the first time (those its cache of runs gained), and the CPU
    seconds their splitting takes, timed afterwards in one go (a clock read around each split would cost about as
    much as a split): split again, forgotten first, SPLIT_BATCH at a time, as the stage splits a text's new runs
    (with the compiled splitter where it is loaded, `helpers.clean.text.compiled_runs`)."""

    def __init__(self, splitter):
        self.splitter, self.known = splitter, len(splitter.runs)

    def counted(self) -> tuple[int, float]:
        """(the runs met since the last count, the CPU seconds splitting them takes)."""
        runs = list(itertools.islice(self.splitter.runs, self.known, None))
        for run in runs:
            del self.splitter.runs[run]
        start = time.process_time()
        for first in range(0, len(runs), SPLIT_BATCH):
            batch = runs[first:first + SPLIT_BATCH]
            if self.splitter.compiled is not None:
                self.splitter._split_new(batch)
            else:
                for run in batch:
                    self.splitter._tokens(run)
        seconds = time.process_time() - start
        self.known = len(self.splitter.runs)
        return len(runs), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=("workshop", "outside"), default="workshop")
    parser.add_argument("--runs", type=int, default=3, help="runs of each row (each tool in turn)")
    parser.add_argument("--limit", type=int, default=0, help="records of each file (0: all)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", default=None, help="one row: a filter's name, the four's, or --pii")
    parser.add_argument("--profile", action="store_true", help="and where our stage's time goes, per input file")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="quality-filters-"))
    try:
        source = work / "data"
        source.mkdir()
        documents, megabytes = corpus(source, args.corpus, args.limit)
        print(f"{documents:,} documents ({megabytes:.1f} MB) of the {args.corpus} corpus, {args.workers} workers "
              f"each, {args.runs} runs of each row (medians; the ratio's range over the runs)")
        print(f"{'filters':<70} {'ours docs/CPU s':>15} {'datatrove':>10} {'ratio':>6} {'range':>11} "
              f"{'ours wall s':>11} {'peer wall s':>11} {'ours MB':>8} {'peer MB':>8}  same decisions")
        for stage in [stage for stage in STAGES if args.only in (None, stage[0])]:
            ours, peer, same = one_row(work, source, stage, args)
            ratios = [theirs[0] / mine[0] for mine, theirs in zip(ours, peer)]
            median = [statistics.median(values) for values in (*zip(*ours), *zip(*peer))]
            print(f"{stage[0]:<70} {documents / median[0]:>15,.0f} {documents / median[3]:>10,.0f} "
                  f"{statistics.median(ratios):>5.1f}x {min(ratios):>5.1f}-{max(ratios):<5.1f} {median[1]:>11.1f} "
                  f"{median[4]:>11.1f} {median[2]:>8,.0f} {median[5]:>8,.0f}  {same}", flush=True)
        if args.profile:
            profile(source)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
