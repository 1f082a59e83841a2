"""Cleaning and deduplication of JSONL or Parquet before it is tokenized, with an audit trail.

    python -m helpers.clean --input data/raw/literature.jsonl data/raw/docs.jsonl data/raw/code.jsonl \\
        --output-dir data/clean --normalize --exact --lines --fuzzy [--engine ray]
    python -m helpers.clean --input data/raw/parquet/docs 'more/*.parquet' --output-dir data/clean --exact

Reads JSONL files (`.gz` and `.zst` too), Parquet files, folders and quoted globs of either, and datasets saved
by Hugging Face `save_to_disk`; a folder or a glob stands for its files, each an input of its own (a folder's
every JSONL, Parquet or Arrow file; anything else it holds is refused: `helpers.corpus.folders`). The text is
the field, or column, `--json-key`. Writes, per input file, `OUT/<its name>`: the kept records in their
original order, every field as it was except the text when a step changed it; JSONL as plain JSONL (`.gz` or
`.zst` dropped from the name), Parquet as Parquet with the input's schema and one row group per input row group
that keeps a row; a saved dataset as one, in `OUT/<its folder's name>/` (its Arrow files, a `state.json`
listing them, its `dataset_info.json`), which `datasets.load_from_disk` opens.
Also `OUT/removed.jsonl` (every record that did not make it, with the step that removed it and the record
it duplicates, named by line, or by row and row group, record batch for Arrow) and `OUT/report.json` (per
input and step, documents and bytes in, removed and out; a columnar input's bytes are those of its
texts). Steps, always in this order:

- `--normalize`: Unicode NFC, line ends, control characters, runs of empty lines (see
  `helpers.clean.text.text_keys`; indentation is never touched); a record left with no visible text goes;
- `--languages en,de` (or `any`), `--language-threshold 0.65`: each document's language found offline by
  fastText's lid.176 (`helpers.clean.steps.language`), as datatrove's `LanguageFilter` decides; a kept record gets the
  fields (columns) `language` and `language_score`;
- `--filters gopher-quality,gopher-repetition,c4-quality,fineweb-quality` (any, in the order given): datatrove
  0.10.1's quality filters, decision for decision (`helpers.clean.steps.filters`), each rule's threshold settable with
  `--filter-option NAME.SETTING=VALUE`;
- `--decontaminate humaneval FILE...` (`--eval-keys`, `--ngram 13`, `--mode drop|gpt3`): a document holding 13
  words in a row of an evaluation item (GPT-3's words) goes, or with `gpt3` only those spans with 200 characters
  either side (`helpers.clean.steps.decontaminate`); each removal names the benchmark, the item and the matching text;
- `--exact`: a 128-bit xxh3 digest of the (normalised) text; across all inputs the first occurrence, by
  input order then line, is kept;
- `--lines`: a line (30 characters or more, surrounding whitespace aside) held by at least
  `--line-min-count` of the documents still kept is boilerplate, and every occurrence goes (two passes:
  count, then drop); a record left empty goes; the report lists the most repeated lines;
- `--fuzzy`: MinHash signatures of word 5-grams (rensa, 128 permutations, seed 1), LSH with the bands and
  rows chosen for recall at `--threshold` (a pair at T is a candidate with probability 0.95 or more, at
  T + 0.02 with 0.98; `--bands B --rows R` to set them), each candidate verified on the exact Jaccard of
  the two shingle sets against its bucket's representatives, grouped with union-find; the first record of
  each group is kept (`helpers.clean.text.lsh` says what the worst case can miss). For comparison, datatrove's
  defaults are word 5-grams with 14 bands of 8 rows (112 hashes) and no verification; NeMo Curator's are
  character n-grams, 20 bands of 13 rows (260 hashes), threshold 0.8, with an optional check of exact
  Jaccard;
- `--pii`: in the records kept, e-mail and public IP addresses replaced as datatrove 0.10.1's `PIIFormatter`
  replaces them, and phone numbers by a narrow rule (`helpers.clean.steps.pii`); `--pii email,ip` (datatrove's set) or
  any other choice of `email,ip,phone` masks those only; the report counts each kind per input.

Each step is one class on one interface (`helpers.clean.steps.base`): normalising and PII masking are formatters, the three
removals are dedup steps (`helpers.clean.steps.normalize`, `helpers.clean.steps.exact`, `helpers.clean.steps.fuzzy`), in the
order `helpers.clean.steps.plan` gives. Each input is read through `helpers.corpus.inputs` and cut into contiguous
ranges (`--parts`, default one per worker): bytes cut at line ends, or Parquet row groups (the first passes
read only the text and `id` columns: `helpers.clean.run.parquet`); every pass runs over the ranges (in worker
processes, or as Ray tasks with `--engine ray`), applies the formatters and filters in force to each record
still kept, and returns their verdicts and a dedup step's digests or counts, never texts (the fuzzy pass writes
band keys to hidden files, read a band at a time within `--memory-limit`: `helpers.clean.text.band_files`), so memory
stays bounded; the decisions are taken once, by this process, in input order; the last pass writes each range's
kept records into a part file, and the parts are joined in order. So the output does not depend on the engine
or on the number of parts. A bad record (for Parquet, a null text) stops the run with one line naming file and
line, or row and row group (or, with `--skip-bad-records`, is skipped, and listed in `removed.jsonl`, with its id
where that is readable); so does an empty input file (skipped: the report and the summary name it). Outputs
move into place together when all are complete; a failed, interrupted or terminated run leaves none; a run into
a folder an earlier run wrote replaces that run's files (`helpers.clean.run.output_folder`).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from ..common.cli import CommandParser
from ..common.errors import UserError
from ..common.files import remove_stale_temporaries, temporary_name
from ..common.progress import progress_bar
from ..common.stop_signals import check_signals, signals_held
from ..corpus.columnar import SAVED_STATE
from ..corpus.inputs import input_files, open_input
from ..corpus.ranges import is_compressed
from ..decontamination.flags import add_eval_flags, refuse_without_evals
from ..decontamination.flags import eval_keys as parse_eval_keys
from ..engines.choice import ENGINES, check_engine_flags, engine_for
from .text.band_files import band_paths, parse_size
from .steps.decontaminate import MODES, check_decontamination
from .steps.filters import FILTERS, GopherRepetition, english_words
from .steps.language import LanguageId, check_languages
from .text.lsh import check_bands, check_threshold
from .text.ngrams import load_compiled
from .run.output_folder import REMOVED, REPORT, clear, earlier_outputs, stale_outputs
from .run.parquet import read_columns, saved_folder, saved_state
from .run.passes import CleanSettings, RangeTask, Scan, collect, scan, write_part
from .steps.pii import pii_kinds
from .steps.plan import filter_settings, steps_of
from .run.report import Documents, removed_lines, step_table, summary_lines
from .steps.base import Decided, DocumentStep, Filter, Labeller, labelled_fields

FILTER_NAMES = {kind.name for kind in (*FILTERS.values(), LanguageId)}  # steps whose report counts removals by rule


def clean(inputs, output_dir, *, normalize: bool = False, exact: bool = False, lines: bool = False,
          fuzzy: bool = False, pii: bool | str | list[str] = False, threshold: float = 0.8, line_min_count: int = 10,
          line_min_chars: int = 30, ngram: int = 5, num_perm: int = 128, bands: int | None = None,
          rows: int | None = None, workers: int = 1,
          parts: int | None = None, engine: str = "local",
          ray_address: str | None = None, skip_bad_records: bool = False, text_key: str = "text",
          memory_limit: int | str = "2GB", progress: bool = True, steps: list | None = None,
          filters: list[str] | str | None = None, filter_options: list[str] | dict | None = None,
          languages: list[str] | str | None = None, language_threshold: float = 0.65,
          decontaminate: list[str] | None = None, eval_keys: list[str] | str | None = None,
          decontaminate_ngram: int = 13, decontaminate_mode: str = "drop", allow_short_ngrams: bool = False) -> dict:
    """Clean `inputs` into `output_dir` (see the module docstring); returns the report. `memory_limit`
    (bytes, or a size such as "2GB") bounds what the driver holds for `--fuzzy` (`helpers.clean.text.band_files`).
    `filters`, `filter_options`: the quality filters and their settings (`helpers.clean.steps.plan.filter_settings`).
    `languages` (codes, or "any"), `language_threshold`: language ID (`helpers.clean.steps.language`); None: none.
    `decontaminate` (evaluation files, or `humaneval`), `eval_keys` (their fields to protect), `decontaminate_ngram`,
    `decontaminate_mode` ("drop" or "gpt3"), `allow_short_ngrams` (match patterns under 8 words rather than refuse
    them): decontamination (`helpers.clean.steps.decontaminate`); None: none.
    `pii`: True for every kind `--pii` masks, or the kinds, e.g. "email,ip" (`helpers.clean.steps.pii.pii_kinds`).
    `steps`: the steps to run, in order, instead of those the flags ask for: the package's and a user's own
    formatters, filters and dedup steps (`helpers.clean.steps.base`), e.g. `[Normalize(), MyFilter(), ExactDedup()]`."""
    paths = [Path(path) for path in inputs]
    out = Path(output_dir)
    filters, filter_options = filter_settings(filters, filter_options)
    kept_languages: tuple[str, ...] = ()  # none: no language ID; ("any",): any language
    chosen, language_threshold = check_languages("any" if languages is None else languages, language_threshold)
    if languages is not None:
        kept_languages = chosen or ("any",)
    eval_keys = parse_eval_keys(eval_keys)
    check_decontamination(decontaminate, decontaminate_ngram, decontaminate_mode)
    settings = CleanSettings(normalize=normalize, exact=exact, lines=lines, fuzzy=fuzzy, pii=pii_kinds(pii),
                             threshold=threshold,
                             filters=filters, filter_options=filter_options,
                             languages=kept_languages,
                             language_threshold=language_threshold,
                             decontaminate=tuple(map(str, decontaminate or ())), eval_keys=eval_keys,
                             decontaminate_ngram=decontaminate_ngram, decontaminate_mode=decontaminate_mode,
                             allow_short_ngrams=allow_short_ngrams,
                             line_min_count=line_min_count, line_min_chars=line_min_chars, ngram=ngram,
                             num_perm=num_perm, bands=bands, rows=rows, text_key=text_key,
                             skip_bad_records=skip_bad_records,
                             memory_limit=parse_size(memory_limit) if isinstance(memory_limit, str) else memory_limit)
    parts = parts or workers
    steps = steps_of(settings) if steps is None else list(steps)
    sources, empty = _check_request(paths=paths, out=out, settings=settings, workers=workers, parts=parts,
                                    engine=engine, ray_address=ray_address, steps=steps)
    paths = [source.path for source in sources]
    columns = [read_columns(source, text_key) if source.columnar else () for source in sources]  # refuses a bad one
    earlier = earlier_outputs(out)
    out.mkdir(parents=True, exist_ok=True)
    outputs = [output_name(path) for path in paths]
    for name in [*outputs, *_saved_metadata(paths), REMOVED, REPORT]:
        (out / name).parent.mkdir(exist_ok=True)  # a saved dataset's folder
        remove_stale_temporaries(out / name)
    run = _Run(settings=settings, tasks=_tasks(sources, columns, parts), sources=sources, outputs=outputs, out=out,
               progress=progress, steps=steps)
    run.earlier, run.empty = earlier, [_shown_name(path) for path in empty]
    if any(getattr(step, "splits_words", False) for step in steps):
        english_words()  # spaCy loaded once here: forked workers start with it
    if any(isinstance(step, GopherRepetition) for step in steps):
        load_compiled()  # and numba's loops
    started = time.perf_counter()
    try:
        with engine_for(engine, workers, ray_address) as runner:
            run.seconds["engine start"] = time.perf_counter() - started  # so that no pass's figure carries it
            report = run.execute(runner)
        report.update(engine=engine, workers=workers, parts=len(run.tasks),
                      seconds_total=time.perf_counter() - started)
        run.commit(report)
    finally:  # once every worker has stopped: none can write a part after this
        run.remove_temporaries()
    return report


def _tasks(sources: list, columns: list[tuple[str, ...]], parts: int) -> list[RangeTask]:
    """Every input's ranges, in input order; a Parquet file without rows has one empty range, so that its
    output is written too (with its schema, and no row)."""
    ranges = [(index, source, start, end) for index, source in enumerate(sources)
              for start, end in source.plan(parts) or [(0, 0)]]
    return [RangeTask(input_index=index, source=source.absolute(), start=start, end=end, index=number,
                      columns=columns[index]) for number, (index, source, start, end) in enumerate(ranges)]


def _check_request(paths: list[Path], out: Path, settings: CleanSettings, workers: int, parts: int,
                   engine: str, ray_address: str | None, steps: list) -> tuple[list, list[Path]]:
    """Refuse, before anything is written, what cannot give a sound run; the inputs, one per file the given ones
    stand for (`helpers.corpus.inputs`), and the empty files passed over (with `--skip-bad-records`)."""
    if not steps:
        raise UserError("no step asked for; fix: pass one or more of --normalize --languages --filters --decontaminate "
                        "--exact --lines --fuzzy --pii")
    step_names = [step.name for step in steps]
    for step in steps:
        if isinstance(step, Labeller) and settings.text_key in step.fields:
            raise UserError(f"--json-key {settings.text_key}: the {step.name} step writes a label of that name, which "
                            "would replace the text; fix: pass the field that holds the text, or rename it")
    for name in sorted({name for name in step_names if step_names.count(name) > 1}):
        raise UserError(f"two steps named '{name}' (removed.jsonl and the report name steps); fix: run each once, "
                        "or give one another name")
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
    files = [file for path in paths for file in input_files(path)]
    empty = [file for file in files if file.is_file() and file.stat().st_size == 0]
    if empty and not settings.skip_bad_records:
        raise UserError(f"{empty[0]}: empty file, no record in it; fix: leave it out of --input, or pass "
                        "--skip-bad-records to go on without it (the report names it)")
    if len(empty) == len(files):
        raise UserError(f"every input is empty ({', '.join(map(str, empty[:3]))}); fix: check --input")
    sources = [open_input(file) for file in files if file not in empty]
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
    return sources, empty


def _shown_name(path: Path) -> str:
    """An input file as the report and removed.jsonl name it: its name, under its folder's for a saved dataset."""
    return output_name(path) if saved_folder(path) else path.name


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
    """One cleaning run: its steps in order (`helpers.clean.steps.plan`), the passes they need, the decisions between
    them, and its outputs. Dedup steps call `collect` for their passes and `remove` for their decisions."""

    def __init__(self, settings: CleanSettings, tasks: list[RangeTask], sources: list, outputs: list[str],
                 out: Path, progress: bool, steps: list):
        self.settings, self.tasks, self.out, self.progress = settings, tasks, out, progress
        self.sources, self.outputs = sources, outputs  # the input files, their outputs' names
        self.paths = [source.path for source in sources]
        self.names = [_shown_name(path) for path in self.paths]  # in reports
        self.parquet = [source.group_word for source in sources]  # what a group of each is called; None for JSONL
        self.sizes = [task.source.range_size(task.start, task.end) for task in tasks]  # for the progress bars
        self.steps = steps
        self.chain: list[DocumentStep] = []  # the document steps in force
        self.decided: set[str] = set()  # the document steps whose verdicts are recorded
        self.notes: dict[str, dict] = {}  # what each document step noted, over every range
        self.counted: dict[str, list[dict]] = {}  # per step, per input: the numbers it counts for the report
        self.documents: Documents | None = None
        self.offsets = np.zeros(1, np.int64)
        self.scans: list[Scan] = []
        self.seconds: dict[str, float] = {}
        self.rates: dict[str, float] = {}
        self.temporaries: list[Path] = []
        self.metadata: list[str] = []  # saved datasets' state.json and dataset_info.json, under OUT
        self.earlier: list[str] = []  # the outputs the earlier run into OUT listed (`helpers.clean.run.output_folder`)
        self.empty: list[str] = []  # empty input files passed over (`--skip-bad-records`)
        self.removed: list[str] = []  # the lines of removed.jsonl, once the run is done

    def remove_temporaries(self) -> None:
        """Remove every file this run wrote under a temporary name, workers' unfinished parts included."""
        for path in self.temporaries:
            for written in path.parent.glob(f"{path.name}*"):
                written.unlink(missing_ok=True)

    def hidden_files(self, name: str, count: int | None = None) -> list[str]:
        """Paths of hidden files of the run beside `removed.jsonl` (`count` numbered ones, else one), removed
        with its temporaries."""
        base = temporary_name(self.out / REMOVED, name)
        paths = [str(base)] if count is None else band_paths(base, count)
        self.temporaries.extend(Path(path) for path in paths)
        return paths

    def chain_names(self) -> list[str]:
        return [step.name for step in self.chain]

    def timed(self, name: str, seconds: float, documents: int) -> None:
        """A driver's decision's time and rate, for the report."""
        self.seconds[name] = seconds
        self.rates[name] = documents / max(seconds, 1e-9)

    def _pass(self, name: str, jobs: list[tuple], documents: int | None = None) -> list:
        """Run one pass over every range, with a progress bar in bytes; its time goes in the report."""
        sizes = self.sizes
        start = time.perf_counter()
        with progress_bar(total=sum(sizes), unit="B", unit_scale=True, desc=f"clean: {name}",
                          disable=not self.progress) as bar:
            results = self.runner.map(jobs, lambda index, _: bar.update(sizes[index]))
        self.seconds[name] = time.perf_counter() - start
        self.rates[name] = (documents if documents is not None else 0) / max(self.seconds[name], 1e-9)
        check_signals()
        return results

    def _chain(self) -> list[DocumentStep]:
        """The document steps in force, for a pass: a filter whose verdicts are recorded passes everything (but a
        labeller labels again)."""
        return [Decided(step) if isinstance(step, Filter) and not isinstance(step, Labeller)
                and step.name in self.decided else step for step in self.chain]

    def collect(self, name: str, collectors: list, documents: int | None = None) -> list:
        """One pass of a dedup step over every range (the run's first pass is the scan, named so): the
        document steps in force applied to the records still kept, each range's into its collector; what they
        gathered, per range."""
        chain = self._chain()
        if self.documents is None:
            passed = self._pass("scan", [(scan, task, self.settings, chain, collector)
                                         for task, collector in zip(self.tasks, collectors)])
            self._read(passed, chain)
        else:
            passed = self._pass(name, [(collect, task, self.settings, chain, mask, collector)
                                       for task, mask, collector in zip(self.tasks, self._masks(), collectors)],
                                int(self.documents.alive().sum()) if documents is None else documents)
            self._record(chain, passed)
        return [result.collected for result in passed]

    def read(self) -> None:
        """Make the first pass now (the scan, with the document steps in force) if none has run yet."""
        if self.documents is None:
            self.collect("scan", [None] * len(self.tasks))

    def _read(self, passed: list, chain: list[DocumentStep]) -> None:
        """The run's table of good records from the first pass, and its document steps' verdicts."""
        self.scans = [result.scan for result in passed]
        counts = [len(s.lines) for s in self.scans]
        self.offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.documents = Documents(
            input_index=np.repeat([task.input_index for task in self.tasks], counts).astype(np.int64),
            lines=np.concatenate([s.lines for s in self.scans]), places=np.concatenate([s.places for s in self.scans]),
            ids=[identifier for s in self.scans for identifier in s.ids],
            raw_bytes=np.concatenate([s.raw_bytes for s in self.scans]), steps=[step.name for step in self.steps])
        self.rates["scan"] = len(self.documents) / max(self.seconds["scan"], 1e-9)
        self._record(chain, passed)

    def _record(self, chain: list[DocumentStep], passed: list) -> None:
        """The verdicts of the document steps of `chain` not recorded yet: the bytes each leaves, and the records
        each drops (the first pass that applies a step decides for it; later passes apply it again, alike)."""
        documents = self.documents
        for j, step in enumerate(chain):
            if step.name in self.decided:
                continue
            self.decided.add(step.name)
            alive = documents.alive()
            after = np.concatenate([np.array(result.verdicts.bytes_after[j], np.int64) for result in passed])
            documents.bytes_after[step.name] = np.where(alive, after, documents.bytes_before(step.name))
            gone = np.concatenate([np.array(result.verdicts.gone_at, np.int64) == j for result in passed])
            for k, result in enumerate(passed):
                for position, reason in result.verdicts.reasons.items():
                    if gone[self.offsets[k] + position]:
                        documents.reasons[int(self.offsets[k] + position)] = reason
            documents.remove(gone & alive, step.name)
            notes = self.notes.setdefault(step.name, {})
            counted = step.counted
            if counted:
                per_input = self.counted.setdefault(step.name, [dict.fromkeys(counted, 0) for _ in self.names])
                for task, result in zip(self.tasks, passed):
                    for key in counted:
                        per_input[task.input_index][key] += result.verdicts.notes[j].get(key, 0)
            for result in passed:
                for key, value in result.verdicts.notes[j].items():
                    if isinstance(value, dict):  # numbers add up; anything else: the first range's
                        mine = notes.setdefault(key, {})
                        for item, entry in value.items():
                            if isinstance(entry, int) and not isinstance(entry, bool):
                                mine[item] = mine.get(item, 0) + entry
                            else:
                                mine.setdefault(item, entry)
                    else:
                        notes[key] = notes.get(key, 0) + value

    def remove(self, indices: np.ndarray, step: str, *, duplicate_of: np.ndarray, similarity=None) -> None:
        """A dedup step's decision: the records at run `indices` go, duplicates of `duplicate_of`."""
        documents = self.documents
        documents.duplicate_of[indices] = duplicate_of
        if similarity is not None:
            documents.similarity[indices] = similarity
        mask = np.zeros(len(documents), bool)
        mask[indices] = True
        documents.remove(mask, step)

    def _masks(self) -> list[np.ndarray]:
        """Per range, which of its records are already removed."""
        removed = ~self.documents.alive()
        return [removed[self.offsets[k]:self.offsets[k + 1]] for k in range(len(self.tasks))]

    def execute(self, runner) -> dict:
        """Every step in order, its passes and decisions, then the outputs moved into place; the report."""
        self.runner = runner
        settings, tasks = self.settings, self.tasks
        for step in self.steps:
            if isinstance(step, DocumentStep):
                self.chain.append(step)
                continue
            step.run(self)
            if step.then is not None:
                self.chain.append(step.then)
        if self.documents is None:  # no dedup step: the first pass only reads, and the pass that writes applies
            # the document steps (each once)
            self._read(self._pass("scan", [(scan, task, self.settings, [], None) for task in self.tasks]), [])
        self._write()
        scans, documents = self.scans, self.documents
        bad = [[entry for s, task in zip(scans, tasks) if task.input_index == index for entry in s.bad]
               for index in range(len(self.names))]
        removed = removed_lines(documents, self.names, bad, self.parquet)
        file_bytes = [sum(s.input_bytes for s, task in zip(scans, tasks) if task.input_index == index)
                      for index in range(len(self.names))]
        steps = [step.name for step in self.steps]
        sections = {step.name: step.report(self) for step in self.steps if hasattr(step, "report")}
        report = {"output_dir": str(self.out), "settings": {
                      "steps": steps, "threshold": settings.threshold, "line_min_count": settings.line_min_count,
                      "line_min_chars": settings.line_min_chars, "ngram": settings.ngram,
                      "num_perm": settings.num_perm, "bands": settings.bands, "rows": settings.rows,
                      "seed": settings.seed, "text_key": settings.text_key, "filters": list(settings.filters),
                      "languages": list(settings.languages), "language_threshold": settings.language_threshold,
                      "filter_options": {name: dict(values) for name, values in settings.filter_options},
                      "decontaminate": list(settings.decontaminate), "eval_keys": list(settings.eval_keys),
                      "decontaminate_ngram": settings.decontaminate_ngram,
                      "decontaminate_mode": settings.decontaminate_mode, "pii": list(pii_kinds(settings.pii)),
                      "allow_short_ngrams": settings.allow_short_ngrams,
                      "skip_bad_records": settings.skip_bad_records},
                  "inputs": step_table(documents=documents, names=self.names, bad_counts=[len(b) for b in bad],
                                       file_bytes=file_bytes, steps=steps, counted=self.counted,
                                       by_rule={step.name for step in self.steps if step.name in FILTER_NAMES}),
                  "blank_lines": sum(s.blank_lines for s in scans), "removed": len(removed),
                  "lines": sections.get("lines"), "fuzzy": sections.get("fuzzy"),
                  "decontaminate": sections.get("decontaminate"),
                  "empty_inputs_skipped": self.empty,
                  "seconds": self.seconds, "documents_per_second": self.rates}
        self.removed = removed
        return report

    def _write(self) -> None:
        """Write every range's kept records into a part file, then join each input's parts in order."""
        chain = self._chain()
        parts = [temporary_name(self.out / self.outputs[task.input_index], f"part{task.index}") for task in self.tasks]
        self.temporaries.extend(parts)  # and each worker's `{part}.tmp-{pid}` while it writes
        passed = self._pass("write", [(write_part, task, self.settings, chain, mask, str(part))
                                      for task, mask, part in zip(self.tasks, self._masks(), parts)],
                            int(self.documents.alive().sum()))
        self._record(chain, passed)
        for index, name in enumerate(self.outputs):
            joined = temporary_name(self.out / name)
            self.temporaries.append(joined)
            mine = [part for task, part in zip(self.tasks, parts) if task.input_index == index]
            self.sources[index].join_parts(mine, joined, fields=labelled_fields(chain))
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
            state, info = saved_state(folder, [file.name for file in files], written,
                                      fields=labelled_fields(self._chain()))
            for text, metadata_name in ((state, name), (info, f"{folder.name}/dataset_info.json")):
                path = temporary_name(self.out / metadata_name)
                self.temporaries.append(path)
                path.write_text(text, encoding="utf-8")
        self.metadata = list(metadata)

    def commit(self, report: dict) -> None:
        """Write `removed.jsonl` and `report.json` (with the outputs, and the earlier run's files this run clears),
        then move every output into place together and clear those files (`helpers.clean.run.output_folder`)."""
        written = [*self.outputs, *self.metadata]
        stale = stale_outputs(self.out, self.earlier, written, self.paths)
        report.update(outputs=written, cleared=stale)
        listing, summary = temporary_name(self.out / REMOVED), temporary_name(self.out / REPORT)
        self.temporaries.extend([listing, summary])
        with open(listing, "w", encoding="utf-8") as out:
            out.writelines(self.removed)
        summary.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        check_signals()
        with signals_held():
            for name in written:
                os.replace(temporary_name(self.out / name), self.out / name)
            os.replace(listing, self.out / REMOVED)
            os.replace(summary, self.out / REPORT)
            clear(self.out, stale)


