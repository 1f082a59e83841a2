"""The passes of a cleaning run and the interface a dedup step sees (`Stage`): every pass runs over every range of
every input (`helpers.clean.run.passes`), applying the document steps in force to the records still kept, and
brings back their verdicts and what the pass's collectors gathered; the decisions between passes are taken here,
in this process, in input order."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ...common.files import temporary_name
from ...common.progress import progress_bar
from ...common.stop_signals import check_signals
from ..steps.base import Decided, DocumentStep, Filter, Labeller
from ..text.band_files import band_paths
from .options import RunOptions
from .output_folder import REMOVED
from .passes import RangeTask, Scan, collect, scan
from .report import Documents


class Stage:
    """What a dedup step uses (`helpers.clean.steps.base.Dedup.run`): `tasks` (the ranges: one collector each),
    `offsets` (where each range's records start among the run's), `documents` (the run's records, once read),
    `memory_limit`, `notes` (what each document step noted, for a report section), and the calls `read`,
    `collect`, `remove`, `timed` and `hidden_files`."""

    def __init__(self, options: RunOptions, tasks: list[RangeTask], out: Path, steps: list, names: list[str]):
        self.options, self.tasks, self.out, self.steps = options, tasks, out, steps
        self.names = names  # each input as the report names it
        self.sizes = [task.source.range_size(task.start, task.end) for task in tasks]  # for the progress bars
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
        self.runner = None  # the engine, while the run's passes are made

    @property
    def memory_limit(self) -> int:
        return self.options.memory_limit

    def hidden_files(self, name: str, count: int | None = None) -> list[str]:
        """Paths of hidden files of the run beside `removed.jsonl` (`count` numbered ones, else one), removed
        with its temporaries."""
        base = temporary_name(self.out / REMOVED, name)
        paths = [str(base)] if count is None else band_paths(base, count)
        self.temporaries.extend(Path(path) for path in paths)
        return paths

    def timed(self, name: str, seconds: float, documents: int) -> None:
        """A driver's decision's time and rate, for the report."""
        self.seconds[name] = seconds
        self.rates[name] = documents / max(seconds, 1e-9)

    def run_pass(self, name: str, jobs: list[tuple], documents: int | None = None) -> list:
        """Run one pass over every range, with a progress bar in bytes; its time goes in the report."""
        sizes = self.sizes
        start = time.perf_counter()
        with progress_bar(total=sum(sizes), unit="B", unit_scale=True, desc=f"clean: {name}",
                          disable=not self.options.progress) as bar:
            results = self.runner.map(jobs, lambda index, _: bar.update(sizes[index]))
        self.seconds[name] = time.perf_counter() - start
        self.rates[name] = (documents if documents is not None else 0) / max(self.seconds[name], 1e-9)
        check_signals()
        return results

    def in_force(self) -> list[DocumentStep]:
        """The document steps in force, for a pass: a filter whose verdicts are recorded passes everything (but a
        labeller labels again)."""
        return [Decided(step) if isinstance(step, Filter) and not isinstance(step, Labeller)
                and step.name in self.decided else step for step in self.chain]

    def collect(self, name: str, collectors: list, documents: int | None = None) -> list:
        """One pass of a dedup step over every range (the run's first pass is the scan, named so; a pass that first
        applies a step also bears its name, `lines+signatures`): the document steps in force applied to the records
        still kept, each range's into its collector; what they gathered, per range."""
        chain = self.in_force()
        if self.documents is None:
            passed = self.run_pass("scan", [(scan, task, self.options, chain, collector)
                                            for task, collector in zip(self.tasks, collectors)])
            self._read(passed, chain)
        else:
            name = "+".join([step.name for step in chain if step.name not in self.decided] + [name])
            passed = self.run_pass(name, [(collect, task, self.options, chain, mask, collector)
                                          for task, mask, collector in zip(self.tasks, self.masks(), collectors)],
                                   int(self.documents.alive().sum()) if documents is None else documents)
            self.record(chain, passed)
        return [result.collected for result in passed]

    def read(self) -> None:
        """Make the first pass now (the scan, with the document steps in force) if none has run yet."""
        if self.documents is None:
            self.collect("scan", [None] * len(self.tasks))

    def read_only(self) -> None:
        """The first pass without the document steps, for a run with no dedup step: the pass that writes applies
        each once."""
        self._read(self.run_pass("scan", [(scan, task, self.options, [], None) for task in self.tasks]), [])

    def remove(self, indices: np.ndarray, step: str, *, duplicate_of: np.ndarray, similarity=None) -> None:
        """A dedup step's decision: the records at run `indices` go, duplicates of `duplicate_of`."""
        documents = self.documents
        documents.duplicate_of[indices] = duplicate_of
        if similarity is not None:
            documents.similarity[indices] = similarity
        mask = np.zeros(len(documents), bool)
        mask[indices] = True
        documents.remove(mask, step)

    def masks(self) -> list[np.ndarray]:
        """Per range, which of its records are already removed."""
        removed = ~self.documents.alive()
        return [removed[self.offsets[k]:self.offsets[k + 1]] for k in range(len(self.tasks))]

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
        self.record(chain, passed)

    def record(self, chain: list[DocumentStep], passed: list) -> None:
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
            self._count(step, [result.verdicts.notes[j] for result in passed])

    def _count(self, step: DocumentStep, notes: list[dict]) -> None:
        """A step's notes from every range: the numbers it counts per input, and all it noted added up."""
        if step.counted:
            per_input = self.counted.setdefault(step.name, [dict.fromkeys(step.counted, 0) for _ in self.names])
            for task, noted in zip(self.tasks, notes):
                for key in step.counted:
                    per_input[task.input_index][key] += noted.get(key, 0)
        mine = self.notes.setdefault(step.name, {})
        for noted in notes:
            add_notes(mine, noted)


def add_notes(total: dict, notes: dict) -> None:
    """Add one range's notes to `total`: numbers add up, within a mapping too; anything else keeps the first
    range's."""
    for key, value in notes.items():
        if isinstance(value, dict):
            mine = total.setdefault(key, {})
            for item, entry in value.items():
                if isinstance(entry, int) and not isinstance(entry, bool):
                    mine[item] = mine.get(item, 0) + entry
                else:
                    mine.setdefault(item, entry)
        else:
            total[key] = total.get(key, 0) + value
