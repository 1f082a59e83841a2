"""How a process ends after a torch.distributed process group (`helpers.common.process_exit`): everything a normal
exit does while the interpreter is whole (atexit handlers, buffered output), then no finalization, so that no
thread of the group can abort it on the way out; a process that never joined a group exits the ordinary way."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from helpers.common.paths import REPO_ROOT

SCRIPT = """
import atexit, os, sys
from pathlib import Path
out = Path(sys.argv[1])
marker = os.open(out / "finalized", os.O_WRONLY | os.O_CREAT)  # empty unless the interpreter finalizes

class Finalized:
    def __del__(self, write=os.write, marker=marker):  # bound now: module globals are gone by then
        write(marker, b"the interpreter finalized")

kept = Finalized()  # a module global: its __del__ runs only when the interpreter finalizes
atexit.register(lambda: (out / "atexit").write_text("atexit ran"))
sys.stdout.write("buffered, no newline")  # stdout is a pipe here: block-buffered until flushed

from helpers.common.errors import UserError, run_cli
from helpers.training.distributed import finish_ranks, join_ranks

def main(argv):
    if sys.argv[2] in ("group", "refused"):
        join_ranks(group_of_one=True)
    if sys.argv[2] == "signalled":  # torchrun ends the other ranks as this one exits
        join_ranks(group_of_one=True)
        atexit.register(lambda: os.kill(os.getpid(), 15))
    if sys.argv[2] in ("refused", "signalled"):
        raise UserError("a mistake of the user's; fix: the fix")
    if sys.argv[2] == "script":
        join_ranks(group_of_one=True)
        finish_ranks(3)
    return 3

run_cli(main)
"""


def run(tmp_path, mode):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    environment = {key: value for key, value in os.environ.items() if key != "TORCHELASTIC_RUN_ID"}
    environment["PYTHONPATH"] = str(REPO_ROOT)
    return subprocess.run([sys.executable, str(script), str(tmp_path), mode], capture_output=True, text=True,
                          env=environment, timeout=120)


@pytest.mark.parametrize("mode", ["group", "script"])
def test_after_a_process_group_the_exit_runs_atexit_and_flushes_but_does_not_finalize(tmp_path, mode):
    done = run(tmp_path, mode)
    assert done.returncode == 3, done.stderr[-2000:]
    assert done.stdout == "buffered, no newline"
    assert (tmp_path / "atexit").read_text() == "atexit ran"
    assert (tmp_path / "finalized").read_text() == ""  # ended before finalizing: no group thread can race it


def test_a_refusal_after_a_process_group_is_one_line_and_its_code(tmp_path):
    done = run(tmp_path, "refused")
    assert done.returncode == 2 and done.stderr == "error: a mistake of the user's; fix: the fix\n"
    assert (tmp_path / "atexit").exists() and (tmp_path / "finalized").read_text() == ""


def test_without_a_process_group_the_process_exits_the_ordinary_way(tmp_path):
    done = run(tmp_path, "none")
    assert done.returncode == 3 and done.stdout == "buffered, no newline", done.stderr[-2000:]
    assert (tmp_path / "atexit").exists()
    assert (tmp_path / "finalized").read_text() == "the interpreter finalized"


def test_a_stop_signal_while_the_process_ends_changes_nothing(tmp_path):
    """SIGTERM in the middle of the exit (torchrun stopping the other ranks once one failed) is let go: raised in an
    atexit function it would print a traceback, and the run's own line and code are already given."""
    done = run(tmp_path, "signalled")
    assert done.returncode == 2 and done.stderr == "error: a mistake of the user's; fix: the fix\n", done.stderr
    assert (tmp_path / "atexit").read_text() == "atexit ran"
