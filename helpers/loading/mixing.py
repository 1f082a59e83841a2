"""The mix of a blended source: its registry of datasets, the segments they were read under, and their state.

A *registry* lists every dataset a run has read, in the order it first read them (a resumed run appends the
datasets it adds; one it drops stays, weight 0, with its cursor). The `Choice` of the segments gives, for each
sample of the global stream, its dataset and its number in that dataset's own order (made as far as the stream is
read), so the state needs no more than the registry and the segments: the cursors follow from them, and are
stored beside them for `python -m helpers.audit ledger`.

A schedule's steps count global batches of the run that started it, and the state keeps that size and each phase's
boundary in samples: a run resumed with another global batch changes the mix at the samples the uninterrupted run
does (the boundary may fall inside one of its batches; the samples are the same). With another global batch, a
phase at a step the state does not know is refused: its sample depends on which global batch its step counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..common.errors import UserError
from ..datasets.indexed import fingerprint
from .schedule import Choice, Segment, resumed_segments, segments_of


@dataclass
class Entry:
    """One dataset of the registry; `column` is its position in the source's own list, None when the source no
    longer reads it (removed at a resume)."""

    name: str
    prefix: str
    fingerprint: str
    column: int | None


class Mix:
    """Registry, segments and the choice of every global sample, for `prefixes` and their `phases`."""

    def __init__(self, prefixes: list[str], phases, samples_per_step: int, num_samples: int,
                 global_batch: int | None = None):
        """`samples_per_step`: the samples a schedule's step counts, this run's global batch unless a resume says
        otherwise (a run resumed with another global batch may say so from the start: the batch of the run that
        started it). `global_batch`: this run's, when it differs."""
        self.prefixes, self.phases = [str(p) for p in prefixes], phases
        self.samples_per_step, self.num_samples = samples_per_step, num_samples
        self.global_batch = global_batch or samples_per_step
        self.registry = [Entry(Path(p).name, p, fingerprint(p), k) for k, p in enumerate(self.prefixes)]
        self.segments = self._future()
        self._choose()

    def _future(self) -> list[Segment]:
        columns = {entry.column: k for k, entry in enumerate(self.registry) if entry.column is not None}
        return segments_of(self.phases, self.samples_per_step, [columns[j] for j in range(len(self.prefixes))],
                           len(self.registry))

    def _choose(self) -> None:
        self.choice = Choice(self.segments, self.num_samples)
        self.columns = np.array([-1 if e.column is None else e.column for e in self.registry], dtype=np.int64)

    def of(self, sample_ids) -> tuple[np.ndarray, np.ndarray]:
        """(registry datasets, numbers in their own orders) of global samples `sample_ids`."""
        return self.choice.of(sample_ids)

    @property
    def dataset_index(self) -> np.ndarray:
        """The registry dataset of every sample of the stream."""
        return self.choice.prefix(self.num_samples)[0]

    @property
    def dataset_number(self) -> np.ndarray:
        """Every sample's number in its dataset's own order."""
        return self.choice.prefix(self.num_samples)[1]

    def column_of(self, registry_index: np.ndarray) -> np.ndarray:
        """The source's own dataset position of registry datasets (never a removed one: it has weight 0)."""
        return self.columns[registry_index]

    def cursors(self, consumed: int) -> np.ndarray:
        """Samples taken of each registry dataset by the first `consumed` samples of the stream."""
        return np.bincount(self.choice.prefix(consumed)[0], minlength=len(self.registry)).astype(np.int64)

    def state(self, consumed: int) -> dict:
        cursors = self.cursors(consumed)
        return {"datasets": [{"name": e.name, "prefix": e.prefix, "fingerprint": e.fingerprint,
                              "samples": int(cursors[k])} for k, e in enumerate(self.registry)],
                "segments": [s.to_json() for s in self.segments if s.start < max(consumed, 1)],
                "samples_per_step": self.samples_per_step,
                "phases": [{"step": step, **segment.to_json()} for (step, _), segment in zip(self.phases,
                                                                                           self._future())]}

    def resume(self, state: dict, consumed: int, first_global_batch: int) -> None:
        """Take the registry and segments of `state` up to `consumed`, and this mix from there, its steps counted
        as the state counts them (a state saved before it kept them: the global batch of its first stint)."""
        if consumed > self.num_samples:
            raise UserError(f"the loader state consumed {consumed} samples, more than this loader's "
                            f"{self.num_samples}; fix: ask for at least as many samples (steps) as the run has taken")
        step_samples = self._step_samples(state, first_global_batch)
        saved = state["datasets"]
        unmatched = list(self.registry)
        registry = []
        for old in saved:
            entry = next((e for e in unmatched if e.fingerprint == old["fingerprint"]), None)
            if entry is not None:
                unmatched.remove(entry)
            else:
                for current in self.registry:
                    if current.fingerprint != old["fingerprint"] and current.name == old["name"]:
                        raise UserError(f"{current.prefix}: its data changed since the loader state was saved "
                                        f"(fingerprint {old['fingerprint']}, now {current.fingerprint}); fix: resume "
                                        "with the data the run read, or give the new data another name")
                entry = Entry(old["name"], old["prefix"], old["fingerprint"], None)
            registry.append(entry)
        registry += unmatched
        self.registry, self.samples_per_step = registry, step_samples
        width = len(registry)
        history = [Segment(s.start, s.weights + (0.0,) * (width - len(s.weights)))
                   for s in map(Segment.from_json, state["segments"])]
        self.segments = resumed_segments(history, consumed, self._future())
        self._choose()

    def _step_samples(self, state: dict, first_global_batch: int) -> int:
        """The samples a step of the schedule counts, as `state` counted them; a phase at a step it does not know
        refused where this run's global batch differs (its sample would depend on which batch its step counts)."""
        counted = int(state.get("samples_per_step", first_global_batch))
        if counted == self.global_batch or "phases" not in state:  # an older state: its steps are taken as they are
            return counted
        known = {int(p["step"]) for p in state["phases"]} | {0}
        for position, (step, _) in enumerate(self.phases, 1):
            if step not in known:
                raise UserError(
                    f"schedule phase {position} starts at step {step}, which the loader state's schedule does not "
                    f"have, and the global batch changed from {counted} to {self.global_batch}: step {step} is "
                    f"sample {step * counted:,} in steps of {counted}, {step * self.global_batch:,} in steps of "
                    f"{self.global_batch}; fix: keep the state's phase steps ({', '.join(map(str, sorted(known)))}) "
                    f"with this global batch, or change the schedule on a resume with a global batch of {counted}")
        return counted
