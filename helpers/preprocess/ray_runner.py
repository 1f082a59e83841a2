"""The Ray engine of `--partitions`: each byte range is one Ray task that encodes it, in its own worker
process with one encoder, into its part files; the driver (`preprocess_partitions`) merges them.

A task gets absolute paths and the tokenizer name the sidecar records, which loads anywhere (a zoo name,
or a folder's absolute path): it may run on another node, which must see the input, the output folder and `data/tokenizers` at
the same paths. A worker process loads the tokenizer once (`load_tokenizer` caches it) and keeps it for
every task it runs. A task Ray runs again simply writes its part again.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from ..engines.choice import engine_for
from .outputs import datasets_written
from .partitions import PartsJob
from .summary import Summary, combine_counts
from .workers import RunSettings, encode_range


@dataclasses.dataclass(frozen=True)
class PartTask:
    """One byte range of the input and where its part goes: all a Ray task needs, picklable."""

    settings: RunSettings
    source: Any  # the input (`helpers.corpus.inputs`), named by absolute paths
    byte_range: tuple[int, int | None]
    prefixes: dict[str, Path]


def encode_part(task: PartTask) -> Summary:
    """In a Ray worker: one byte range into finished part files (moved into place only when complete);
    its counts."""
    with datasets_written(task.prefixes, task.settings.dtype) as writers:
        return encode_range(task.settings, task.source, task.byte_range, writers, workers=1, report=_no_report)


def _no_report(summary: Summary) -> None:
    """A task's progress stays in its worker; the driver's bar moves as whole parts finish."""


def _absolute(path: Path) -> Path:
    return Path(os.path.abspath(path))


class RayPartitions:
    """The Ray engine: one task per byte range, on the cluster at `address` (None: the Ray this process
    already runs, or one started on this machine with `local_cpus`); the bar (`meter`) moves by each part's
    bytes as it finishes."""

    def __init__(self, address: str | None, local_cpus: int, meter):
        self.address, self.local_cpus, self.meter = address, local_cpus, meter

    def run_parts(self, job: PartsJob) -> list[Summary]:
        tasks = [PartTask(job.settings, job.source.absolute(), byte_range,
                          {key: _absolute(prefix) for key, prefix in part.items()})
                 for byte_range, part in zip(job.ranges, job.parts)]
        finished: list[Summary] = []

        def on_done(index: int, summary: Summary) -> None:
            finished.append(summary)
            self.meter.report(combine_counts(finished, {}, job.settings.dtype))

        with engine_for("ray", self.local_cpus, self.address) as engine:
            return engine.map([(encode_part, task) for task in tasks], on_done)
