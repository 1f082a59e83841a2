"""Whether a person is at this kernel: batch runs and tests set `HEADLESS_ENV`, so progress bars and
live controls know to save their final state instead of drawing widgets nobody sees."""

from __future__ import annotations

import os
import sys

HEADLESS_ENV = "HELPERS_HEADLESS"  # set to 1 by helpers.runs and the test suite


def headless() -> bool:
    """Whether this kernel runs without a person at it (a batch run or a test)."""
    return os.environ.get(HEADLESS_ENV) == "1"


def message_stream():
    """Where a message for the user goes: stderr in a terminal (stdout stays the command's output), stdout in a
    notebook kernel, which draws stderr as an error block and saves it as one in a batch run's notebook."""
    in_kernel = type(sys.stderr).__module__.startswith("ipykernel")
    return sys.stdout if in_kernel else sys.stderr
