"""Killed and interrupted runs: SIGTERM and Ctrl-C clean up, a re-run clears what SIGKILL left, and no
partial output ever looks valid."""

from __future__ import annotations

import gc
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import helpers.preprocess.outputs as preprocess_outputs
from helpers.common.files import remove_stale_temporaries
from helpers.datasets.indexed import IndexedDataset, IndexedWriter
from helpers.preprocess import preprocess

ROOT = Path(__file__).resolve().parent.parent
WAIT_SECONDS = 60  # a generous bound for a process to start or end: a hang fails instead of blocking


@pytest.fixture(scope="module")
def big_input(tmp_path_factory) -> Path:
    """About 16 MB of English-like documents (words of the Python reference manual in random order):
    enough for `llama3` to keep two workers busy for a few seconds after the run has started."""
    import pydoc_data.topics

    words = re.findall(r"[A-Za-z]+[,.]?", " ".join(pydoc_data.topics.topics.values()))
    rng = random.Random(0)
    path = tmp_path_factory.mktemp("big") / "big.jsonl"
    with open(path, "w", encoding="utf-8") as out:
        while out.tell() < 16_000_000:
            out.write(json.dumps({"text": " ".join(rng.choices(words, k=rng.randint(100, 3000)))}) + "\n")
    return path


def start(input_path: Path, prefix: Path, partitions: int) -> subprocess.Popen:
    """The command line in its own process group (so that a signal can reach all of it, as Ctrl-C does)."""
    command = [sys.executable, "-m", "helpers.preprocess", "--input", str(input_path), "--output-prefix",
               str(prefix), "--tokenizer", "llama3", "--workers", "2", "--partitions", str(partitions),
               "--append-eod", "--no-progress", "--log-interval", "0"]
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name)


def wait_for_temporaries(process: subprocess.Popen, folder: Path, count: int) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while len([name for name in temporaries(folder) if ".bin" in name]) < count:
        assert process.poll() is None, f"the run ended before it could be stopped: {process.stderr.read()}"
        assert time.monotonic() < deadline, "no temporary file appeared"
        time.sleep(0.01)


