"""`--engine ray`: a picklable module-level function run over a list of tasks as Ray tasks, on this machine
or on a cluster, with results in task order.

    with ray_session(address):                     # joins a cluster, or starts (and stops) a local one
        results = ray_map(encode_part, tasks, on_done)

A task may run on any node: the function must be importable there (`helpers` installed on every node),
and paths in tasks must be absolute (callers resolve them) and name storage every node sees at the same
path. Tasks must be idempotent: Ray runs a task again when its worker dies. Ray is optional
(`pip install -e '.[ray]'`); nothing imports it until a run asks for it.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from ..common.errors import UserError
from ..common.stop_signals import STOP_SIGNALS, Terminated, check_signals, signals_held
from .local import call

WAIT_SECONDS = 0.2  # how often the driver looks up from waiting, to notice Ctrl-C and SIGTERM
SETTLE_SECONDS = 30  # how long cancelled tasks get to end before the driver goes on
CONNECT_SECONDS = 10  # how long reaching a cluster's address may take (Ray itself would retry for ever)
AUTH_NOTICE_LOGGER = "ray._private.authentication.authentication_token_setup"


def require_ray():
    """The `ray` module; where it is not installed, one line saying how to install it."""
    try:
        import ray
    except ImportError:
        raise UserError("--engine ray needs the ray package; fix: pip install -e '.[ray]' (or pip install ray)") from None
    return ray


@contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None) -> Iterator[None]:
    """Ray, ready for `ray_map`. Ray already running in this process (a notebook's, a test's) is used as it
    is, and left running. Otherwise join the cluster at `address` (or at $RAY_ADDRESS), or start a local
    one with `num_cpus` (all cores when None); either is shut down when the block ends."""
    ray = require_ray()
    if ray.is_initialized():
        yield
        return
    address = address or os.environ.get("RAY_ADDRESS")
    with _own_signal_handlers():
        if address:
            _join(ray, address)
        else:
            _start_local(ray, num_cpus)
    try:
        yield
    finally:
        ray.shutdown()


@contextmanager
def _own_signal_handlers() -> Iterator[None]:
    """Keep our Ctrl-C and SIGTERM handling: `ray.init` replaces the SIGTERM handler with its own, which
    exits at once (SystemExit) and would end a run with another exit code than 143 after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    try:
        yield
    except SystemExit:  # Ray's SIGTERM handlers, the only way `ray.init` exits
        raise Terminated() from None
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


def _start_local(ray, num_cpus: int | None) -> None:
    """A Ray on this machine, quiet: no dashboard, workers' output not copied here, and no notice that Ray
    turned on token authentication (its default for a new cluster, kept: its ports listen on the network)."""
    notice = logging.getLogger(AUTH_NOTICE_LOGGER)
    level = notice.level
    notice.setLevel(logging.ERROR)
    try:
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.WARNING)  # "local": a new Ray, even where `ray start` runs one here
    except Exception as error:
        check_signals()  # Ctrl-C or SIGTERM while Ray started (its compiled code turns them into other errors)
        raise UserError(f"could not start a local Ray cluster ({_first_line(error)}); fix: check free memory and "
                        "free space in /tmp (Ray keeps its session there), or run with --engine local") from None
    finally:
        notice.setLevel(level)


def _join(ray, address: str) -> None:
    """Connect to a running cluster; an address nobody answers at is one line, at once (Ray would wait)."""
    _check_reachable(address)
    try:
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
    except Exception as error:
        check_signals()
        raise UserError(f"could not join the Ray cluster at {address} ({_first_line(error)}); fix: a cluster with "
                        "token authentication needs RAY_AUTH_MODE=token here and its token (~/.ray/auth_token, as "
                        f"on the head node); else {_JOIN_FIX}") from None


_JOIN_FIX = ("start it with `ray start --head` on the head node and pass the address it prints (HEAD_IP:6379; "
             "`ray status` there shows it), or leave out --ray-address to run on this machine")


