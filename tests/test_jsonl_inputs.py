"""JSONL as users keep it: Zstandard-compressed (one frame or several), and a glob or a folder of files read one
after the other (plain, .gz and .zst mixed). Each gives the bytes of the same records in one plain file, whatever
the parts and the engine; a bad record is named by its own file and line."""

from __future__ import annotations

import gzip
import hashlib

import pytest
import zstandard

from helpers.common.errors import UserError
from helpers.corpus.inputs import open_input
from helpers.datasets.indexed import bin_path, idx_path
from helpers.preprocess import preprocess


def hashes(prefix) -> tuple[str, str]:
    return (hashlib.sha256(bin_path(prefix).read_bytes()).hexdigest(),
            hashlib.sha256(idx_path(prefix).read_bytes()).hexdigest())


def run(path, prefix, **options):
    return preprocess(path, prefix, "llama3", append_eod=True, progress=False, **options)


def zstd_frames(data: bytes, frames: int) -> bytes:
    """`data` compressed as `frames` Zstandard frames one after the other (as `cat a.zst b.zst` makes)."""
    step = -(-len(data) // frames)
    return b"".join(zstandard.ZstdCompressor().compress(data[i:i + step]) for i in range(0, len(data), step))


@pytest.fixture(scope="module")
def inputs(corpus_dir, tmp_path_factory):
    """The docs domain as one plain file, and cut at line ends into four files of a glob: plain, .gz, .zst
    and plain again (name order is reading order); and the plain file's outputs."""
    folder = tmp_path_factory.mktemp("jsonl")
    data = (corpus_dir / "docs.jsonl").read_bytes()
    plain = folder / "docs.jsonl"
    plain.write_bytes(data)
    lines = data.splitlines(keepends=True)
    quarter = len(lines) // 4
    pieces = [b"".join(lines[i * quarter:(i + 1) * quarter if i < 3 else None]) for i in range(4)]
    (folder / "glob").mkdir()
    (folder / "glob" / "part-0.jsonl").write_bytes(pieces[0])
    (folder / "glob" / "part-1.jsonl.gz").write_bytes(gzip.compress(pieces[1]))
    (folder / "glob" / "part-2.jsonl.zst").write_bytes(zstd_frames(pieces[2], 3))
    (folder / "glob" / "part-3.jsonl").write_bytes(pieces[3])
    (folder / "docs.jsonl.zst").write_bytes(zstd_frames(data, 1))
    (folder / "frames.jsonl.zst").write_bytes(zstd_frames(data, 5))
    return folder, run(plain, folder / "plain", workers=2)


@pytest.mark.parametrize("source", ["docs.jsonl.zst", "frames.jsonl.zst"])
def test_zstandard_gives_the_bytes_of_the_plain_file(inputs, tmp_path, source):
    folder, plain = inputs
    made = run(folder / source, tmp_path / "out", workers=2)
    assert hashes(made.outputs["text"]) == hashes(plain.outputs["text"])


@pytest.mark.parametrize("parts", [1, 2, 7])
def test_a_glob_of_jsonl_gives_the_bytes_of_one_file(inputs, tmp_path, parts):
    folder, plain = inputs
    made = run(folder / "glob" / "part-*", tmp_path / "out", workers=max(2, parts), partitions=parts)
    assert hashes(made.outputs["text"]) == hashes(plain.outputs["text"])
    assert made.documents == plain.documents


def test_a_folder_of_jsonl_gives_the_bytes_of_one_file(inputs, tmp_path):
    folder, plain = inputs
    made = run(folder / "glob", tmp_path / "out", workers=2, partitions=2)
    assert hashes(made.outputs["text"]) == hashes(plain.outputs["text"])


def test_the_ray_engine_reads_a_glob_of_jsonl_the_same(ray_cluster, inputs, tmp_path):
    folder, plain = inputs
    made = run(folder / "glob" / "part-*", tmp_path / "out", partitions=3, engine="ray")
    assert hashes(made.outputs["text"]) == hashes(plain.outputs["text"])


def test_a_glob_is_cut_at_line_ends_and_never_inside_a_compressed_file(inputs):
    folder, _ = inputs
    pattern = folder / "glob" / "part-*"
    files = open_input(pattern).files
    assert [file.name for file in files] == ["part-0.jsonl", "part-1.jsonl.gz", "part-2.jsonl.zst", "part-3.jsonl"]
    ends, offset = [], 0
    for file in files:
        offset += file.stat().st_size
        ends.append(offset)
    for parts in (2, 3, 7, 40):
        ranges = open_input(pattern).plan(parts)
        assert ranges[0][0] == 0 and ranges[-1][1] == ends[-1]
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
        compressed = [(ends[0], ends[1]), (ends[1], ends[2])]
        assert not any(lo < end < hi for _, end in ranges for lo, hi in compressed)
        for start, end in ranges:  # every batch starts a line and names its own file
            for source, first_line, lines in open_input(pattern).batches(start, end):
                assert lines[-1].endswith(b"\n") and first_line >= 1 and "part-" in source


def test_a_bad_record_is_named_by_its_own_file_and_line(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "one"}\n{"text": "two"}\n')
    (tmp_path / "b.jsonl.zst").write_bytes(zstd_frames(b'{"text": "three"}\n{"text": 4}\n', 1))
    for parts in (1, 2):
        with pytest.raises(UserError, match=r"b\.jsonl\.zst:2: field 'text' is a JSON number"):
            preprocess(tmp_path / "*.json*", tmp_path / "out", "bytes", workers=2, partitions=parts, progress=False)
    made = preprocess(tmp_path / "*.json*", tmp_path / "out", "bytes", skip_bad_records=True, progress=False)
    assert made.documents == 3 and made.skipped == {"non-string value": 1}
