"""`--partitions P`: the input's byte ranges run at the same time into hidden part files, which are then
merged in input order (the same bytes as one pass). Running the parts is an engine's job, handed a
`PartsJob` whole: here, one local process each with its share of the workers (`LocalPartitions`), or Ray
tasks (`helpers.preprocess.ray_runner.RayPartitions`); planning the parts, merging them and removing them
are the same for both, and neither engine knows the other. A failed, interrupted or
terminated run stops every part, and every part file is removed."""

from __future__ import annotations

import os
import signal
import traceback
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Protocol

from ..common.errors import UserError
from ..common.files import temporary_name
from ..common.stop_signals import Terminated, check_signals, die_with_parent, on_signal, signals_held
from ..engines.local import context_safe_from, process_context
from .outputs import RunFacts, datasets_written, remove_dataset
from .summary import Summary, combine_counts, require_documents
from .workers import RunSettings, encode_range

PROGRESS_SECONDS = 0.2  # how often a partitioned run's bar moves
STOP_SECONDS = 30  # how long a stopped partition gets to clean up before SIGKILL



@dataclass(frozen=True)
class PartsJob:
    """A partitioned run as an engine gets it: the settings, the input, its byte ranges, and the part
    files (one prefix per key) each range is encoded into."""

    settings: RunSettings
    source: Any  # the input (`helpers.corpus.inputs`)
    ranges: list
    parts: list[dict[str, Path]]


class PartsEngine(Protocol):
    """Runs every byte range of a job into its part's files; returns their counts in range order."""

    def run_parts(self, job: PartsJob) -> list[Summary]: ...


def _part_prefix(final: Path, index: int) -> Path:
    """A partition's output: hidden, and named after the run's process, so that a re-run after a SIGKILL
    removes it (see `remove_stale_temporaries`)."""
    return temporary_name(final, f"part{index}")