def main(argv: list[str] | None = None) -> int:
    parser = CommandParser(prog="python -m helpers.clean", description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, nargs="+", type=Path,
                        help="JSONL files (.gz, .zst allowed), Parquet files, folders and quoted globs of either (each "
                             "file an input; a file in a folder that no reader takes is refused), saved Hugging Face "
                             "datasets")
    parser.add_argument("--output-dir", required=True, type=Path,
                        help="writes OUT/<input file name> (JSONL as JSONL, Parquet as Parquet), removed.jsonl, "
                             "report.json")
    parser.add_argument("--normalize", action="store_true", help="NFC, line ends, control characters, empty-line runs")
    parser.add_argument("--languages", default=None, metavar="CODES",
                        help="keep documents in these languages, e.g. en,de (or 'any': every language above the "
                             "threshold), found by fastText's lid.176; needs pip install -e '.[language]'")
    parser.add_needing("--language-threshold", ("--languages",), 0.65, type=float,
                       help="the score a kept document's language must exceed (--languages; default 0.65)")
    parser.add_argument("--filters", default=None,
                        help=f"quality filters, comma-separated, in the order to run them: {', '.join(FILTERS)} "
                             "(as datatrove 0.10.1 decides; needs spaCy: pip install -e '.[quality]')")
    parser.add_argument("--filter-option", action="append", default=None, metavar="NAME.SETTING=VALUE",
                        help="a filter's setting, e.g. gopher-quality.min_doc_words=30 (JSON values; repeat the flag)")
    add_eval_flags(parser, "documents holding their n-grams go")
    parser.add_argument("--mode", choices=MODES, default=None,
                        help="--decontaminate: drop a document that holds an n-gram (default), or cut the spans as "
                             "GPT-3 did")
    parser.add_argument("--allow-short-ngrams", action="store_true",
                        help="--decontaminate: match n-grams, or items matched whole, of fewer than 8 words (they "
                             "match ordinary text) rather than refuse them")
    parser.add_argument("--exact", action="store_true", help="drop exact duplicates (xxh3-128 of the text)")
    parser.add_argument("--lines", action="store_true",
                        help="drop lines repeated in --line-min-count documents or more")
    parser.add_argument("--fuzzy", action="store_true", help="drop near-duplicates (MinHash + LSH, word n-grams)")
    parser.add_argument("--pii", nargs="?", const=True, default=False, metavar="KINDS",
                        help="replace e-mail and public IP addresses (as datatrove's PIIFormatter) and phone numbers; "
                             "or name the kinds, e.g. --pii email,ip (datatrove's PIIFormatter() set)")
    parser.add_needing("--threshold", ("--fuzzy",), 0.8, type=float,
                       help="Jaccard similarity of a near-duplicate (--fuzzy; default 0.8)")
    parser.add_needing("--line-min-count", ("--lines",), 10, type=int,
                       help="documents a line must be in to be dropped (--lines; default 10)")
    parser.add_needing("--line-min-chars", ("--lines",), 30, type=int,
                       help="shorter lines are never dropped (--lines; default 30)")
    parser.add_needing("--ngram", ("--fuzzy", "--decontaminate"), type=int,
                       help="words per shingle of --fuzzy (default 5), or per n-gram of --decontaminate (default 13)")
    parser.add_needing("--num-perm", ("--fuzzy",), 128, type=int, help="MinHash permutations (--fuzzy; default 128)")
    parser.add_needing("--bands", ("--fuzzy",), type=int,
                       help="LSH bands of --fuzzy, with --rows (default: chosen for recall at --threshold)")
    parser.add_needing("--rows", ("--fuzzy",), type=int, help="rows of each LSH band, with --bands")
    parser.add_needing("--memory-limit", ("--fuzzy",), "2GB",
                       help="what this process may hold for --fuzzy, e.g. 2GB or 512MB (default 2GB; band keys are "
                            "sorted on disk in slices that fit)")
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
    ngram, decontaminate_ngram = _ngrams(args)
    refuse_without_evals(args, mode=args.mode, allow_short_ngrams=args.allow_short_ngrams or None)
    report = clean(args.input, args.output_dir, normalize=args.normalize, exact=args.exact, lines=args.lines,
                   decontaminate=args.decontaminate, eval_keys=args.eval_keys,
                   decontaminate_ngram=decontaminate_ngram, decontaminate_mode=args.mode or "drop",
                   allow_short_ngrams=args.allow_short_ngrams,
                   filters=args.filters, filter_options=args.filter_option, languages=args.languages,
                   language_threshold=args.language_threshold,
                   fuzzy=args.fuzzy, pii=args.pii, threshold=args.threshold, line_min_count=args.line_min_count,
                   line_min_chars=args.line_min_chars, ngram=ngram, num_perm=args.num_perm, bands=args.bands,
                   rows=args.rows,
                   workers=args.workers, parts=args.parts, engine=args.engine, ray_address=args.ray_address,
                   skip_bad_records=args.skip_bad_records, text_key=args.json_key, memory_limit=args.memory_limit,
                   progress=not args.no_progress)
    for line in summary_lines(report):
        print(line)
    return 0



def _ngrams(args) -> tuple[int, int]:
    """`--ngram` as the words of `--fuzzy`'s shingles and of `--decontaminate`'s n-grams: it sets the one asked for,
    and is refused when both are, since one number would set two rules."""
    if args.ngram is not None and args.fuzzy and args.decontaminate:
        raise UserError(f"--ngram {args.ngram}: both --fuzzy and --decontaminate read it; fix: run the two in separate "
                        "runs, or leave --ngram out (5 words for --fuzzy, 13 for --decontaminate)")
    if args.ngram is None:
        return 5, 13
    return (5, args.ngram) if args.decontaminate else (args.ngram, 13)