def group_ended(group: int) -> bool:
    """Whether every process of the group (the run, its partitions and their workers) is gone."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def outputs(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.suffix in (".bin", ".idx", ".json") and ".tmp-" not in p.name)


@pytest.mark.parametrize("partitions", [1, 2])
def test_sigterm_removes_every_temporary_file_and_exits_143(tmp_path, big_input, partitions):
    out = tmp_path / "out"
    out.mkdir()
    process = start(big_input, out / "run", partitions)
    wait_for_temporaries(process, out, partitions)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=WAIT_SECONDS)
    assert process.returncode == 143
    assert stderr.strip() == "terminated"
    assert group_ended(process.pid)
    assert list(out.iterdir()) == []


def test_ctrl_c_to_the_whole_group_removes_every_temporary_file_and_exits_130(tmp_path, big_input):
    out = tmp_path / "out"
    out.mkdir()
    process = start(big_input, out / "run", partitions=2)
    wait_for_temporaries(process, out, 2)
    os.killpg(process.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: every process of the group
    _, stderr = process.communicate(timeout=WAIT_SECONDS)
    assert process.returncode == 130
    assert stderr.strip() == "interrupted"
    assert group_ended(process.pid)
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("partitions, whole_group", [(1, False), (2, True)])
def test_after_sigkill_a_rerun_clears_the_leftovers_and_succeeds(tmp_path, big_input, partitions, whole_group):
    out = tmp_path / "out"
    out.mkdir()
    process = start(big_input, out / "run", partitions)
    wait_for_temporaries(process, out, partitions)
    if whole_group:
        os.killpg(process.pid, signal.SIGKILL)
    else:
        process.kill()  # the run alone: its workers must not live on as orphans
    process.communicate(timeout=WAIT_SECONDS)
    assert group_ended(process.pid)
    left = temporaries(out)
    assert left and all(name.startswith(".run_text_document.") for name in left)
    assert outputs(out) == []  # nothing under a final name
    rerun = start(big_input, out / "run", partitions)
    _, stderr = rerun.communicate(timeout=WAIT_SECONDS * 2)
    assert rerun.returncode == 0, stderr
    assert temporaries(out) == []
    assert outputs(out) == ["run_text_document.bin", "run_text_document.idx", "run_text_document.json"]
    assert IndexedDataset(out / "run_text_document").document_count > 0


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_stale_temporaries_of_dead_processes_go_those_of_live_ones_stay(tmp_path):
    dead, alive = dead_pid(), os.getpid()
    names = {
        f".x_text_document.bin.tmp-{dead}": False,
        f".x_text_document.idx.tmp-{dead}": False,
        f".x_text_document.json.tmp-{dead}": False,
        f".x_text_document.part0.tmp-{dead}.bin": False,
        f".x_text_document.part1.tmp-{alive}.bin.tmp-{dead}": False,
        f".x_text_document.bin.tmp-{alive}": True,  # a live writer's file
        f".x_text_document.part0.tmp-{dead}.bin.tmp-{alive}": True,
        f".x_text_document_2.bin.tmp-{dead}": True,  # another prefix
        f".y_text_document.bin.tmp-{dead}": True,
        "x_text_document.bin": True,  # final names are never touched
        "x_text_document.idx": True,
    }
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    removed = remove_stale_temporaries(tmp_path / "x_text_document")
    assert sorted(p.name for p in removed) == sorted(name for name, stays in names.items() if not stays)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(name for name, stays in names.items() if stays)


def test_a_new_writer_clears_a_dead_writers_leftovers(tmp_path):
    stale = tmp_path / f".data.bin.tmp-{dead_pid()}"
    stale.write_bytes(b"\0" * 1000)
    with IndexedWriter(tmp_path / "data", np.uint16) as writer:
        writer.add_document([1, 2, 3])
        writer.finalize()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.bin", "data.idx"]


def test_a_writer_dropped_without_finalize_or_abort_removes_its_temporary_file(tmp_path):
    writer = IndexedWriter(tmp_path / "data", np.uint16)
    writer.add_document([1, 2, 3])
    handle = writer._bin
    assert len(list(tmp_path.iterdir())) == 1
    del writer
    gc.collect()
    assert handle.closed and list(tmp_path.iterdir()) == []


def test_a_stop_signal_the_moment_the_temporary_file_appears_still_removes_it(tmp_path, monkeypatch):
    """A run stopped as soon as its first temporary shows (what the SIGTERM tests above do, and a user watching
    the folder might) gets the signal right after `open`: the file's removal must already be registered."""
    import helpers.datasets.indexed as indexed
    from helpers.common.stop_signals import Terminated, handled

    def open_then_stopped(*args, **kwargs):
        handle = open(*args, **kwargs)
        # to this thread: os.kill's signal may land on another of the process's threads, whose handler can run
        # late on a busy machine, after the writer is made, and then inside some finalizer that drops its error
        signal.pthread_kill(threading.main_thread().ident, signal.SIGTERM)  # delivered at once unless held
        return handle

    monkeypatch.setattr(indexed, "open", open_then_stopped, raising=False)
    with handled(), pytest.raises(Terminated):
        IndexedWriter(tmp_path / "data", np.uint16)
    gc.collect()
    assert list(tmp_path.iterdir()) == []


def test_a_sigterm_while_a_command_writes_its_error_line_leaves_the_line_and_its_code(monkeypatch, capsys):
    """torchrun sends SIGTERM to the other ranks once one has failed; a rank already writing its own error line
    (`stop`) ends with that line and its code, not with a traceback for the signal. Before the command ends, the
    same signal still stops it."""
    from helpers.common import errors
    from helpers.common.stop_signals import Terminated, handled

    codes = []
    monkeypatch.setattr(errors, "exit_process", codes.append)
    written = errors.say_on_stderr

    def signalled_while_writing(line):
        signal.pthread_kill(threading.main_thread().ident, signal.SIGTERM)  # delivered at once
        written(line)

    monkeypatch.setattr(errors, "say_on_stderr", signalled_while_writing)
    with handled():
        errors.stop(2, "error: rank-not-set (rank 1, step 0): ...; fix: ...")
    assert codes == [2] and capsys.readouterr().err == "error: rank-not-set (rank 1, step 0): ...; fix: ...\n"
    with handled(), pytest.raises(Terminated):  # the next command's handling starts afresh
        signal.pthread_kill(threading.main_thread().ident, signal.SIGTERM)


