"""`--partitions P`: contiguous byte ranges run at the same time, merged into exactly what one pass writes."""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys

import pytest
from jsonl_samples import varied_lines

from helpers.common.errors import UserError
from helpers.corpus.inputs import open_input
from helpers.datasets.indexed import bin_path, idx_path
from helpers.datasets.sidecar import read_sidecar, sidecar_path
from helpers.preprocess import outputs as preprocess_outputs
from helpers.preprocess import preprocess


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fingerprint_of(prefix) -> tuple:
    content = read_sidecar(prefix)
    return (sha256(bin_path(prefix)), sha256(idx_path(prefix)),
            content["documents"], content["sequences"], content["tokens"])


COUNTS = ("documents", "empty_documents", "tokens", "bytes_read", "bytes_written", "blank_lines",
          "special_documents", "skipped", "first_skipped")


@pytest.fixture
def varied(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(varied_lines()))
    return path


def test_ranges_are_contiguous_cut_after_a_newline_and_cover_the_file(tmp_path):
    path = tmp_path / "in.jsonl"
    content = b"".join(varied_lines(200))
    path.write_bytes(content)
    for partitions in (1, 2, 3, 7):
        ranges = open_input(path).plan(partitions)
        assert ranges[0][0] == 0 and ranges[-1][1] == len(content)
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
        assert all(content[start - 1:start] == b"\n" for start, _ in ranges[1:])
        assert len(ranges) == partitions


@pytest.mark.parametrize("partitions", [2, 3])
def test_output_and_counts_identical_to_one_pass(tmp_path, varied, partitions):
    keys = ("text", "title")
    one = preprocess(varied, tmp_path / "one", "bytes", keys, workers=3, append_eod=True, skip_bad_records=True,
                     progress=False)
    many = preprocess(varied, tmp_path / "many", "bytes", keys, workers=3, append_eod=True,
                      skip_bad_records=True, partitions=partitions, progress=False)
    for key in keys:
        assert fingerprint_of(many.outputs[key]) == fingerprint_of(one.outputs[key])
    for name in COUNTS:
        assert getattr(many, name) == getattr(one, name), name
    assert one.skipped == {"invalid JSON": 5, "missing key": 3} and one.blank_lines == 6
    assert one.empty_documents > 0 and one.special_documents > 0


@pytest.mark.parametrize("partitions", [2, 3])
@pytest.mark.parametrize("bad_line", [2, 6, 9])
def test_a_bad_line_is_reported_with_its_line_number_in_the_whole_file(tmp_path, partitions, bad_line):
    lines = [json.dumps({"text": f"line {i} " * 20}).encode() + b"\n" for i in range(1, 11)]
    lines[bad_line - 1] = b'{"text": "broken"\n'
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(lines))
    with pytest.raises(UserError, match=rf"bad\.jsonl:{bad_line}: invalid JSON"):
        preprocess(path, tmp_path / "out", "bytes", workers=partitions, partitions=partitions, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_skipped_records_name_their_line_in_the_whole_file(tmp_path):
    lines = [json.dumps({"text": f"line {i} " * 20}).encode() + b"\n" for i in range(1, 11)]
    lines[7] = b'{"text": "broken"\n'
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(lines))
    summary = preprocess(path, tmp_path / "out", "bytes", workers=2, partitions=2, skip_bad_records=True,
                         progress=False)
    assert summary.skipped == {"invalid JSON": 1}
    assert [where.split(": ")[0] for where in summary.first_skipped] == [f"{path}:8"]


def test_one_line_file_with_more_partitions_than_lines(tmp_path):
    path = tmp_path / "one.jsonl"
    path.write_text('{"text": "a single document"}\n')
    one = preprocess(path, tmp_path / "one", "bytes", append_eod=True, progress=False)
    many = preprocess(path, tmp_path / "many", "bytes", workers=2, partitions=2, append_eod=True, progress=False)
    assert fingerprint_of(many.outputs["text"]) == fingerprint_of(one.outputs["text"])
    assert many.documents == 1


