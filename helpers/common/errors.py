"""User-facing errors: one clear line, no traceback, a non-zero exit from every command line."""

from __future__ import annotations

import sys
from typing import Callable

from . import stop_signals
from .closed_output import CLOSED_OUTPUT_EXIT, let_output_go, reader_gone
from .process_exit import exit_process


class UserError(Exception):
    """A mistake in the user's input or set-up; the message says what and how to fix it."""


def run_cli(main: Callable[[list[str] | None], int | None], argv: list[str] | None = None) -> None:
    """Run a command-line `main`, turning a `UserError` into one line on stderr and exit code 2. Ctrl-C and
    SIGTERM unwind it (so every cleanup runs), then end it with one line and 130 or 143 (128 + the signal,
    as a shell reports it); a reader that closed its end of stdout (`| head`) ends it quietly with 141
    (`helpers.common.closed_output`)."""
    with stop_signals.handled():
        try:
            code = main(argv)
            sys.stdout.flush()  # a closed reader shows here, not as the interpreter exits
        except BrokenPipeError as err:
            if not reader_gone():  # a pipe of the command's own: say which error it was
                stop(2, f"error: {describe_os_error(err)}")
            let_output_go()
            exit_process(CLOSED_OUTPUT_EXIT)
        except UserError as err:
            stop(2, f"error: {err}")
        except KeyboardInterrupt:
            stop(130, "interrupted")
        except stop_signals.Terminated:
            stop(143, "terminated")
        except OSError as err:  # a path that cannot be read or written: the user's set-up, not a bug
            stop(2, f"error: {describe_os_error(err)}")
    exit_process(code or 0)


def stop(code: int, line: str) -> None:
    """End the command with one line on stderr and `code`; a rank of a torch.distributed job without
    finalizing the interpreter (`helpers.common.process_exit`). torchrun ends the other ranks once one has
    failed: a signal from then on no longer interrupts this one's line (`stop_signals.ending`)."""
    stop_signals.ending()
    say_on_stderr(line)
    exit_process(code)


def say_on_stderr(line: str) -> None:
    """One line in one write: stderr is unbuffered, and `print` writes the text and its newline apart, so
    the lines of processes that fail together (the ranks of a torchrun job) would run into each other."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def describe_os_error(err: OSError) -> str:
    """One line for an operating-system error: what happened to which path, and what to check. An error
    that names no path says so, rather than inventing one."""
    reason = (err.strerror or str(err)).lower()
    if err.filename is None:
        return (f"{reason}; fix: check the paths the command was given and their folders (permissions, free "
                "space, a folder where one is needed)")
    return f"{err.filename}: {reason}; fix: check that path (a folder where one is needed, permissions, free space)"


class DataNotFoundError(UserError, FileNotFoundError):
    """Data that should be on disk is not: the message names the path and the command that makes it.

    Both a `UserError` (one line, exit 2 on the command line) and a `FileNotFoundError` (what Python
    code catches for a missing file). Real data missing is never a reason to fall back to random tokens.
    """