def test_a_writer_that_fails_to_open_leaves_the_others_cleaned_up(tmp_path, monkeypatch):
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text('{"text": "one", "title": "two"}\n')
    created = []

    class SecondFails(IndexedWriter):
        def __init__(self, *args, **kwargs):
            if created:
                raise OSError(28, "No space left on device", str(args[0]))
            super().__init__(*args, **kwargs)
            created.append(self)

    monkeypatch.setattr(preprocess_outputs, "IndexedWriter", SecondFails)
    with pytest.raises(OSError) as failure:
        preprocess(jsonl, tmp_path / "out", "bytes", ("text", "title"), progress=False)
    assert failure.value.errno == 28 and created  # the first writer was made, and is still referenced here
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_sigterm_ends_any_command_line_with_one_line_and_exit_143(tmp_path):
    """`helpers.runs` running a notebook that sleeps: SIGTERM unwinds it like Ctrl-C, no traceback. The
    notebook's kernel sends its own log to /dev/null: being shut down mid-cell, it logs a traceback of its
    own, which is not the command line's output."""
    import nbformat

    started = tmp_path / "started"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import os, pathlib, time\nos.dup2(os.open(os.devnull, os.O_WRONLY), 2)\n"
        f"pathlib.Path({str(started)!r}).touch()\ntime.sleep({WAIT_SECONDS})")])
    nbformat.write(notebook, tmp_path / "sleeps.ipynb")
    process = subprocess.Popen([sys.executable, "-m", "helpers.runs", str(tmp_path / "sleeps.ipynb"), "--out",
                                str(tmp_path / "out")], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        while not started.exists():
            assert process.poll() is None, f"the run ended before it could be stopped: {process.stderr.read()}"
            assert time.monotonic() < deadline, "the notebook never started"
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=WAIT_SECONDS)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 143
    assert stderr.strip().splitlines()[-1] == "terminated" and "Traceback" not in stderr


@pytest.mark.parametrize("layout, made", [("npy", ["out_text.npy", "out_text.npy.json"]), ("shards", ["out_text_shards"])])
def test_after_a_kill_during_conversion_a_rerun_clears_the_intermediate_dataset(tmp_path, layout, made):
    """`--format npy/shards` first writes an indexed dataset under a hidden name of its process: one killed
    while converting leaves that pair (valid-looking, sidecar and all), and the next run for the prefix
    removes it."""
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text("".join(json.dumps({"text": f"document number {i}"}) + "\n" for i in range(30)))
    dead = dead_pid()
    preprocess(jsonl, tmp_path / f".out.indexed.tmp-{dead}", "bytes", append_eod=True, progress=False)
    (tmp_path / f".out.indexed.tmp-{dead}_text_document.bin.tmp-{dead}").write_bytes(b"\0" * 100)
    assert len(temporaries(tmp_path)) == 4
    rerun = subprocess.run([sys.executable, "-m", "helpers.preprocess", "--input", str(jsonl), "--output-prefix",
                            str(tmp_path / "out"), "--tokenizer", "bytes", "--append-eod", "--no-progress",
                            "--format", layout], cwd=ROOT, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", *made]


def test_sigterm_during_clean_leaves_no_file(big_input, tmp_path):
    """`helpers.clean` stopped while it writes its parts: exit 143, one line, no file in its folder, and
    every worker gone."""
    out = tmp_path / "clean"
    command = [sys.executable, "-m", "helpers.clean", "--input", str(big_input), "--output-dir", str(out),
               "--normalize", "--exact", "--lines", "--workers", "2", "--parts", "4", "--no-progress"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    deadline = time.monotonic() + WAIT_SECONDS
    while not (out.exists() and temporaries(out)):
        assert process.poll() is None, f"the run ended before it could be stopped: {process.stderr.read()}"
        assert time.monotonic() < deadline, "no part file appeared"
        time.sleep(0.005)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=WAIT_SECONDS)
    assert process.returncode == 143, stderr
    assert stderr.strip() == "terminated"
    assert group_ended(process.pid)
    assert sorted(p.name for p in out.iterdir()) == []
