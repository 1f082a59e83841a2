"""Blend schedules: which dataset each sample of the global stream comes from, when the mix changes as a run goes.

    schedule = [(0, [0.7, 0.3]), (800, [0.2, 0.8])]   # from step 0 and from step 800, weights per dataset

A schedule only chooses datasets; each dataset is read in its own order through a cursor that only moves
forward (`helpers.loading.epochs`). The stream is cut into *segments* (a start sample and the weights in force
from there); inside a segment the dataset of sample i is megatron-core's greedy rule (`helpers.datasets.greedy`),
the one with the largest `w x max(i - start, 1) - taken since start` (ties: the lowest index), with datasets of
weight 0 left out. Counts carry over from one segment to the next, so a dataset continues where it stood. One
segment from sample 0 is megatron-core's blending index, sample for sample.

A resumed run whose mix changed (new weights, another schedule, a dataset added or removed) keeps the segments it
was read under up to the resume point and takes the new mix from there (`resumed_segments`): nothing consumed
is chosen again, and every dataset continues from its cursor.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..common.compiled import GREEDY_SAMPLES, compiled_pays
from ..common.errors import UserError
from ..common.yaml_file import read_yaml
from ..datasets.blending import normalize
from ..datasets.greedy import NO_LIMIT, GreedyStream

SCHEDULE_EXAMPLE = "'phases: [{step: 0, weights: [0.7, 0.3]}, {step: 800, weights: [0.2, 0.8]}]'"


@dataclass(frozen=True)
class Segment:
    """From global sample `start` on (until the next segment), datasets are chosen by `weights` (normalised,
    one per dataset of the run's registry)."""

    start: int
    weights: tuple[float, ...]

    def to_json(self) -> dict:
        return {"from": self.start, "weights": list(self.weights)}

    @staticmethod
    def from_json(entry: dict) -> "Segment":
        return Segment(int(entry["from"]), tuple(float(w) for w in entry["weights"]))


def normalized(weights, where: str) -> tuple[float, ...]:
    """Weights divided by their sum in float64, as Megatron does; negative, non-finite or all-zero refused."""
    values = [float(w) for w in weights]
    if any(w < 0 or not math.isfinite(w) for w in values):
        raise UserError(f"{where}: weights must be non-negative numbers, got {values}; "
                        "fix: give each dataset 0 or more")
    if sum(values) <= 0:
        raise UserError(f"{where}: weights sum to {sum(values)}; fix: give at least one dataset a positive weight")
    return tuple(normalize(values))


def parse_schedule(schedule, datasets: int) -> list[tuple[int, tuple[float, ...]]]:
    """`[(step, weights), ...]` checked: steps whole, rising, the first 0; one weight per dataset."""
    if not isinstance(schedule, (list, tuple)) or not schedule:
        raise UserError(f"schedule {schedule!r:.80}: fix: give a list of (step, weights) phases, the first at step 0")
    phases = []
    for position, phase in enumerate(schedule, 1):
        if isinstance(phase, dict):
            phase = (phase.get("step"), phase.get("weights"))
        if not isinstance(phase, (list, tuple)) or len(phase) != 2:
            raise UserError(f"schedule phase {position} ({phase!r:.60}) is not (step, weights); "
                            f"fix: write e.g. (800, [0.2, 0.8])")
        step, weights = phase
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
            raise UserError(f"schedule phase {position}: step {step!r} is not a whole number of steps; fix: e.g. 800")
        if not isinstance(weights, (list, tuple)) or len(weights) != datasets:
            raise UserError(f"schedule phase {position}: {weights!r:.60} is not {datasets} weights, one per dataset "
                            "in the order the datasets are listed; fix: give one weight per dataset")
        if phases and step <= phases[-1][0]:
            raise UserError(f"schedule phase {position} starts at step {step}, not after step {phases[-1][0]}; "
                            "fix: list the phases in order of their steps")
        phases.append((int(step), normalized(weights, f"schedule phase {position}")))
    if phases[0][0] != 0:
        raise UserError(f"the schedule's first phase starts at step {phases[0][0]}; fix: start it at step 0")
    return phases


def load_schedule_file(path: str | os.PathLike) -> tuple[list[str], list[tuple[int, list[float]]]]:
    """A schedule file (YAML or JSON): `datasets:` the prefixes, `phases:` each `{step: N, weights: [...]}`
    (weights in the order of `datasets`, or a mapping of prefix to weight). Returns (prefixes, phases)."""
    path = Path(path)
    content = read_yaml(path, "schedule file", SCHEDULE_EXAMPLE)
    keys = sorted(map(str, content)) if isinstance(content, dict) else []
    if keys != ["datasets", "phases"] or not all(isinstance(content[key], list) for key in keys):
        found = f"keys {', '.join(keys)}" if keys else f"a {type(content).__name__}"
        raise UserError(f"{path}: a schedule file has two lists, 'datasets' (the prefixes) and 'phases', and nothing "
                        f"else; found {found}; fix: write e.g. 'datasets: [PREFIX_A, PREFIX_B]' and {SCHEDULE_EXAMPLE}")
    prefixes = [str(p) for p in content["datasets"]]
    phases = []
    for position, phase in enumerate(content["phases"], 1):
        if not isinstance(phase, dict) or set(phase) != {"step", "weights"}:
            raise UserError(f"{path}: phase {position} ({phase!r:.60}) should have 'step' and 'weights' only; "
                            "fix: write e.g. {step: 800, weights: [0.2, 0.8]}")
        weights = phase["weights"]
        if isinstance(weights, dict):
            unknown = set(map(str, weights)) - set(prefixes)
            if unknown:
                raise UserError(f"{path}: phase {position} weighs {sorted(unknown)}, not among its datasets; "
                                "fix: name the prefixes of 'datasets'")
            weights = [weights.get(prefix, 0) for prefix in prefixes]
        phases.append((phase["step"], weights))
    parse_schedule(phases, len(prefixes))
    return prefixes, phases


def segments_of(phases: list[tuple[int, tuple[float, ...]]], samples_per_step: int, columns: list[int],
                registry_size: int) -> list[Segment]:
    """The segments of a parsed schedule over a registry of `registry_size` datasets, the schedule's dataset j
    being registry column `columns[j]` (the others get weight 0)."""
    segments = []
    for step, weights in phases:
        full = [0.0] * registry_size
        for column, weight in zip(columns, weights):
            full[column] = weight
        segments.append(Segment(step * samples_per_step, tuple(full)))
    return segments


def resumed_segments(history: list[Segment], consumed: int, future: list[Segment]) -> list[Segment]:
    """The segments of a run resumed at sample `consumed`: those it was read under before (`history`, cut at
    `consumed`), then `future`'s from there. The segment `future` has in force at `consumed` continues the last
    one read where it is that segment, start and weights (a planned resume), else starts at `consumed`: a phase of
    the same schedule that begins there, or a changed mix. Equal weights alone do not continue a segment: the
    uninterrupted run restarts the greedy rule's counts where a phase begins, whatever its weights."""
    before = [s for s in history if s.start < consumed]
    in_force = [s for s in future if s.start <= consumed][-1:]
    after = [s for s in future if s.start > consumed]
    if in_force and not (before and before[-1] == in_force[0]):
        before.append(Segment(consumed, in_force[0].weights))
    return before + after


class Choice:
    """Dataset of each sample of the stream and its number in that dataset's own order, made as far as the stream
    is read (the greedy rule is sequential: sample i needs every choice before it).

    A loader's first batch needs a few samples' choice, not the whole run's: a long stream is chosen in Python up
    to `PYTHON_SAMPLES` samples (a few milliseconds), and the first read past them chooses the rest with the
    compiled loop in one call, so numba's start-up (`helpers.common.compiled`) is paid there, not before the first
    batch. A stream shorter than `GREEDY_SAMPLES` is chosen whole, in Python, when first read."""

    PYTHON_SAMPLES = 4_096

    def __init__(self, segments: list[Segment], total: int):
        if not segments or segments[0].start != 0:
            raise ValueError("the first segment must start at sample 0")
        weights = np.array([s.weights for s in segments], dtype=np.float64)
        self.stream = GreedyStream(starts=[s.start for s in segments], weights=weights,
                                   limits=np.where(weights > 0, NO_LIMIT, 0), total=total)  # weight 0: never drawn
        if (weights > 0).sum(axis=1).max() == 1:  # one dataset per segment (one prefix): nothing to choose
            stream = self.stream
            stream.dataset[:], stream.number[:] = _one_per_segment(stream.starts, weights, stream.total)
            stream.made = stream.total

    @property
    def made(self) -> int:
        """Samples chosen so far, from the first."""
        return self.stream.made

    def upto(self, samples: int) -> None:
        """Make the choice of samples 0..samples-1."""
        stream = self.stream
        samples = min(int(samples), stream.total)
        if samples <= stream.made:
            return
        if not compiled_pays(stream.total - stream.made, GREEDY_SAMPLES):
            stream.make(stream.total, compiled=False)  # the rest is short: all of it, once
        elif samples <= self.PYTHON_SAMPLES:
            stream.make(samples, compiled=False)  # the first reads of a long stream
        else:
            stream.make(stream.total, compiled=True)  # helpers.common.compiled

    def of(self, sample_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(datasets, numbers) of samples `sample_ids`."""
        sample_ids = np.asarray(sample_ids, dtype=np.int64)
        if sample_ids.size:
            self.upto(int(sample_ids.max()) + 1)
        return self.stream.dataset[sample_ids], self.stream.number[sample_ids]

    def prefix(self, samples: int) -> tuple[np.ndarray, np.ndarray]:
        """(datasets, numbers) of samples 0..samples-1."""
        self.upto(samples)
        return self.stream.dataset[:samples], self.stream.number[:samples]


def choose(segments: list[Segment], total: int) -> tuple[np.ndarray, np.ndarray]:
    """(dataset of each global sample, its number in that dataset's own order) for samples 0..total-1."""
    return Choice(segments, total).prefix(total)


def _one_per_segment(starts, weights, total):
    """What the greedy rule gives when each segment weighs one dataset: that dataset, its samples in order."""
    dataset = np.empty(total, dtype=np.int16)
    number = np.empty(total, dtype=np.int64)
    counts = np.zeros(weights.shape[1], dtype=np.int64)
    ends = [*starts[1:].tolist(), total]
    for begin, end, row in zip(starts.tolist(), ends, weights):
        begin, end = min(begin, total), min(max(end, begin), total)
        k = int(np.argmax(row > 0))
        dataset[begin:end] = k
        number[begin:end] = counts[k] + np.arange(end - begin)
        counts[k] += end - begin
    return dataset, number
