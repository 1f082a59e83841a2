"""A command whose stdout reader went away (`... | head -1`) ends quietly with 141, as a shell reports SIGPIPE, its
work done; a broken pipe that is not stdout's is still an error of one line."""

from __future__ import annotations

import errno
import subprocess
import sys

import pytest

from helpers.common.errors import run_cli


def test_a_closed_stdout_ends_the_command_quietly_with_141(corpus_dir, tmp_path):
    command = [sys.executable, "-m", "helpers.clean", "--input", str(corpus_dir / "docs.jsonl"), "--output-dir",
               str(tmp_path / "out"), "--exact", "--no-progress", "--workers", "1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    process.stdout.close()  # the reader goes before the summary is printed, as head does after its lines
    stderr = process.stderr.read()
    assert process.wait(timeout=600) == 141, stderr
    assert stderr == ""  # no "broken pipe; fix: check the paths", no traceback
    assert (tmp_path / "out" / "report.json").is_file() and (tmp_path / "out" / "docs.jsonl").is_file()


def test_a_broken_pipe_of_the_commands_own_is_still_one_line_and_exit_2(capsys):
    def main(argv):
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")  # a worker's pipe, say: stdout is still read

    with pytest.raises(SystemExit) as stopped:
        run_cli(main, [])
    said = capsys.readouterr().err
    assert stopped.value.code == 2 and said.startswith("error: broken pipe; fix:") and said.count("\n") == 1
