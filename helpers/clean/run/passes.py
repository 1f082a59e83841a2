"""The passes of `helpers.clean` over one range of one input (`helpers.corpus.inputs`), run in worker processes
or as Ray tasks: each reads its range again, finds the same good records in the same order, applies the document
steps in force (`helpers.clean.steps.base`) to each one still kept, and hands the text they leave to the pass's collector
(a dedup step's) or writes it out. A pass returns small arrays (the steps' verdicts, what the collector gathered),
never texts, so memory stays bounded whatever the corpus size. Decisions between passes are the driver's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from ...common.errors import UserError
from ...corpus.jsonl import offering_skip
from ...corpus.records import records
from ..steps.base import Collector, DocumentStep, Labeller, labelled_fields
from .options import RunOptions


@dataclass(frozen=True)
class RangeTask:
    """One contiguous range `[start, end)` of one input (`helpers.corpus.inputs`, named by absolute paths):
    bytes of JSONL (end None: to its end), or groups of a columnar file, whose `columns` are those the first
    passes read."""

    input_index: int
    source: Any
    start: int
    end: int | None
    index: int
    columns: tuple[str, ...] = ()  # empty for JSONL


@dataclass
class Verdicts:
    """What the document steps in force did to the records of a range a pass read: the text's UTF-8 bytes after
    each step (0 where a record did not reach it), the step that dropped a record (-1: none) and why, and what
    each step noted (`helpers.clean.steps.base`); the labels of the records kept, where a labeller is in force."""

    bytes_after: list[list[int]]  # per step, per record
    gone_at: list[int]
    reasons: dict[int, str]
    notes: list[dict]
    labels: dict[int, dict] = field(default_factory=dict)

    @classmethod
    def empty(cls, steps: int) -> "Verdicts":
        return cls([[] for _ in range(steps)], [], {}, [{} for _ in range(steps)])

    def applied(self, chain: list[DocumentStep], position: int, text: str | None) -> str | None:
        """The record at `position` through the steps (None: removed before the pass, or dropped by one)."""
        gone = -1
        for j, step in enumerate(chain):
            if text is not None:
                if isinstance(step, Labeller):
                    reason, labels = step.judge(text)
                    self.labels.setdefault(position, {}).update(labels)
                else:
                    text, reason = step.apply(text, self.notes[j])
                self.bytes_after[j].append(len(text.encode("utf-8")))
                if reason is not None:
                    gone, text = j, None
                    self.reasons[position] = reason
            else:
                self.bytes_after[j].append(0)
        self.gone_at.append(gone)
        return text


@dataclass
class Scan:
    """What the first pass found in one range: one entry per good record, in order."""

    lines: np.ndarray  # line numbers; for Parquet, row numbers in the file (from 0)
    places: np.ndarray  # places in the line (bare CRs); for Parquet, row group numbers
    ids: list
    raw_bytes: np.ndarray
    bad: list  # (line, place, kind, reason, id or None); for Parquet (row, row group, kind, reason, id or None)
    blank_lines: int
    input_bytes: int  # the file's bytes read; for Parquet, the UTF-8 bytes of its texts


@dataclass
class Passed:
    """What one pass over one range returns: the verdicts, what its collector gathered, and, for the first
    pass, the scan; for the last, the records and bytes written."""

    verdicts: Verdicts
    collected: Any = None
    scan: Scan | None = None
    written: tuple[int, int] = field(default=(0, 0))


def _record_id(record: dict):
    value = record.get("id")
    return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def _records(task: RangeTask, settings: RunOptions, bad: list | None = None,
             counts: dict | None = None) -> Iterator[tuple[int, int, bytes | None, dict]]:
    """(line, place, raw line, record) of the range's good records (`helpers.corpus.records`); for a columnar
    input (row, group, None, record of the columns read). A bad record raises a `UserError` naming where it is,
    unless `skip_bad_records`: then it goes into `bad` (when given)."""
    counts = counts if counts is not None else {"bytes": 0, "blank": 0}
    for batch in task.source.batches(task.start, task.end, task.columns):
        yield from records(batch, (settings.text_key,), _bad_records(settings, bad), counts, whole=True,
                           with_record=True)


def _bad_records(settings: RunOptions, bad: list | None):
    """What a pass does with a bad record: stop, naming it (the fix offers `--skip-bad-records`), or (skipping
    them) list it in `bad` when given, with its id where the record has a readable one."""
    def refused(number: int, place: int, kind: str, reason: str, where: str, record: dict | None = None) -> None:
        if not settings.skip_bad_records:
            raise UserError(offering_skip(where, reason, "each is listed in removed.jsonl"))
        if bad is not None:
            bad.append((number, place, kind, reason, None if record is None else _record_id(record)))
    return refused


def scan(task: RangeTask, settings: RunOptions, chain: list[DocumentStep], collector: Collector | None) -> Passed:
    """The first pass: every good record's place, id and size, the document steps' verdicts, and what
    `collector` (the first dedup step's, if any) gathers."""
    bad: list = []
    counts = {"bytes": 0, "blank": 0}
    lines, places, ids, raw_bytes = [], [], [], []
    verdicts = Verdicts.empty(len(chain))
    with collector or Collector() as gathering:
        for position, (number, place, _, record) in enumerate(_records(task, settings, bad, counts)):
            text = record[settings.text_key]
            lines.append(number), places.append(place), ids.append(_record_id(record))
            raw_bytes.append(len(text.encode("utf-8")))
            text = verdicts.applied(chain, position, text)
            if text is not None and collector is not None:
                gathering.add(position, text)
        collected = gathering.result() if collector is not None else None
    found = Scan(lines=np.array(lines, np.int64), places=np.array(places, np.int32), ids=ids,
                 raw_bytes=np.array(raw_bytes, np.int64), bad=bad, blank_lines=counts["blank"],
                 input_bytes=counts["bytes"])
    return Passed(verdicts, collected, scan=found)


def collect(task: RangeTask, settings: RunOptions, chain: list[DocumentStep], removed: np.ndarray,
            collector: Collector) -> Passed:
    """A pass of a dedup step: the records still kept through the document steps in force, into `collector`."""
    verdicts = Verdicts.empty(len(chain))
    with collector:
        for position, (_, _, _, record) in enumerate(_records(task, settings)):
            text = verdicts.applied(chain, position, None if removed[position] else record[settings.text_key])
            if text is not None:
                collector.add(position, text)
        return Passed(verdicts, collector.result())


def write_part(task: RangeTask, settings: RunOptions, chain: list[DocumentStep], removed: np.ndarray,
               part: str) -> Passed:
    """The last pass: the range's records still kept through every document step, in order, into the part file
    `part` in the input's own format (`write_part` of `helpers.corpus.inputs`), written under a name of this
    process and renamed when complete, so a retried task (Ray may retry one) only writes it again."""
    verdicts = Verdicts.empty(len(chain))
    seen = [0]

    def rewrite(position: int, text: str) -> str | None:
        while seen[0] < position:  # records removed before this pass: no step reaches them
            verdicts.applied(chain, seen[0], None)
            seen[0] += 1
        seen[0] += 1
        return verdicts.applied(chain, position, text)

    written = task.source.write_part(task.start, task.end, part, text_key=settings.text_key, removed=removed,
                                     rewrite=rewrite, bad=_bad_records(settings, None),
                                     fields=labelled_fields(chain), labels=lambda position: verdicts.labels[position])
    while seen[0] < len(removed):
        verdicts.applied(chain, seen[0], None)
        seen[0] += 1
    return Passed(verdicts, written=written)
