"""Cleaning and deduplication of JSONL or Parquet before it is tokenized, with an audit trail.

    python -m helpers.clean --input data/raw/literature.jsonl data/raw/docs.jsonl data/raw/code.jsonl \\
        --output-dir data/clean --normalize --exact --lines --fuzzy [--engine ray]
    python -m helpers.clean --input data/raw/parquet/docs 'more/*.parquet' --output-dir data/clean --exact

Reads JSONL files (`.gz` and `.zst` too), Parquet files, folders of Parquet files and quoted globs of either,
and datasets saved by Hugging Face `save_to_disk`; a folder or a glob stands for its files, each an input of
its own. The text is the field, or column, `--json-key`. Writes, per input file, `OUT/<its name>`: the kept
records in their original order, every field as it was except the text when a step changed it; JSONL as
plain JSONL (`.gz` or `.zst` dropped from the name), Parquet as Parquet with the input's schema and one row
group per input row group that keeps a row; a saved dataset as one, in `OUT/<its folder's name>/` (its
Arrow files, a `state.json` listing them, its `dataset_info.json`), which `datasets.load_from_disk` opens.
Also `OUT/removed.jsonl` (every record that did not make it, with the step that removed it and the record
it duplicates, named by line, or by row and row group, record batch for Arrow) and `OUT/report.json` (per
input and step, documents and bytes in, removed and out; a columnar input's bytes are those of its
texts). Steps, always in this order:

- `--normalize`: Unicode NFC, line ends, control characters, runs of empty lines (see
  `helpers.clean.text_keys`; indentation is never touched); a record left with no visible text goes;
- `--exact`: a 128-bit xxh3 digest of the (normalised) text; across all inputs the first occurrence, by
  input order then line, is kept;
- `--lines`: a line (30 characters or more, surrounding whitespace aside) held by at least
  `--line-min-count` of the documents still kept is boilerplate, and every occurrence goes (two passes:
  count, then drop); a record left empty goes; the report lists the most repeated lines;
- `--fuzzy`: MinHash signatures of word 5-grams (rensa, 128 permutations, seed 1), LSH with the bands and
  rows chosen for recall at `--threshold` (a pair at T is a candidate with probability 0.95 or more, at
  T + 0.02 with 0.98; `--bands B --rows R` to set them), each candidate verified on the exact Jaccard of
  the two shingle sets against its bucket's representatives, grouped with union-find; the first record of
  each group is kept (`helpers.clean.lsh` says what the worst case can miss). For comparison, datatrove's
  defaults are word 5-grams with 14 bands of 8 rows (112 hashes) and no verification; NeMo Curator's are
  character n-grams, 20 bands of 13 rows (260 hashes), threshold 0.8, with an optional check of exact
  Jaccard.

Each input is cut into contiguous ranges (`--parts`, default one per worker): bytes cut at line ends, or
Parquet row groups (`helpers.clean.parquet`: the first passes read only the text and `id` columns); every
pass runs over the ranges (in worker processes, or as Ray tasks with `--engine ray`) and returns digests
or counts, never texts (the fuzzy pass writes band keys to hidden files, read a band at a time within
`--memory-limit`: `helpers.clean.band_files`), so memory stays bounded; the decisions are taken once, by this process,
in input order; the last pass writes each range's kept records into a part file, and the parts are joined
in order. So the output does not depend on the engine or on the number of parts. A bad record (for
Parquet, a null text) stops the run with one line naming file and line, or row and row group (or, with
`--skip-bad-records`, is skipped, and listed in `removed.jsonl`). Outputs move into place together when all
are complete; a failed, interrupted or terminated run leaves none.
"""

from __future__ import annotations

import functools
import json
import os
import time
from pathlib import Path

import numpy as np

