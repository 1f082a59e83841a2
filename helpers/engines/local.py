"""Jobs on this machine: in this process (one worker) or in a pool of forked worker processes. A job is
`(function, *arguments)`, run by `call`, the one function every engine (this one and Ray's) ships to its
workers; results come back in job order, so what a step decides does not depend on the engine or on the
number of parts. `process_context` is how every process of the package starts.

Each worker has a pipe of its own and shares no lock with the others: a worker stopped in the middle of
sending its result (an error elsewhere, Ctrl-C) leaves nothing held that the run would wait on for ever, as
`multiprocessing.Pool.terminate` can be left waiting on its result queue's lock."""

from __future__ import annotations

import os
import signal
import sys
import traceback
from multiprocessing import get_context
from multiprocessing.connection import wait
from typing import Callable, Sequence

from ..common.errors import UserError
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


def _serve(connection) -> None:
    """A worker's life: run each job it is sent, send back `(True, result)` or `(False, error)`, until None."""
    _start_worker()
    while (job := connection.recv()) is not None:
        try:
            outcome = (True, call(job))
        except UserError as error:  # the run raises it, in job order, as the one line it is
            outcome = (False, error)
        except Exception as error:  # a fault: it travels with the worker's traceback
            error.add_note(f"in a worker process:\n{traceback.format_exc()}")
            outcome = (False, error)
        try:
            connection.send(outcome)
        except Exception as error:  # a result or an error that does not pickle: said, not lost
            connection.send((False, RuntimeError(f"a job's outcome could not be sent back: {error!r}")))


class LocalEngine:
    """Jobs in this process (`workers` 1) or in `workers` worker processes, each fed through its own pipe."""

    name = "local"

    def __init__(self, workers: int, fork_guard: tuple[str, str] | None = None):
        self.workers = workers
        self.fork_guard = fork_guard  # (native library, module to preload): `context_safe_from`'s arguments
        self.processes: list = []  # (process, connection), started once
        self.idle = True  # every worker waits for a job: close() may ask them to leave

    def start(self) -> None:
        """Start the worker processes (none with one worker), each ready to run a pass."""
        if self.workers <= 1 or self.processes:
            return
        context = context_safe_from(*self.fork_guard) if self.fork_guard else process_context()
        for _ in range(self.workers):
            mine, theirs = context.Pipe()
            process = context.Process(target=_serve, args=(theirs,), daemon=True)
            with signals_held():
                process.start()
                self.processes.append((process, mine))
            theirs.close()

    def map(self, jobs: Sequence[tuple], on_done: Callable[[int, object], None] | None = None) -> list:
        """Every job's result, in job order. When one fails, jobs after it are not started (those running are
        stopped by `close`) and those before it finish: the error raised is the earliest job's."""
        self.start()
        if not self.processes:
            results = []
            for index, job in enumerate(jobs):
                results.append(call(job))
                if on_done is not None:
                    on_done(index, results[-1])
                check_signals()
            return results
        outcomes: dict[int, tuple[bool, object]] = {}
        running: dict = {}  # connection -> index of the job it runs
        upcoming = iter(enumerate(jobs))
        results: list = []
        self.idle = False
        for _, connection in self.processes:
            self._give_next(connection, upcoming, running)
        while len(results) < len(jobs):
            if not running:
                raise RuntimeError(f"no job runs, yet {len(jobs) - len(results)} have no result")
            for connection in wait(list(running), timeout=0.5):
                index = running.pop(connection)
                outcomes[index] = self._receive(connection, index)
                if all(ok for ok, _ in outcomes.values()):
                    self._give_next(connection, upcoming, running)
            while len(results) in outcomes:
                ok, value = outcomes.pop(len(results))
                if not ok:
                    raise value
                results.append(value)
                if on_done is not None:
                    on_done(len(results) - 1, value)
            check_signals()
        self.idle = True
        return results

    @staticmethod
    def _give_next(connection, upcoming, running: dict) -> None:
        """Send the next job, if any, to the worker at the end of `connection`."""
        for index, job in upcoming:
            connection.send(job)
            running[connection] = index
            return

    def _receive(self, connection, index: int) -> tuple[bool, object]:
        try:
            return connection.recv()
        except EOFError:
            process = next(process for process, mine in self.processes if mine is connection)
            process.join(timeout=1)
            return False, RuntimeError(f"a worker process ended (exit code {process.exitcode}) while it ran job "
                                       f"{index}: killed, or out of memory; nothing it was writing is kept")

    def close(self) -> None:
        """Workers that wait for a job leave; any that still run one (an error elsewhere, Ctrl-C) are killed."""
        for process, connection in self.processes:
            try:
                if self.idle:
                    connection.send(None)
                else:
                    process.kill()
            except OSError:  # it had ended already
                pass
        for process, connection in self.processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()
            connection.close()
        self.processes = []