def _check_reachable(address: str) -> None:
    """Refuse an address whose host and port take no connection ('auto' and the like are Ray's to look up)."""
    host, _, port = address.split("://")[-1].rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_SECONDS).close()
    except OSError as error:
        raise UserError(f"--ray-address {address}: no Ray cluster answers there ({error.strerror or error}); "
                        f"fix: {_JOIN_FIX}") from None


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def _call(function: Callable, task):
    """What each Ray task runs: `function(task)` (a Ray remote must be a Python function, `function` may be
    a builtin)."""
    return function(task)


def ray_map(function: Callable, tasks: list, on_done: Callable[[int, object], None] | None = None) -> list:
    """`[function(task) for task in tasks]`, each call a Ray task, inside `ray_session`; `on_done(index,
    result)` runs as each one finishes (in the order they finish).

    When a task fails, those after it are cancelled and those before it finish: the error raised is the
    earliest task's, the one a single pass over the tasks would have met first. A `UserError` raised in a
    task comes back as itself (one line); any other error as Ray raises it (an instance of the task's own
    exception class, carrying the remote traceback). Ctrl-C and SIGTERM cancel every outstanding task."""
    ray = require_ray()
    if not ray.is_initialized():
        raise RuntimeError("ray_map runs inside `with ray_session(...)`")
    remote = ray.remote(_call).options(name=getattr(function, "__name__", "task"))
    refs = [remote.remote(function, task) for task in tasks]
    index_of = {ref: index for index, ref in enumerate(refs)}
    results: dict[int, object] = {}
    errors: dict[int, BaseException] = {}
    pending = list(refs)
    try:
        while pending:
            with signals_held():  # a signal inside Ray's compiled wait would come out as a SystemError
                ready, pending = ray.wait(pending, num_returns=1, timeout=WAIT_SECONDS)
            for ref in ready:
                index = index_of[ref]
                try:
                    with signals_held():
                        results[index] = ray.get(ref)
                except ray.exceptions.RayError as error:
                    errors[index] = error
                    later = [ref for ref in pending if index_of[ref] > index]
                    pending = [ref for ref in pending if index_of[ref] < index]
                    _cancel(ray, later)
                    continue
                if on_done is not None:
                    on_done(index, results[index])
            check_signals()
    except BaseException:
        _cancel(ray, pending)
        raise
    if errors:
        first = min(errors)
        raise _unwrapped(ray, errors[first], first, len(tasks))
    return [results[index] for index in range(len(tasks))]


def _cancel(ray, refs: list) -> None:
    """Stop these tasks (their workers are killed) and wait until Ray reports them ended, so that the
    caller's cleanup does not race a task still writing."""
    with signals_held():
        for ref in refs:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # already finished, or Ray is going away: nothing left to stop
                pass
        if refs:
            try:
                ray.wait(refs, num_returns=len(refs), timeout=SETTLE_SECONDS)
            except Exception:
                pass


def _unwrapped(ray, error: BaseException, index: int, count: int) -> BaseException:
    """The exception the caller sees for a failed task: a `UserError` as the task raised it; a task's
    other exception as Ray gives it; a task that ended without any (its worker or node died, even after
    Ray's retries) as one line."""
    if isinstance(error, ray.exceptions.RayTaskError):
        cause = getattr(error, "cause", None)
        if isinstance(cause, UserError):
            cause.__traceback__ = None
            return cause
        return error
    return UserError(f"Ray task {index + 1} of {count} ended without a result ({_first_line(error)}); fix: check "
                     "free memory on the nodes and Ray's logs (/tmp/ray/session_latest/logs), then re-run")


class RayEngine:
    """Jobs as Ray tasks, on the Ray of the `ray_session` around it (a local cluster, or the one at an address)."""

    name = "ray"

    def map(self, jobs: Sequence[tuple], on_done: Callable[[int, object], None] | None = None) -> list:
        return ray_map(call, list(jobs), on_done)

    def close(self) -> None:
        pass
