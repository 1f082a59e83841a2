"""A command whose output went into a pipe that closed (`python -m helpers.clean ... | head -1`): the reader
stopped reading, which is no mistake of the user's, so the command ends without a word and with the exit status
a shell reports for a process that SIGPIPE ended, 128 + 13 = 141 (as `yes | head -1` ends `yes`; 1 here means a
check failed). Python ignores SIGPIPE, so the closed pipe arrives as a `BrokenPipeError` on a write to stdout.
"""

from __future__ import annotations

import os
import select
import signal
import sys

CLOSED_OUTPUT_EXIT = 128 + getattr(signal, "SIGPIPE", 13)


def reader_gone(stream=None) -> bool:
    """Whether `stream` (stdout by default) is a pipe or socket whose reading end has closed. Without `poll`
    (Windows) it cannot tell, and takes a broken pipe to be this one."""
    stream = sys.stdout if stream is None else stream
    try:
        descriptor = stream.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by an object without one: not a pipe
        return False
    if not hasattr(select, "poll"):
        return True
    poller = select.poll()
    poller.register(descriptor, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def let_output_go() -> None:
    """Point stdout at the null device: what is still buffered has nowhere to fail on the way out (the
    interpreter flushes stdout as it exits, and would report the broken pipe again)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (AttributeError, OSError, ValueError):  # no descriptor to point elsewhere: nothing buffered there
        pass
