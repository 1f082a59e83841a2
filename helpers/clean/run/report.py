"""What a cleaning run tells: `report.json` (per input and step, documents and bytes in, removed and out;
the settings, the bands and rows, the most repeated lines, the time of each pass) and `removed.jsonl`
(one line per record that did not make it to the output, with the step that removed it and, for a
duplicate, the record it duplicates). Built from the driver's arrays; nothing here reads text."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

KEPT = 0


@dataclass
class Documents:
    """Every good record of the run, in (input, line) order, and what happened to it under the run's `steps`
    (their names, in order)."""

    input_index: np.ndarray
    lines: np.ndarray
    places: np.ndarray
    ids: list
    raw_bytes: np.ndarray
    steps: list[str]
    bytes_after: dict[str, np.ndarray] = field(default_factory=dict)  # per step that changes or drops texts
    reasons: dict[int, str] = field(default_factory=dict)  # why a document step dropped a record
    removed_by: np.ndarray = None  # 0 kept, else 1 + the position in `steps` of the step that removed it
    duplicate_of: np.ndarray = None  # -1, or the index of the kept record it duplicates
    similarity: np.ndarray = None  # exact Jaccard (shingle sets) with that record (fuzzy), NaN otherwise

    def __post_init__(self):
        count = len(self.lines)
        self.removed_by = np.zeros(count, np.int8)
        self.duplicate_of = np.full(count, -1, np.int64)
        self.similarity = np.full(count, np.nan)

    def __len__(self) -> int:
        return len(self.lines)

    def alive(self) -> np.ndarray:
        return self.removed_by == KEPT

    def remove(self, mask: np.ndarray, step: str) -> None:
        """Mark the records in `mask` (all still kept) as removed by `step`."""
        self.removed_by[mask & self.alive()] = self.steps.index(step) + 1

    def bytes_before(self, step: str) -> np.ndarray:
        """Each record's text bytes as the steps before `step` left them."""
        earlier = [name for name in self.steps[:self.steps.index(step)] if name in self.bytes_after]
        return self.bytes_after[earlier[-1]] if earlier else self.raw_bytes

    def bytes_through(self, step: str) -> np.ndarray:
        """Each record's text bytes once `step` has run."""
        return self.bytes_after.get(step, self.bytes_before(step))


def step_table(documents: Documents, names: list[str], bad_counts: list[int], file_bytes: list[int],
               steps: list[str], by_rule: set[str] = frozenset(), counted: dict | None = None) -> list[dict]:
    """Per input: for reading (bytes in: the file's, as read, blank lines and all, or for a Parquet input the
    UTF-8 bytes of its texts, the only column read; out: the texts') and each
    step run, documents and text bytes in, removed (whole records), trimmed (cut from records kept:
    normalising, repeated lines) and out; for the steps in `by_rule` (filters), removals per rule; for the steps in
    `counted` (name: per input, what the step counts, e.g. the addresses `--pii` replaced), those counts."""
    table = []
    for index, name in enumerate(names):
        mine = documents.input_index == index
        rows = [{"step": "read", "documents_in": int(mine.sum()) + bad_counts[index], "bytes_in": file_bytes[index],
                 "removed": bad_counts[index],
                 "documents_out": int(mine.sum()), "bytes_out": int(documents.raw_bytes[mine].sum())}]
        alive = mine.copy()
        previous = documents.raw_bytes
        for code, step in enumerate(steps, start=1):
            removed = mine & (documents.removed_by == code)
            after = alive & ~removed
            current = documents.bytes_through(step)
            bytes_in, bytes_removed, bytes_out = (int(previous[alive].sum()), int(previous[removed].sum()),
                                                  int(current[after].sum()))
            rows.append({"step": step, "documents_in": int(alive.sum()), "bytes_in": bytes_in,
                         "removed": int(removed.sum()), "bytes_removed": bytes_removed,
                         "bytes_trimmed": bytes_in - bytes_removed - bytes_out,  # cut from records it kept
                         "documents_out": int(after.sum()), "bytes_out": bytes_out})
            if step in by_rule:  # a filter's removals by the rule that failed (its reasons read "rule: value")
                rules = [documents.reasons[int(i)].split(":")[0] for i in np.flatnonzero(removed)]
                rows[-1]["rules"] = {rule: rules.count(rule) for rule in sorted(set(rules))}
            if counted and step in counted:
                rows[-1]["counts"] = counted[step][index]
            alive, previous = after, current
        table.append({"file": name, "steps": rows})
    return table


