"""User-facing errors: one clear line, no traceback, a non-zero exit from every command line."""

from __future__ import annotations

import sys
from typing import Callable


class UserError(Exception):
    """A mistake in the user's input or set-up; the message says what and how to fix it."""


def run_cli(main: Callable[[list[str] | None], int | None], argv: list[str] | None = None) -> None:
    """Run a command-line `main`, turning a `UserError` into one line on stderr and exit code 2."""
    try:
        code = main(argv)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(code or 0)


class DataNotFoundError(UserError, FileNotFoundError):
    """Data that should be on disk is not: the message names the path and the command that makes it.

    Both a `UserError` (one line, exit 2 on the command line) and a `FileNotFoundError` (what Python
    code catches for a missing file). Real data missing is never a reason to fall back to random tokens.
    """
