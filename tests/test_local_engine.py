"""The local engine's worker processes: results in job order; the earliest failing job's error, however the
others stand (even in the middle of sending a large result); a worker that dies is named, not waited for."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from helpers.common.errors import UserError
from helpers.engines.choice import engine_for


def _square_or_fail(number: int) -> bytes:
    if number == 5:
        raise UserError(f"job {number} fails")
    return bytes(2 << 20) if number % 2 else number * number  # odd jobs send 2 MB back


def _die(number: int) -> int:
    if number == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return number


def test_results_come_in_job_order_and_so_does_on_done():
    done = []
    with engine_for("local", 3) as engine:
        results = engine.map([(pow, n, 2) for n in range(40)], on_done=lambda index, value: done.append(index))
    assert results == [n * n for n in range(40)] and done == list(range(40))


def test_the_earliest_failing_jobs_error_is_raised_while_others_send_large_results():
    """Forty runs in a fresh process, each stopped by job 5 while job 4 or 6 may be sending 2 MB: none may wait
    for ever (the whole must end within the timeout), and each raises job 5's error."""
    script = ("import sys; sys.path.insert(0, 'tests')\n"
              "from test_local_engine import _square_or_fail\n"
              "from helpers.common.errors import UserError\n"
              "from helpers.engines.choice import engine_for\n"
              "for _ in range(40):\n"
              "    try:\n"
              "        with engine_for('local', 2) as engine:\n"
              "            engine.map([(_square_or_fail, n) for n in range(12)])\n"
              "    except UserError as error:\n"
              "        assert str(error) == 'job 5 fails', error\n"
              "    else:\n"
              "        raise AssertionError('job 5 did not stop the run')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_worker_that_dies_is_named_and_the_others_are_stopped():
    with pytest.raises(RuntimeError, match=r"a worker process ended \(exit code -9\) while it ran job 1"):
        with engine_for("local", 2) as engine:
            engine.map([(_die, n) for n in range(4)])
