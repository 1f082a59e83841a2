"""The on-disk cache of GPT sample indices: what a failed, killed or damaged save leaves is never used."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from helpers.common.errors import UserError
from helpers.datasets import gpt_dataset
from helpers.datasets.gpt_dataset import INDEX_NAMES, GPTDataset, GPTDatasetConfig
from helpers.datasets.indexed import IndexedWriter

SEQ_LENGTH = 8
SAMPLES = 40


@pytest.fixture
def prefix(tmp_path):
    """Twelve short int32 documents."""
    with IndexedWriter(tmp_path / "data", np.int32) as writer:
        for n in (5, 17, 3, 9, 12, 4, 30, 7, 2, 11, 6, 20):
            writer.add_document(np.arange(1, n + 1))
        writer.finalize()
    return tmp_path / "data"


def build(prefix, cache_dir):
    config = GPTDatasetConfig(SEQ_LENGTH, seed=5, cache_dir=None if cache_dir is None else str(cache_dir))
    return GPTDataset(prefix, (0, 12), SAMPLES, config)


def assert_same_indices(a, b):
    for name in INDEX_NAMES:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert (a.epochs, a.tokens_per_epoch) == (b.epochs, b.tokens_per_epoch)


def entries(cache_dir: Path) -> list[str]:
    return sorted(p.name for p in cache_dir.iterdir()) if cache_dir.exists() else []


def the_folder(cache_dir: Path) -> Path:
    (name,) = entries(cache_dir)
    assert not name.startswith(".")
    return cache_dir / name


def test_indices_are_saved_once_and_loaded_after(prefix, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    first = build(prefix, cache)
    folder = the_folder(cache)
    assert sorted(p.name for p in folder.iterdir()) == sorted([f"{n}.npy" for n in INDEX_NAMES] + ["description.json"])
    monkeypatch.setattr(GPTDataset, "_build", lambda *_: pytest.fail("built again instead of loaded"))
    assert_same_indices(build(prefix, cache), first)


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_failed_save_leaves_nothing(prefix, tmp_path, monkeypatch, failure):
    real_save, calls = np.save, []

    def save_then_fail(path, array):  # the second file is cut off halfway
        calls.append(path)
        if len(calls) == 2:
            Path(path).write_bytes(b"\x93NUMPY" + bytes(40))
            raise failure
        real_save(path, array)

    monkeypatch.setattr(gpt_dataset.np, "save", save_then_fail)
    cache = tmp_path / "cache"
    with pytest.raises(type(failure)):
        build(prefix, cache)
    assert entries(cache) == []
    monkeypatch.setattr(gpt_dataset.np, "save", real_save)
    assert_same_indices(build(prefix, cache), build(prefix, None))


KILLED_SAVE = """
import os, signal, sys
import numpy as np
from helpers.datasets import gpt_dataset
from helpers.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig

real_save = np.save
def save_then_die(path, array):
    real_save(path, array)
    os.kill(os.getpid(), signal.SIGKILL)  # killed after the first file, in the middle of the save
gpt_dataset.np.save = save_then_die
GPTDataset(sys.argv[1], (0, 12), {samples}, GPTDatasetConfig({seq_length}, seed=5, cache_dir=sys.argv[2]))
"""


def test_a_killed_save_is_never_loaded_and_its_leftovers_are_removed(prefix, tmp_path):
    cache = tmp_path / "cache"
    script = KILLED_SAVE.format(samples=SAMPLES, seq_length=SEQ_LENGTH)
    killed = subprocess.run([sys.executable, "-c", script, str(prefix), str(cache)], capture_output=True,
                            cwd=Path(__file__).resolve().parents[1])
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    left = entries(cache)
    assert len(left) == 1 and left[0].startswith(".")  # only a hidden temporary, nothing under the final name
    again = build(prefix, cache)
    assert_same_indices(again, build(prefix, None))
    the_folder(cache)  # the dead process's temporary is gone, the finished folder is there


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def shorten(path: Path) -> None:
    np.save(path, np.load(path)[:-1])


DAMAGE = {
    "truncated shuffle index": lambda folder: truncate(folder / "shuffle_index.npy"),
    "empty sample index": lambda folder: (folder / "sample_index.npy").write_bytes(b""),
    "garbage document index": lambda folder: (folder / "document_index.npy").write_bytes(os.urandom(300)),
    "a shuffle index one short": lambda folder: shorten(folder / "shuffle_index.npy"),
    "a document index one short": lambda folder: shorten(folder / "document_index.npy"),
    "description not JSON": lambda folder: (folder / "description.json").write_text("{\"epochs\": 3,"),
    "description without epochs": lambda folder: (folder / "description.json").write_text(json.dumps(
        {k: v for k, v in json.loads((folder / "description.json").read_text()).items() if k != "epochs"})),
    "description missing": lambda folder: (folder / "description.json").unlink(),
    "an index missing": lambda folder: (folder / "sample_index.npy").unlink(),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_cache_is_said_and_rebuilt(prefix, tmp_path, capsys, damage):
    cache = tmp_path / "cache"
    build(prefix, cache)
    folder = the_folder(cache)
    DAMAGE[damage](folder)
    capsys.readouterr()
    rebuilt = build(prefix, cache)
    assert_same_indices(rebuilt, build(prefix, None))
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and folder.name in said[0] and "rebuilding" in said[0]
    assert the_folder(cache) == folder
    assert_same_indices(build(prefix, cache), rebuilt)  # and the rebuilt folder loads quietly
    assert capsys.readouterr().err == ""


def test_a_damaged_cache_on_a_waiting_rank_is_one_clear_line(prefix, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    build(prefix, cache)
    truncate(the_folder(cache) / "sample_index.npy")
    monkeypatch.setattr(gpt_dataset, "_distributed_rank", lambda: 1)
    monkeypatch.setattr(gpt_dataset.torch.distributed, "barrier", lambda: None)
    with pytest.raises(UserError, match=r"damaged.*fix: ") as err:
        build(prefix, cache)
    assert "\n" not in str(err.value)


def test_threads_saving_the_same_indices_at_once(prefix, tmp_path, monkeypatch):
    both_built = threading.Barrier(2, timeout=60)
    real_build = GPTDataset._build

    def build_then_wait(self, tokens):
        indices = real_build(self, tokens)
        both_built.wait()  # both threads save at the same time
        return indices

    monkeypatch.setattr(GPTDataset, "_build", build_then_wait)
    cache, results, errors = tmp_path / "cache", [], []

    def run():
        try:
            results.append(build(prefix, cache))
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(results) == 2
    assert_same_indices(*results)
    the_folder(cache)