def test_no_document_in_the_whole_input_is_still_an_error(tmp_path):
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b"\n\n\n" + b'{"text": "broken"\n' + b"\n" * 5)
    with pytest.raises(UserError, match="no document in it"):
        preprocess(path, tmp_path / "out", "bytes", workers=2, partitions=2, skip_bad_records=True, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blank.jsonl"]


def test_one_progress_bar_for_the_whole_input_reaches_the_end(tmp_path, varied, recorded_bars):
    bars = recorded_bars
    preprocess(varied, tmp_path / "out", "bytes", workers=2, partitions=2, skip_bad_records=True)
    assert len(bars) == 1
    assert bars[0].total == bars[0].n == varied.stat().st_size and bars[0].closed


def test_sidecar_written_once_and_parts_removed(tmp_path, varied, monkeypatch):
    written = []
    real = preprocess_outputs.write_sidecar
    monkeypatch.setattr(preprocess_outputs, "write_sidecar", lambda prefix, content: written.append(prefix) or
                        real(prefix, content))
    summary = preprocess(varied, tmp_path / "out", "bytes", ("text", "title"), workers=2, partitions=2,
                         skip_bad_records=True, progress=False)
    assert sorted(map(str, written)) == sorted(summary.outputs.values())
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["in.jsonl"] + [f"out_{key}_document{suffix}" for key in ("text", "title") for suffix in (".bin", ".idx",
                                                                                                   ".json")])


def test_a_failed_partitioned_run_leaves_nothing(tmp_path, varied):
    with pytest.raises(UserError, match=r"in\.jsonl:6: invalid JSON"):
        preprocess(varied, tmp_path / "out", "bytes", workers=2, partitions=2, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_gz_input_runs_as_one_partition_with_the_same_output(tmp_path, varied):
    packed = tmp_path / "in.jsonl.gz"
    packed.write_bytes(gzip.compress(varied.read_bytes()))
    one = preprocess(varied, tmp_path / "one", "bytes", skip_bad_records=True, progress=False)
    many = preprocess(packed, tmp_path / "gz", "bytes", workers=2, partitions=2, skip_bad_records=True,
                      progress=False)
    assert fingerprint_of(many.outputs["text"]) == fingerprint_of(one.outputs["text"])
    assert open_input(packed).plan(2) == [(0, None)]


def test_workers_need_not_be_a_multiple_but_each_partition_needs_one(tmp_path, varied):
    one = preprocess(varied, tmp_path / "one", "bytes", skip_bad_records=True, progress=False)
    odd = preprocess(varied, tmp_path / "odd", "bytes", workers=3, partitions=2, skip_bad_records=True,
                     progress=False)
    assert fingerprint_of(odd.outputs["text"]) == fingerprint_of(one.outputs["text"])
    with pytest.raises(UserError, match="--partitions 3 needs at least 3 workers"):
        preprocess(varied, tmp_path / "few", "bytes", workers=2, partitions=3, progress=False)


def test_command_line_reports_the_right_line_and_documents_the_split(tmp_path):
    lines = [json.dumps({"text": f"line {i} " * 20}).encode() + b"\n" for i in range(1, 11)]
    lines[4] = b'{"text": "broken"\n'
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(lines))
    command = [sys.executable, "-m", "helpers.preprocess", "--input", str(path), "--output-prefix",
               str(tmp_path / "out"), "--tokenizer", "bytes", "--workers", "2", "--partitions", "2", "--no-progress"]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == result.stderr.strip().splitlines()[0]
    assert f"{path}:5: invalid JSON" in result.stderr
    assert not sidecar_path(tmp_path / "out_text_document").exists()
    usage = subprocess.run([sys.executable, "-m", "helpers.preprocess", "--help"], capture_output=True, text=True)
    assert "contiguous" in usage.stdout and "round-robin" in usage.stdout