def removed_lines(documents: Documents, names: list[str], bad: list[list[tuple]],
                  parquet: list[str | None] | None = None) -> list[str]:
    """The lines of `removed.jsonl`, in (input, line) order: every record removed by a step, and every bad
    record skipped with `--skip-bad-records`. A record of a JSONL input is named by its line (and its place
    in the line after a bare CR); a row of a columnar input by its row and its group, under the name
    `parquet[input]` gives the group ("row_group", or "record_batch" for Arrow)."""
    places = _Places(names, parquet or [None] * len(names))
    entries = []
    for index in np.flatnonzero(documents.removed_by != KEPT):
        step = documents.steps[documents.removed_by[index] - 1]
        input_index, line, place = (int(documents.input_index[index]), int(documents.lines[index]),
                                    int(documents.places[index]))
        entry = {**places.where(input_index, line, place), "id": documents.ids[index], "step": step,
                 **places.in_line(input_index, place)}
        original = documents.duplicate_of[index]
        if original >= 0:
            where = places.where(int(documents.input_index[original]), int(documents.lines[original]),
                                 int(documents.places[original]))
            entry["duplicate_of"] = {**where, "id": documents.ids[original]}
            if step == "fuzzy":
                entry["similarity"] = round(float(documents.similarity[index]), 4)
        else:
            entry["reason"] = documents.reasons[int(index)]
        entries.append(((input_index, line, place), entry))
    for input_index, records in enumerate(bad):
        for line, place, kind, reason, identifier in records:
            entry = {**places.where(input_index, line, place), "id": identifier, "step": "bad record", "kind": kind,
                     "reason": reason, **places.in_line(input_index, place)}
            entries.append(((input_index, line, place), entry))
    entries.sort(key=lambda item: item[0])
    return [_line(entry) for _, entry in entries]


def _line(entry: dict) -> str:
    """An entry as one JSON line, non-ASCII as written; escaped where an id holds a lone surrogate, which UTF-8
    cannot write (only the text field is checked for them)."""
    line = json.dumps(entry, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(entry)
    return line + "\n"


@dataclass(frozen=True)
class _Places:
    """How `removed.jsonl` names where a record is, by the kind of its input."""

    names: list[str]
    parquet: list[str | None]  # per input, the name of its groups; None for JSONL

    def where(self, input_index: int, line: int, place: int) -> dict:
        """File and line, or for a columnar input file, row and group (`place`)."""
        if self.parquet[input_index]:
            return {"file": self.names[input_index], "row": line, self.parquet[input_index]: place}
        return {"file": self.names[input_index], "line": line}

    def in_line(self, input_index: int, place: int) -> dict:
        """A JSONL record's place in its line, where bare CRs cut it."""
        return {"record_in_line": place} if place and not self.parquet[input_index] else {}


# The kinds `--pii` masks, as its row of report.json counts them and as the summary names them
MASKED = {"emails": "e-mail", "ips": "IP", "phones": "phone number"}


def step_summary(row: dict) -> str:
    """One step's part of an input's summary line: the records it removed; for `--pii`, which replaces text and
    removes none, what it masked; for `--mode gpt3`, the spans it cut besides."""
    counts = row.get("counts") or {}
    if any(kind in counts for kind in MASKED):
        return f"{row['step']}: {', '.join(_many(counts[k], word) for k, word in MASKED.items() if k in counts)} masked"
    said = f"{row['step']} -{row['removed']:,}"
    if counts.get("spans_removed"):
        said += f" and {_many(counts['spans_removed'], 'span')} cut"
    return said


def _many(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def summary_lines(report: dict) -> list[str]:
    """What the command prints at the end: per input, its bad records skipped and each step's removals; the empty
    inputs skipped, the earlier run's files cleared, and where the files are."""
    out = []
    for item in report["inputs"]:
        read, *steps = item["steps"]
        parts = [f"bad records -{read['removed']:,}"] if read["removed"] else []
        parts += [step_summary(row) for row in steps]
        out.append(f"{item['file']}: {read['documents_in']:,} records -> {item['steps'][-1]['documents_out']:,} "
                   f"kept ({', '.join(parts)})")
    for name in report.get("empty_inputs_skipped", ()):
        out.append(f"{name}: empty file, skipped (--skip-bad-records)")
    if report.get("cleared"):
        out.append(f"cleared {', '.join(report['cleared'])}: the earlier run's output in {report['output_dir']}, "
                   "which this run does not write")
    for name, seconds in report["seconds"].items():
        rate = report["documents_per_second"].get(name)
        out.append(f"{name:<17} {seconds:7.2f} s" + (f"  {rate:>12,.0f} documents/s" if rate is not None else ""))
    out.append(f"wrote {report['output_dir']}: kept records, removed.jsonl ({report['removed']:,} lines), report.json")
    return out