def _workers_per_partition(workers: int, partitions: int) -> list[int]:
    """The workers shared out as evenly as they go, the first partitions getting one more."""
    return [workers // partitions + (index < workers % partitions) for index in range(partitions)]


def preprocess_partitions(job: PartsJob, prefixes: dict[str, Path], facts: RunFacts, engine: PartsEngine
                          ) -> Summary:
    """Run every byte range of `job` into its part files (`engine`), then merge them in order into the
    outputs, with sidecars from `facts`: the same documents in the same order as one pass. Part files are
    removed, whatever happens."""
    try:
        counts = engine.run_parts(job)
        summary = require_documents(combine_counts(counts, prefixes, job.settings.dtype), job.source.path)
        with datasets_written(prefixes, job.settings.dtype, facts) as writers:
            for key, writer in writers.items():
                for part in job.parts:
                    writer.append_dataset(part[key])
        return summary
    finally:
        for part in job.parts:
            for part_prefix in part.values():
                _remove_part(part_prefix)


def part_prefixes(prefixes: dict[str, Path], count: int) -> list[dict[str, Path]]:
    """The hidden part files of `count` byte ranges, one prefix per key each."""
    return [{key: _part_prefix(final, index) for key, final in prefixes.items()} for index in range(count)]


def _remove_part(prefix: Path) -> None:
    """A part's files, finished or not, whichever process wrote them: once the parts have all ended, the
    run that named them (after its own process) is the only one that can still want them."""
    remove_dataset(prefix)
    try:
        entries = list(os.scandir(prefix.parent))
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.name.startswith(f"{prefix.name}.") and entry.is_file(follow_symlinks=False):
            Path(entry.path).unlink(missing_ok=True)


class LocalPartitions:
    """The local engine: one process per byte range, each with its share of `workers`, all at the same time;
    the bar (`meter`) moves with their shared counters. Any that still run when a job ends (an error,
    Ctrl-C, SIGTERM) are stopped, and remove their own files."""

    def __init__(self, workers: int, meter):
        self.workers, self.meter = workers, meter

    def run_parts(self, job: PartsJob) -> list[Summary]:
        shares = _workers_per_partition(self.workers, len(job.ranges))
        # a part that encodes with fastokens must not be a fork of a process whose fastokens threads started
        context = (context_safe_from("fastokens", "helpers.preprocess.workers") if job.settings.fast_encoder
                   else process_context())
        counters = context.Array("q", 3 * len(job.ranges), lock=False)  # bytes, documents, tokens per partition
        processes, receivers = [], []
        try:
            for index, byte_range in enumerate(job.ranges):
                receiver, sender = context.Pipe(duplex=False)
                process = context.Process(target=_partition_main, name=f"partition-{index}", args=(
                    job.settings, job.source, byte_range, job.parts[index], shares[index], counters, index, sender,
                    os.getpid() if context.get_start_method() == "fork" else None))
                receivers.append(receiver)
                with signals_held():
                    process.start()
                    processes.append(process)
                sender.close()
            return _collect(processes, receivers, counters, self.meter)
        finally:
            _stop(processes)
            for receiver in receivers:
                receiver.close()


def _collect(processes: list, receivers: list, counters, meter) -> list[Summary]:
    """Wait for every partition's counts. When one fails, those after it are stopped and those before it
    finish: the error raised is the earliest partition's, the one a single pass would have met first."""
    results: dict[int, Summary] = {}
    errors: dict[int, BaseException] = {}
    waiting = dict(enumerate(receivers))
    while waiting:
        for receiver in wait(list(waiting.values()), timeout=PROGRESS_SECONDS):
            index = receivers.index(receiver)
            if index not in waiting:  # stopped above, after an earlier partition failed
                continue
            del waiting[index]
            try:
                status, payload = receiver.recv()
            except EOFError:
                status, payload = "vanished", None
            if status == "done":
                results[index] = payload
                continue
            errors[index] = _partition_error(status, payload, processes[index], place=(index, len(processes)))
            for later in [i for i in waiting if i > index]:
                processes[later].terminate()
                del waiting[later]
        meter.report(Summary(outputs={}, bytes_read=sum(counters[0::3]), documents=sum(counters[1::3]),
                             tokens=sum(counters[2::3])))
        check_signals()
    if errors:
        raise errors[min(errors)]
    return [results[index] for index in range(len(receivers))]


def _partition_error(status: str, text: str | None, process, place: tuple[int, int]) -> BaseException:
    """The exception a partition's message stands for (messages carry text only: they always pickle);
    `place` is (its index, how many partitions)."""
    index, count = place
    if status == "user error":
        return UserError(text)
    if status == "terminated":
        return Terminated()
    if status == "crashed":
        return RuntimeError(text)
    process.join(timeout=STOP_SECONDS)
    return UserError(f"partition {index + 1} of {count} ended without a result (exit code {process.exitcode}, "
                     "negative: killed by that signal); fix: check free memory, then re-run")


def _stop(processes: list) -> None:
    """SIGTERM to partitions still running (each then removes its files and its pool), and wait for all."""
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=STOP_SECONDS)
        if process.is_alive():
            process.kill()
            process.join()


def _partition_main(settings: RunSettings, source, byte_range: tuple[int, int], prefixes: dict[str, Path],
                    workers: int, counters, index: int, sender, parent_pid: int | None) -> None:
    """One partition, in its own process: its range into finished part files; sends back its counts, or
    the error that stopped it. Ctrl-C is the parent's to handle; SIGTERM (from the parent) cleans up. It
    dies with `parent_pid`, or with the fork server that started it (None), which ends with the run."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        die_with_parent(os.getppid() if parent_pid is None else parent_pid, signal.SIGTERM)

        def report(summary: Summary) -> None:
            counters[3 * index:3 * index + 3] = [summary.bytes_read, summary.documents, summary.tokens]

        with datasets_written(prefixes, settings.dtype) as writers:
            summary = encode_range(settings, source, byte_range, writers, workers=workers, report=report)
        message = ("done", summary)
    except UserError as error:
        message = ("user error", str(error))
    except Terminated:
        message = ("terminated", None)
    except BaseException:
        message = ("crashed", f"partition {index + 1} failed:\n{traceback.format_exc()}")
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # done: being stopped now would only lose the message
    try:
        sender.send(message)
    except OSError:  # the parent is gone: nobody will merge the parts
        for prefix in prefixes.values():
            remove_dataset(prefix)
