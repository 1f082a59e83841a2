"""How a process that took part in a torch.distributed process group ends: without finalizing the interpreter.

A process group's threads (gloo's work loops and its transport loop, NCCL's watchdog) live as long as the C++
group object does, and `destroy_process_group()` does not end it while something still holds the group: after a
DistributedDataParallel or FSDP2 model, the three gloo threads are still there once the group is destroyed, the
model deleted and `gc.collect()` run, so they are there when the script's last line has run. The interpreter
then finalizes; if one of those threads is still releasing the tensors of the last collective, it asks for the
interpreter's lock as the interpreter goes away, and the process aborts (SIGABRT) at the end of a run that
succeeded. The race needs that thread to be descheduled at the wrong moment, so it is rare on an idle machine
and shows up under load (once in 150 two-process runs beside three busy processes on 2 cores).

Such a process therefore ends in two halves: first everything a normal exit does while the interpreter is whole
(the `atexit` handlers, stdout and stderr flushed), then `os._exit` with its code, which ends every thread at
once and leaves nothing to finalize, and nothing to race. A file still open then is not flushed: write files
inside `with` blocks (as everything here does), which close them before the end.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from typing import NoReturn

_joined_a_group = False


def note_process_group() -> None:
    """Record that this process joined a process group (it stays so after the group is destroyed)."""
    global _joined_a_group
    _joined_a_group = True


def joined_a_process_group() -> bool:
    """Whether this process is or was in a process group: one it joined through `note_process_group`, one
    still initialized (a framework's own), or any process torchrun started."""
    if _joined_a_group or os.environ.get("TORCHELASTIC_RUN_ID"):
        return True
    distributed = sys.modules.get("torch.distributed")
    return distributed is not None and distributed.is_available() and distributed.is_initialized()


def exit_process(code: int) -> NoReturn:
    """End this process with `code`. After a process group, without finalizing the interpreter (see the
    module's docstring); otherwise the ordinary way, `sys.exit`."""
    if not joined_a_process_group():
        sys.exit(code)
    if threading.current_thread() is threading.main_thread():  # torchrun stops the other ranks once one failed: a
        for signum in (signal.SIGINT, signal.SIGTERM):  # signal now would raise inside an atexit function, print a
            signal.signal(signum, signal.SIG_IGN)  # traceback and change nothing, the exit being under way
    atexit._run_exitfuncs()  # what exit runs before finalizing: logging's flush, temporary folders, ...
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # closed or replaced: nothing left to flush
            pass
    os._exit(code)
