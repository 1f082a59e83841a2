"""Jobs on this machine: in this process (one worker) or in a pool of forked worker processes. A job is
`(function, *arguments)`, run by `call`, the one function every engine (this one and Ray's) ships to its
workers; results come back in job order, so what a step decides does not depend on the engine or on the
number of parts. `process_context` is how every process of the package starts."""

from __future__ import annotations

import os
import signal
import sys
from multiprocessing import get_context
from typing import Callable, Sequence

from ..common.stop_signals import check_signals, die_with_parent, signals_held


def process_context():
    """How our processes start: forked on Linux (quick, nothing to re-import), spawned elsewhere."""
    return get_context("fork" if sys.platform == "linux" else "spawn")


def call(job: tuple) -> object:
    """Run one job, `(function, *arguments)`: the one function every engine ships to its workers."""
    function, *arguments = job
    return function(*arguments)


def _start_worker() -> None:
    """A local pool worker: Ctrl-C and SIGTERM are the run's to handle, and it dies with the process that
    forked it (this one, or the fork server, which ends with this one)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent(os.getppid(), signal.SIGKILL)


def context_safe_from(native_module: str, preload: str):
    """How processes that will use `native_module` start: forked from this process (quick), unless that
    library has been loaded here. Its thread pool, once started, would be copied into a fork without its
    threads, and the first call there would wait for them for ever (rensa's signatures, fastokens' encoder);
    then they come from a fork server, a clean process that has imported `preload` (about half a second)."""
    context = process_context()
    if context.get_start_method() == "fork" and native_module in sys.modules:
        context = get_context("forkserver")
        context.set_forkserver_preload([preload])
    return context


def _worker_context():
    """How workers of the cleaning passes start (rensa computes their signatures)."""
    return context_safe_from("rensa", "helpers.clean.passes")


class LocalEngine:
    """Jobs in this process (`workers` 1) or in a pool of forked worker processes."""

    name = "local"

    def __init__(self, workers: int):
        self.workers, self.pool = workers, None

    def start(self) -> None:
        """Start the worker processes (none with one worker), each ready to run a pass."""
        if self.workers > 1 and self.pool is None:
            with signals_held():
                self.pool = _worker_context().Pool(self.workers, initializer=_start_worker)
            self.pool.map(call, [(os.getpid,)] * self.workers, chunksize=1)  # wait until they are up

    def map(self, jobs: Sequence[tuple], on_done: Callable[[int, object], None] | None = None) -> list:
        self.start()
        results = []
        for index, result in enumerate(self.pool.imap(call, jobs) if self.pool else map(call, jobs)):
            results.append(result)
            if on_done is not None:
                on_done(index, result)
            check_signals()
        return results

    def close(self) -> None:
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
