"""`--engine ray`: the same bytes as the local engine for any number of parts, the earliest part's error
with its whole-file line and nothing left behind, and `ray_map`'s order and errors. One Ray for the whole
session (the `ray_cluster` fixture): starting one costs about 10 s."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import sys

import pytest
from jsonl_samples import varied_lines

from helpers.common.errors import UserError, run_cli
from helpers.corpus.inputs import open_input
from helpers.datasets.indexed import bin_path, idx_path
from helpers.engines.ray_cluster import ray_map
from helpers.preprocess.command import main, preprocess

KEYS = ("text", "title")
COUNTS = ("documents", "empty_documents", "tokens", "bytes_read", "bytes_written", "blank_lines",
          "special_documents", "skipped", "first_skipped")
NO_RAY_MESSAGE = "--engine ray needs the ray package; fix: pip install -e '.[ray]' (or pip install ray)"


def good_lines(count: int) -> list[bytes]:
    return [json.dumps({"text": f"line {i} " * 20}).encode() + b"\n" for i in range(1, count + 1)]


def hashes(prefix) -> tuple[str, str]:
    return (hashlib.sha256(bin_path(prefix).read_bytes()).hexdigest(),
            hashlib.sha256(idx_path(prefix).read_bytes()).hexdigest())


def run(path, prefix, **options):
    return preprocess(path, prefix, "llama3", KEYS, append_eod=True, skip_bad_records=True, progress=False,
                      **options)


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """The input, and what the local engine makes of it in one pass."""
    folder = tmp_path_factory.mktemp("local")
    path = folder / "in.jsonl"
    path.write_bytes(b"".join(varied_lines(90)))
    return path, run(path, folder / "one", workers=2)


@pytest.mark.parametrize("parts", [1, 2, 7])
def test_ray_writes_the_bytes_and_counts_of_the_local_engine(ray_cluster, local_run, tmp_path, parts):
    path, one = local_run
    assert one.blank_lines > 0 and one.empty_documents > 0 and one.skipped
    many = run(path, tmp_path / "ray", partitions=parts, engine="ray")
    for key in KEYS:
        assert hashes(many.outputs[key]) == hashes(one.outputs[key])
    for name in COUNTS:
        assert getattr(many, name) == getattr(one, name), name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"ray_{key}_document{suffix}" for key in KEYS for suffix in (".bin", ".idx", ".json"))


def test_a_gz_input_runs_as_one_ray_task_with_the_same_bytes(ray_cluster, local_run, tmp_path):
    path, one = local_run
    packed = tmp_path / "in.jsonl.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    many = run(packed, tmp_path / "gz", partitions=3, engine="ray")
    assert hashes(many.outputs["text"]) == hashes(one.outputs["text"])


@pytest.mark.parametrize("bad_lines, reported", [((8,), 8), ((3, 8), 3)])
def test_the_earliest_bad_record_is_reported_with_its_whole_file_line_and_nothing_is_left(
        ray_cluster, tmp_path, bad_lines, reported):
    lines = good_lines(10)
    for number in bad_lines:
        lines[number - 1] = b'{"text": "broken"\n'
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(lines))
    cut = open_input(path).plan(2)[1][0]
    assert len(b"".join(lines[:3])) <= cut <= len(b"".join(lines[:7]))  # line 3 in part 1, line 8 in part 2
    with pytest.raises(UserError, match=rf"bad\.jsonl:{reported}: invalid JSON") as raised:
        preprocess(path, tmp_path / "out", "llama3", partitions=2, engine="ray", progress=False)
    assert type(raised.value) is UserError and "\n" not in str(raised.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_one_progress_bar_moves_by_bytes_to_the_end(ray_cluster, local_run, tmp_path, recorded_bars):
    bars = recorded_bars
    path, _ = local_run
    preprocess(path, tmp_path / "out", "bytes", partitions=3, skip_bad_records=True, engine="ray")
    assert len(bars) == 1
    assert bars[0].total == bars[0].n == path.stat().st_size and bars[0].closed


def _tokenizer_loads(_) -> tuple[int, int]:
    """In a Ray worker: its process id, and how many zoo tokenizers it has loaded so far."""
    from helpers.tokenizers.zoo import _load_zoo

    return os.getpid(), _load_zoo.cache_info().misses


def test_a_worker_loads_the_tokenizer_once_whatever_it_runs(ray_cluster, local_run, tmp_path):
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this file
    path, _ = local_run
    run(path, tmp_path / "ray", partitions=7, engine="ray")
    loads = dict(ray_map(_tokenizer_loads, list(range(8))))
    assert loads and all(count <= 2 for count in loads.values())  # llama3, and bytes from another test


def test_ray_map_keeps_task_order_and_reports_each_task_once(ray_cluster):
    done = []
    assert ray_map(abs, list(range(-12, 0)), lambda index, result: done.append((index, result))) == \
        list(range(12, 0, -1))
    assert sorted(done) == [(index, 12 - index) for index in range(12)]
    assert ray_map(abs, []) == []


def test_ray_map_raises_a_task_s_user_error_as_itself(ray_cluster, tmp_path):
    present = tmp_path / "present.jsonl"
    present.write_text('{"text": "x"}\n')
    with pytest.raises(UserError) as raised:
        ray_map(open_input, [present, tmp_path / "first.jsonl", present, tmp_path / "second.jsonl"])
    assert type(raised.value) is UserError
    assert str(raised.value) == f"{tmp_path / 'first.jsonl'}: no such file; fix: check --input"


def test_ray_map_raises_other_errors_as_the_task_s_exception_class(ray_cluster):
    with pytest.raises(ValueError, match="invalid literal"):
        ray_map(int, ["1", "x", "2"])


def test_a_task_whose_worker_dies_is_one_line_after_ray_s_retries(ray_cluster):
    with pytest.raises(UserError, match=r"^Ray task 1 of 1 ended without a result \(.*\); fix: check free memory"):
        ray_map(os._exit, [3])


def test_the_command_line_uses_the_ray_already_running(ray_cluster, local_run, tmp_path, monkeypatch, capsys):
    import ray

    def no_new_ray(*args, **kwargs):
        raise AssertionError("started another Ray")

    monkeypatch.setattr(ray, "init", no_new_ray)
    path, one = local_run
    assert main(["--input", str(path), "--output-prefix", str(tmp_path / "cli"), "--tokenizer", "llama3",
                 "--json-keys", *KEYS, "--append-eod", "--skip-bad-records", "--engine", "ray", "--partitions", "2",
                 "--no-progress"]) == 0
    assert ray.is_initialized()
    assert hashes(tmp_path / "cli_text_document") == hashes(one.outputs["text"])
    assert f"output          {tmp_path / 'cli_text_document'}" in capsys.readouterr().out


def test_without_ray_installed_the_command_line_says_how_to_install_it(local_run, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails, as it does where ray is missing
    path, _ = local_run
    with pytest.raises(SystemExit) as exited:
        run_cli(main, ["--input", str(path), "--output-prefix", str(tmp_path / "out"), "--tokenizer", "bytes",
                       "--engine", "ray"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == f"error: {NO_RAY_MESSAGE}\n"
    assert list(tmp_path.iterdir()) == []


def test_an_address_where_no_cluster_answers_is_one_line_at_once(local_run, tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # as in a process that has not started Ray
    monkeypatch.setattr(ray, "init", lambda *args, **kwargs: pytest.fail("ray.init reached"))
    path, _ = local_run
    with pytest.raises(UserError, match=r"^--ray-address 127\.0\.0\.1:9: no Ray cluster answers there .*; fix: "):
        preprocess(path, tmp_path / "out", "bytes", engine="ray", ray_address="127.0.0.1:9", progress=False)
    assert list(tmp_path.iterdir()) == []


def test_a_ray_address_needs_the_ray_engine(local_run, tmp_path):
    path, _ = local_run
    with pytest.raises(UserError, match="--ray-address HEAD:6379 is for --engine ray; fix: add --engine ray"):
        preprocess(path, tmp_path / "out", "bytes", ray_address="HEAD:6379", progress=False)
