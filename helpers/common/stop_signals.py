"""Ctrl-C and SIGTERM for our command lines: both unwind the stack, so that every cleanup on the way out runs.

`handled()` (which `helpers.common.errors.run_cli` wraps around every command line) makes SIGINT raise
`KeyboardInterrupt` and SIGTERM raise `Terminated`; a second signal is ignored, so that it cannot cut
the cleanup short. Code that forks, or that must not be cut in the middle (outputs moving into place),
runs inside `signals_held()`; child processes reset their handling at fork, and can ask to die with
their parent (`die_with_parent`), which a SIGKILL gives no chance to stop them.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
PR_SET_PDEATHSIG = 1  # Linux prctl option: a signal for this process when its parent dies


class Terminated(BaseException):
    """SIGTERM, raised like KeyboardInterrupt so that every cleanup on the way out runs."""


_signals_received: list[int] = []
_holding = 0  # inside `signals_held`: a signal is remembered, and raised when the block ends
_ending = False  # after `ending`: the command is on its way out with a line and a code of its own


def on_signal(signum, frame) -> None:
    """SIGINT raises KeyboardInterrupt, SIGTERM `Terminated`; a second signal is ignored, so that it cannot
    cut the cleanup short, and so is one after `ending`. The signal is also remembered for `check_signals`."""
    if _signals_received or _ending:
        return
    _signals_received.append(signum)
    if not _holding:
        _raise_for(signum)


@contextmanager
def handled() -> Iterator[None]:
    """Inside the block, Ctrl-C and SIGTERM go through `on_signal`; the previous handlers come back after.
    Only the main thread can set handlers: elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    global _ending
    previous = {signum: signal.signal(signum, on_signal) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _signals_received.clear()
        _ending = False


def ending() -> None:
    """The command is ending on its own, with its last line and exit code: a stop signal from here on changes
    neither (torchrun sends SIGTERM to the other ranks as soon as one has failed, which would otherwise break
    into a rank's own error line with a traceback)."""
    global _ending
    _ending = True


def _forked_child_signals() -> None:
    """In a child a run forks (always inside `signals_held`): a fresh start, SIGTERM at its default (kill)
    and Ctrl-C ignored until the child sets up its own handling, then the held signals let through. An
    inherited handler would run the parent's cleanup in the child, or swallow the parent's SIGTERM."""
    global _holding
    if not _holding:
        return
    _signals_received.clear()
    _holding = 0
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked_child_signals)


def _raise_for(signum: int) -> None:
    raise KeyboardInterrupt() if signum == signal.SIGINT else Terminated()


def check_signals() -> None:
    """Raise again for a signal already received: a handler that runs inside a finalizer or an at-fork hook
    (Python runs one at every fork) has its exception printed and dropped, and the run would go on."""
    if _signals_received:
        _raise_for(_signals_received[0])


@contextmanager
def signals_held():
    """Hold Ctrl-C and SIGTERM back until the block ends: while outputs move into place, so that a run
    makes all of its outputs or none; and while forking, where Python's at-fork hooks would drop the
    exception (and the run would go on), and where a child must not get a signal before it has set up."""
    global _holding
    mask = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS) if mask else None
    _holding += 1
    try:
        yield
    finally:
        _holding -= 1
        if mask:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    check_signals()


def die_with_parent(parent_pid: int, signum: int) -> None:
    """Have Linux send `signum` to this process when its parent dies: a parent killed by SIGKILL cannot stop
    its children, which would otherwise run on (or wait forever) as orphans."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signum))
        except (OSError, AttributeError):
            return
    if os.getppid() != parent_pid:  # the parent died before the request was made
        os.kill(os.getpid(), signum)