from ..common.cli import CommandParser
from ..common.errors import UserError
from ..common.files import remove_stale_temporaries, temporary_name, write_text_atomically
from ..common.progress import progress_bar
from ..common.stop_signals import check_signals, signals_held
from ..corpus.columnar import SAVED_STATE
from ..corpus.inputs import open_input
from ..corpus.ranges import is_compressed
from ..engines.choice import ENGINES, check_engine_flags, engine_for
from .band_files import BandKeys, band_budget, band_paths, parse_size
from .lsh import check_bands, check_threshold, choose_bands, cluster, s_curve_points
from .parquet import read_columns, saved_folder, saved_state
from .passes import CleanSettings, RangeTask, apply_lines, count_lines, scan, shingle_sets, write_part
from .report import STEPS, Documents, removed_lines, step_table, summary_lines
from .shingles import sets_jaccard

REPORT, REMOVED = "report.json", "removed.jsonl"
TOP_LINES = 10


def clean(inputs, output_dir, *, normalize: bool = False, exact: bool = False, lines: bool = False,
          fuzzy: bool = False, threshold: float = 0.8, line_min_count: int = 10, line_min_chars: int = 30,
          ngram: int = 5, num_perm: int = 128, bands: int | None = None, rows: int | None = None, workers: int = 1,
          parts: int | None = None, engine: str = "local",
          ray_address: str | None = None, skip_bad_records: bool = False, text_key: str = "text",
          memory_limit: int | str = "2GB", progress: bool = True) -> dict:
    """Clean `inputs` into `output_dir` (see the module docstring); returns the report. `memory_limit`
    (bytes, or a size such as "2GB") bounds what the driver holds for `--fuzzy` (`helpers.clean.band_files`)."""
    paths = [Path(path) for path in inputs]
    out = Path(output_dir)
    settings = CleanSettings(normalize=normalize, exact=exact, lines=lines, fuzzy=fuzzy, threshold=threshold,
                             line_min_count=line_min_count, line_min_chars=line_min_chars, ngram=ngram,
                             num_perm=num_perm, bands=bands, rows=rows, text_key=text_key,
                             skip_bad_records=skip_bad_records,
                             memory_limit=parse_size(memory_limit) if isinstance(memory_limit, str) else memory_limit)
    parts = parts or workers
    sources = _check_request(paths=paths, out=out, settings=settings, workers=workers, parts=parts, engine=engine,
                             ray_address=ray_address)
    paths = [source.path for source in sources]
    columns = [read_columns(source, text_key) if source.columnar else () for source in sources]  # refuses a bad one
    out.mkdir(parents=True, exist_ok=True)
    outputs = [output_name(path) for path in paths]
    for name in [*outputs, *_saved_metadata(paths), REMOVED, REPORT]:
        (out / name).parent.mkdir(exist_ok=True)  # a saved dataset's folder
        remove_stale_temporaries(out / name)
    run = _Run(settings=settings, tasks=_tasks(sources, columns, parts), sources=sources, outputs=outputs, out=out,
               progress=progress)
    started = time.perf_counter()
    try:
        with engine_for(engine, workers, ray_address) as runner:
            run.seconds["engine start"] = time.perf_counter() - started  # so that no pass's figure carries it
            report = run.execute(runner)
    finally:  # once every worker has stopped: none can write a part after this
        run.remove_temporaries()
    report.update(engine=engine, workers=workers, parts=len(run.tasks), seconds_total=time.perf_counter() - started)
    write_text_atomically(out / REPORT, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    return report


def _tasks(sources: list, columns: list[tuple[str, ...]], parts: int) -> list[RangeTask]:
    """Every input's ranges, in input order; a Parquet file without rows has one empty range, so that its
    output is written too (with its schema, and no row)."""
    ranges = [(index, source, start, end) for index, source in enumerate(sources)
              for start, end in source.plan(parts) or [(0, 0)]]
    return [RangeTask(input_index=index, source=source.absolute(), start=start, end=end, index=number,
                      columns=columns[index]) for number, (index, source, start, end) in enumerate(ranges)]


def _check_request(paths: list[Path], out: Path, settings: CleanSettings, workers: int, parts: int,
                   engine: str, ray_address: str | None) -> list:
    """Refuse, before anything is written, what cannot give a sound run; the inputs, one per file the given ones
    stand for (`helpers.corpus.inputs`)."""
    if not (settings.normalize or settings.exact or settings.lines or settings.fuzzy):
        raise UserError("no step asked for; fix: pass one or more of --normalize --exact --lines --fuzzy")
    check_engine_flags(engine, workers, ray_address, ("--parts", parts))
    check_threshold(settings.threshold)
    check_bands(settings.bands, settings.rows, settings.num_perm)
    if settings.line_min_count < 2:
        raise UserError(f"--line-min-count {settings.line_min_count}: a line is repeated from 2 documents on; "
                        "fix: pass 2 or more")
    if settings.ngram < 1 or settings.num_perm < 2:
        raise UserError(f"--ngram {settings.ngram} --num-perm {settings.num_perm}: need at least 1 word and 2 "
                        "permutations; fix: e.g. --ngram 5 --num-perm 128")
    if not paths:
        raise UserError("no input; fix: name one or more JSONL or Parquet files with --input")
    sources = [each for path in paths for each in open_input(path).each_file()]
    paths = [source.path for source in sources]
    names = [output_name(path) for path in paths]
    for name in sorted({name for name in names if names.count(name) > 1}):
        raise UserError(f"two inputs would both be written as {name} (each output is named after its input); "
                        "fix: rename one")
    for path in paths:
        if output_name(path) in (REPORT, REMOVED):
            raise UserError(f"{path}: an input may not be called {path.name}, the name of a report; fix: rename it")
        if (out / output_name(path)).resolve() == path.resolve():
            raise UserError(f"{path}: --output-dir {out} would overwrite this input; fix: choose another folder")
    if out.exists() and not out.is_dir():
        raise UserError(f"--output-dir {out}: a file, not a folder; fix: name a folder")
    return sources


def output_name(path: Path) -> str:
    """The name of an input file's cleaned output under OUT: the file's own, less `.gz` or `.zst` (the output
    is plain JSONL); a saved dataset's Arrow file goes in a folder named as the dataset's."""
    folder = saved_folder(path)
    if folder is not None:
        return f"{folder.name}/{path.name}"
    return path.name[:-len(path.suffix)] if is_compressed(path) else path.name


def _saved_metadata(paths: list[Path]) -> dict[str, tuple[Path, list[Path]]]:
    """For each saved dataset among the inputs, the names under OUT of its state.json and dataset_info.json,
    with its folder and its Arrow files."""
    saved: dict[Path, list[Path]] = {}
    for path in paths:
        folder = saved_folder(path)
        if folder is not None:
            saved.setdefault(folder, []).append(path)
    return {f"{folder.name}/{name}": (folder, files) for folder, files in saved.items()
            for name in (SAVED_STATE, "dataset_info.json")}




class _Run:
    """One cleaning run: its passes, its decisions between them, and its outputs."""

    def __init__(self, settings: CleanSettings, tasks: list[RangeTask], sources: list, outputs: list[str],
                 out: Path, progress: bool):
        self.settings, self.tasks, self.out, self.progress = settings, tasks, out, progress
        self.sources, self.outputs = sources, outputs  # the input files, their outputs' names
        self.paths = [source.path for source in sources]
        self.names = [output_name(path) if saved_folder(path) else path.name for path in self.paths]  # in reports
        self.parquet = [source.group_word for source in sources]  # what a group of each is called; None for JSONL
        self.sizes = [task.source.range_size(task.start, task.end) for task in tasks]  # for the progress bars
        self.seconds: dict[str, float] = {}
        self.rates: dict[str, float] = {}
        self.temporaries: list[Path] = []
        self.metadata: list[str] = []  # saved datasets' state.json and dataset_info.json, under OUT

    def remove_temporaries(self) -> None:
        """Remove every file this run wrote under a temporary name, workers' unfinished parts included."""
        for path in self.temporaries:
            for written in path.parent.glob(f"{path.name}*"):
                written.unlink(missing_ok=True)

    def _pass(self, runner, name: str, jobs: list[tuple], documents: int | None = None) -> list:
        """Run one pass over every range, with a progress bar in bytes; its time goes in the report."""
        sizes = self.sizes
        start = time.perf_counter()
        with progress_bar(total=sum(sizes), unit="B", unit_scale=True, desc=f"clean: {name}",
                          disable=not self.progress) as bar:
            results = runner.map(jobs, lambda index, _: bar.update(sizes[index]))
        self.seconds[name] = time.perf_counter() - start
        self.rates[name] = (documents if documents is not None else 0) / max(self.seconds[name], 1e-9)
        check_signals()
        return results

    def execute(self, runner) -> dict:
        """Every pass and decision, then the outputs moved into place; the report."""
        settings, tasks = self.settings, self.tasks
        scans = self._pass(runner, "scan", [(scan, task, settings) for task in tasks])
        documents, offsets = self._documents(scans)
        self.rates["scan"] = len(documents) / max(self.seconds["scan"], 1e-9)
        if settings.fuzzy:  # a limit too small for this many documents is refused before anything is signed
            band_budget(settings.memory_limit, len(documents))
        if settings.normalize:
            documents.remove(np.concatenate([s.empty_after_normalize for s in scans]), "normalize")
        if settings.exact:
            self._exact(documents, np.concatenate([s.digests for s in scans]))
        repeated, line_report = frozenset(), None
        if settings.lines:
            repeated, top, line_report = self._repeated_lines(runner, documents, offsets)
        if settings.lines or settings.fuzzy:
            self._apply(runner=runner, documents=documents, offsets=offsets, repeated=repeated,
                        wanted=top if settings.lines else frozenset(), line_report=line_report)
        fuzzy_report = self._fuzzy(runner, documents, offsets, repeated) if settings.fuzzy else None
        self._write(runner, documents, offsets, repeated)
        bad = [[entry for s, task in zip(scans, tasks) if task.input_index == index for entry in s.bad]
               for index in range(len(self.names))]
        removed = removed_lines(documents, self.names, bad, self.parquet)
        file_bytes = [sum(s.input_bytes for s, task in zip(scans, tasks) if task.input_index == index)
                      for index in range(len(self.names))]
        steps = [step for step in STEPS if getattr(settings, step)]
        report = {"output_dir": str(self.out), "settings": {
                      "steps": steps, "threshold": settings.threshold, "line_min_count": settings.line_min_count,
                      "line_min_chars": settings.line_min_chars, "ngram": settings.ngram,
                      "num_perm": settings.num_perm, "bands": settings.bands, "rows": settings.rows,
                      "seed": settings.seed, "text_key": settings.text_key,
                      "skip_bad_records": settings.skip_bad_records},
                  "inputs": step_table(documents=documents, names=self.names, bad_counts=[len(b) for b in bad],
                                       file_bytes=file_bytes, steps=steps),
                  "blank_lines": sum(s.blank_lines for s in scans), "removed": len(removed),
                  "lines": line_report, "fuzzy": fuzzy_report,
                  "seconds": self.seconds, "documents_per_second": self.rates}
        self._commit(removed)
        return report

    def _documents(self, scans: list) -> tuple[Documents, np.ndarray]:
        """The run's table of good records, and where each range's records start in it."""
        counts = [len(s.lines) for s in scans]
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        total = int(offsets[-1])
        after_normalize = np.concatenate([s.bytes_after_normalize for s in scans])  # every input has a range
        documents = Documents(
            input_index=np.repeat([task.input_index for task in self.tasks], counts).astype(np.int64),
            lines=np.concatenate([s.lines for s in scans]), places=np.concatenate([s.places for s in scans]),
            ids=[identifier for s in scans for identifier in s.ids],
            raw_bytes=np.concatenate([s.raw_bytes for s in scans]), bytes_after_normalize=after_normalize,
            bytes_after_lines=after_normalize.copy(), removed_by=np.zeros(total, np.int8),
            duplicate_of=np.full(total, -1, np.int64), similarity=np.full(total, np.nan),
            lines_dropped=np.zeros(total, np.int64))
        return documents, offsets

    def _exact(self, documents: Documents, digests: np.ndarray) -> None:
        """Of each set of records with the same digest, all but the first (in run order) go."""
        start = time.perf_counter()
        alive = np.flatnonzero(documents.alive())
        keys = np.ascontiguousarray(digests[alive]).view(np.dtype((np.void, 16))).ravel()
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        original = alive[first[inverse.ravel()]]
        duplicate = original != alive
        documents.duplicate_of[alive[duplicate]] = original[duplicate]
        mask = np.zeros(len(documents), bool)
        mask[alive[duplicate]] = True
        documents.remove(mask, "exact")
        self.seconds["exact"] = time.perf_counter() - start
        self.rates["exact"] = len(alive) / max(self.seconds["exact"], 1e-9)

    def _masks(self, documents: Documents, offsets: np.ndarray) -> list[np.ndarray]:
        """Per range, which of its records are already removed."""
        removed = ~documents.alive()
        return [removed[offsets[k]:offsets[k + 1]] for k in range(len(self.tasks))]

    def _repeated_lines(self, runner, documents: Documents, offsets: np.ndarray):
        """Count each line over the documents still kept; the keys held by enough documents, the keys of
        the most repeated lines, and the report's line section."""
        masks = self._masks(documents, offsets)
        results = self._pass(runner, "lines", [(count_lines, task, self.settings, mask)
                                               for task, mask in zip(self.tasks, masks)],
                             int(documents.alive().sum()))
        keys = np.concatenate([keys for keys, _ in results])
        counts = np.concatenate([counts for _, counts in results])
        unique, where = np.unique(keys, return_inverse=True)
        totals = np.bincount(where.ravel(), weights=counts, minlength=len(unique)).astype(np.int64)
        repeated = frozenset(unique[totals >= self.settings.line_min_count].tolist())
        order = np.argsort(-totals, kind="stable")[:TOP_LINES]
        top = {int(unique[i]): int(totals[i]) for i in order}
        report = {"min_count": self.settings.line_min_count, "min_chars": self.settings.line_min_chars,
                  "distinct_lines_counted": int(len(unique)), "repeated_lines": len(repeated), "top": top}
        return repeated, frozenset(top), report

    def _apply(self, runner, documents: Documents, offsets: np.ndarray, repeated: frozenset, wanted: frozenset,
               line_report: dict | None) -> None:
        """Drop repeated lines (records left empty go) and compute the fuzzy signatures."""
        masks = self._masks(documents, offsets)
        name = "signatures" if not self.settings.lines else ("lines+signatures" if self.settings.fuzzy else "drop lines")
        key_files = self._key_files()
        results = self._pass(runner, name, [
            (apply_lines, task, self.settings, mask, repeated, wanted, None if paths is None else (*self.bands, paths))
            for task, mask, paths in zip(self.tasks, masks, key_files)], int(documents.alive().sum()))
        alive = documents.alive()
        after = np.concatenate([r.bytes_after_lines for r in results])
        documents.bytes_after_lines[alive] = after[alive]
        documents.lines_dropped = np.concatenate([r.lines_dropped for r in results])
        if self.settings.lines:
            documents.remove(np.concatenate([r.emptied for r in results]), "lines")
            texts = {}
            for result in results:
                for key, text in result.line_texts.items():
                    texts.setdefault(key, text)
            line_report["top"] = [{"line": texts.get(key, ""), "documents": count,
                                   "removed": count >= self.settings.line_min_count}
                                  for key, count in line_report["top"].items()]
            line_report["lines_dropped"] = int(documents.lines_dropped.sum())
        if self.settings.fuzzy:
            self._signed = (np.concatenate([offsets[k] + r.signature_rows for k, r in enumerate(results)]),
                            BandKeys(key_files, [len(r.signature_rows) for r in results]))

    @functools.cached_property
    def bands(self) -> tuple[int, int]:
        """The LSH bands and rows of this run: given, or chosen for recall at the threshold."""
        settings = self.settings
        return (choose_bands(settings.threshold, settings.num_perm) if settings.bands is None
                else (settings.bands, settings.rows))

    def _key_files(self) -> list:
        """Per range, the hidden files its worker writes its band keys to (None each without --fuzzy)."""
        if not self.settings.fuzzy:
            return [None] * len(self.tasks)
        files = [band_paths(temporary_name(self.out / REMOVED, f"keys{task.index}"), self.bands[0])
                 for task in self.tasks]
        self.temporaries.extend(Path(path) for paths in files for path in paths)
        return files

    def _fuzzy(self, runner, documents: Documents, offsets: np.ndarray, repeated: frozenset) -> dict:
        """Group near-duplicates: LSH buckets, each member verified exactly against its bucket's
        representatives (`helpers.clean.lsh`), union-find; all but each group's first go."""
        start = time.perf_counter()
        rows, keys = self._signed
        settings = self.settings
        chosen = settings.bands is None
        bands, rows_per_band = self.bands
        budget = band_budget(settings.memory_limit, len(documents))
        in_bucket = np.zeros(len(rows), bool)
        for members in keys.buckets(bands, budget):
            in_bucket[members] = True
        self.seconds["fuzzy lsh"] = time.perf_counter() - start
        sets = self._shingle_sets(runner, documents, offsets, repeated=repeated, wanted=rows[in_bucket])
        start = time.perf_counter()
        checked_with = np.full(len(rows), -1, np.int64)  # each document's last check: with whom, and its value
        checked_value = np.zeros(len(rows), np.float64)

        def similar(first: int, second: int) -> bool:
            checked_with[first], checked_value[first] = second, sets.jaccard(rows[first], rows[second])
            return checked_value[first] >= settings.threshold

        found = cluster(len(rows), keys.buckets(bands, budget), similar)
        roots = found.roots
        duplicate = roots != np.arange(len(rows))
        documents.duplicate_of[rows[duplicate]] = rows[roots[duplicate]]
        documents.similarity[rows[duplicate]] = [  # the check that joined most copies was with the kept one
            float(checked_value[i]) if checked_with[i] == roots[i] else sets.jaccard(rows[i], rows[roots[i]])
            for i in np.flatnonzero(duplicate).tolist()]
        mask = np.zeros(len(documents), bool)
        mask[rows[duplicate]] = True
        documents.remove(mask, "fuzzy")
        sets.close()
        keys.remove()
        self.seconds["fuzzy lsh"] += time.perf_counter() - start
        self.rates["fuzzy lsh"] = len(rows) / max(self.seconds["fuzzy lsh"], 1e-9)
        return {"threshold": settings.threshold, "ngram": settings.ngram, "num_perm": settings.num_perm,
                "bands": bands, "rows": rows_per_band,
                "bands_from": "chosen for recall at the threshold" if chosen else "--bands and --rows",
                "candidate_probability": s_curve_points(settings.threshold, bands, rows_per_band),
                "documents_signed": int(len(rows)), "candidate_documents": int(in_bucket.sum()),
                "memory_limit_bytes": settings.memory_limit, "band_slices": keys.slices(budget),
                "buckets": found.buckets, "candidate_pairs": found.bucket_pairs, "comparisons": found.comparisons,
                "verified_pairs": found.joins, "most_representatives": found.most_representatives,
                "over_representative_cap": found.over_cap, "groups": int(len(np.unique(roots[duplicate]))),
                "group_sizes": group_sizes(roots),
                "removed": int(duplicate.sum())}

    def _shingle_sets(self, runner, documents: Documents, offsets: np.ndarray, repeated: frozenset,
                      wanted: np.ndarray) -> "_ShingleSets":
        """The distinct shingles of the documents `wanted` (run indices), written by each range's worker
        to a hidden file of its own and read from there, memory-mapped, as the check needs them."""
        flags = np.zeros(len(documents), bool)
        flags[wanted] = True
        files = [temporary_name(self.out / REMOVED, f"shingles{task.index}") for task in self.tasks]
        self.temporaries.extend(files)
        results = self._pass(runner, "shingle sets", [
            (shingle_sets, task, self.settings, flags[offsets[k]:offsets[k + 1]], repeated, str(file))
            for k, (task, file) in enumerate(zip(self.tasks, files))], int(len(wanted)))
        return _ShingleSets(len(documents), offsets, files, results)
    def _write(self, runner, documents: Documents, offsets: np.ndarray, repeated: frozenset) -> None:
        """Write every range's kept records into a part file, then join each input's parts in order."""
        masks = self._masks(documents, offsets)
        parts = [temporary_name(self.out / self.outputs[task.input_index], f"part{task.index}") for task in self.tasks]
        self.temporaries.extend(parts)  # and each worker's `{part}.tmp-{pid}` while it writes
        self._pass(runner, "write", [(write_part, task, self.settings, mask, repeated, str(part))
                                     for task, mask, part in zip(self.tasks, masks,
                                                                 parts)], int(documents.alive().sum()))
        for index, name in enumerate(self.outputs):
            joined = temporary_name(self.out / name)
            self.temporaries.append(joined)
            mine = [part for task, part in zip(self.tasks, parts) if task.input_index == index]
            self.sources[index].join_parts(mine, joined)
            check_signals()
        self._write_saved_metadata()

    def _write_saved_metadata(self) -> None:
        """Each cleaned saved dataset's state.json (listing its files, a new fingerprint) and its
        dataset_info.json, under temporary names like the outputs, to move into place with them."""
        metadata = _saved_metadata(self.paths)
        for name, (folder, files) in metadata.items():
            if not name.endswith(SAVED_STATE):
                continue
            written = [temporary_name(self.out / output_name(file)) for file in files]
            state, info = saved_state(folder, [file.name for file in files], written)
            for text, metadata_name in ((state, name), (info, f"{folder.name}/dataset_info.json")):
                path = temporary_name(self.out / metadata_name)
                self.temporaries.append(path)
                path.write_text(text, encoding="utf-8")
        self.metadata = list(metadata)

    def _commit(self, removed: list[str]) -> None:
        """Write `removed.jsonl`, then move every output into place together."""
        listing = temporary_name(self.out / REMOVED)
        self.temporaries.append(listing)
        with open(listing, "w", encoding="utf-8") as out:
            out.writelines(removed)
        check_signals()
        with signals_held():
            for name in [*self.outputs, *self.metadata]:
                os.replace(temporary_name(self.out / name), self.out / name)
            os.replace(listing, self.out / REMOVED)


class _ShingleSets:
    """The shingle sets one pass wrote, one file per range, memory-mapped: a document's set by run index."""

    def __init__(self, count: int, offsets: np.ndarray, files: list[Path], results: list):
        self.files = files
        self.maps = [np.asarray(np.memmap(file, dtype=np.uint64, mode="r")) if file.stat().st_size  # plain views:
                     else np.zeros(0, np.uint64) for file in files]  # a memmap's slices cost 3 us each
        self.part = np.full(count, -1, np.int64)
        self.start = np.zeros(count, np.int64)
        self.end = np.zeros(count, np.int64)
        for k, (positions, set_offsets) in enumerate(results):
            where = offsets[k] + positions
            self.part[where], self.start[where], self.end[where] = k, set_offsets[:-1], set_offsets[1:]

    def of(self, document: int) -> np.ndarray:
        return self.maps[self.part[document]][self.start[document]:self.end[document]]

    def jaccard(self, first: int, second: int) -> float:
        """The exact Jaccard similarity of two documents' shingle sets."""
        return sets_jaccard(self.of(first), self.of(second))

    def close(self) -> None:
        self.maps = []
        for file in self.files:
            file.unlink(missing_ok=True)


def group_sizes(roots: np.ndarray) -> dict[str, int]:
    """How many groups of near-duplicates have each size (the kept document counted), smallest size first."""
    members = np.bincount(roots, minlength=len(roots))
    sizes, groups = np.unique(members[members >= 2], return_counts=True)
    return {str(int(size)): int(count) for size, count in zip(sizes, groups)}


def main(argv: list[str] | None = None) -> int:
    parser = CommandParser(prog="python -m helpers.clean", description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, nargs="+", type=Path,
                        help="JSONL files (.gz, .zst allowed), Parquet files, folders of Parquet files, quoted globs of "
                             "either (each file an input), saved Hugging Face datasets")
    parser.add_argument("--output-dir", required=True, type=Path,
                        help="writes OUT/<input file name> (JSONL as JSONL, Parquet as Parquet), removed.jsonl, "
                             "report.json")
    parser.add_argument("--normalize", action="store_true", help="NFC, line ends, control characters, empty-line runs")
    parser.add_argument("--exact", action="store_true", help="drop exact duplicates (xxh3-128 of the text)")
    parser.add_argument("--lines", action="store_true",
                        help="drop lines repeated in --line-min-count documents or more")
    parser.add_argument("--fuzzy", action="store_true", help="drop near-duplicates (MinHash + LSH, word n-grams)")
    parser.add_argument("--threshold", type=float, default=0.8, help="Jaccard similarity of a near-duplicate")
    parser.add_argument("--line-min-count", type=int, default=10, help="documents a line must be in to be dropped")
    parser.add_argument("--line-min-chars", type=int, default=30, help="shorter lines are never dropped")
    parser.add_argument("--ngram", type=int, default=5, help="words per shingle (--fuzzy)")
    parser.add_argument("--num-perm", type=int, default=128, help="MinHash permutations (--fuzzy)")
    parser.add_argument("--bands", type=int, default=None,
                        help="LSH bands, with --rows (default: chosen for recall at --threshold)")
    parser.add_argument("--rows", type=int, default=None, help="rows of each LSH band, with --bands")
    parser.add_argument("--memory-limit", default="2GB",
                        help="what this process may hold for --fuzzy, e.g. 2GB or 512MB (band keys are sorted on "
                             "disk in slices that fit)")
    parser.add_argument("--json-key", default="text", help="the field (JSONL) or column (Parquet) holding the text")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="local worker processes")
    parser.add_argument("--parts", type=int, default=None,
                        help="ranges per input, of bytes or of Parquet row groups (default: --workers)")
    parser.add_argument("--engine", choices=ENGINES, default="local", help="local processes, or Ray tasks")
    parser.add_argument("--ray-address", default=None, help="join this Ray cluster (--engine ray), e.g. HEAD:6379")
    parser.add_argument("--skip-bad-records", action="store_true",
                        help="skip bad lines (and null Parquet texts), listing each in removed.jsonl")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    report = clean(args.input, args.output_dir, normalize=args.normalize, exact=args.exact, lines=args.lines,
                   fuzzy=args.fuzzy, threshold=args.threshold, line_min_count=args.line_min_count,
                   line_min_chars=args.line_min_chars, ngram=args.ngram, num_perm=args.num_perm, bands=args.bands,
                   rows=args.rows,
                   workers=args.workers, parts=args.parts, engine=args.engine, ray_address=args.ray_address,
                   skip_bad_records=args.skip_bad_records, text_key=args.json_key, memory_limit=args.memory_limit,
                   progress=not args.no_progress)
    for line in summary_lines(report):
        print(line)
    return 0

