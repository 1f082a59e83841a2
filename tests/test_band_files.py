"""The band stage in bounded memory: band keys written by the workers' batches and read back band by band,
in slices when the budget is small, give the buckets of the in-memory banding in the same order; sizes and
limits are read and refused in one line; the band files are hidden temporaries a later run clears."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers.clean import clean
from helpers.clean.text.band_files import SORT_BYTES_PER_KEY, BandKeys, KeyWriter, band_budget, band_paths, parse_size
from helpers.clean.text.lsh import all_band_keys, band_buckets
from helpers.common.errors import UserError


def planted_signatures(count: int = 3_000, seed: int = 0) -> np.ndarray:
    """Random signatures, with a tenth of them copies (all bands equal) and a tenth equal on one band only."""
    rng = np.random.default_rng(seed)
    matrix = rng.integers(0, 2**32, size=(count, 32), dtype=np.uint64).astype(np.uint32)
    copies = rng.choice(count, size=(count // 10, 2))
    matrix[copies[:, 1]] = matrix[copies[:, 0]]
    partly = rng.choice(count, size=(count // 10, 2))
    matrix[partly[:, 1], 8:12] = matrix[partly[:, 0], 8:12]
    return matrix


def written_keys(matrix: np.ndarray, folder, bands: int, rows: int, cuts=(0, 700, 1_900)) -> BandKeys:
    """The matrix's band keys as three ranges' workers write them, two batches each."""
    files, counts = [], []
    ends = [*cuts[1:], len(matrix)]
    for index, (start, end) in enumerate(zip(cuts, ends)):
        paths = band_paths(folder / f".removed.jsonl.keys{index}.tmp-1", bands)
        writer = KeyWriter(paths)
        middle = (start + end) // 2
        for first, last in ((start, middle), (middle, end)):
            writer.append(all_band_keys(matrix[first:last], bands, rows))
        writer.close()
        files.append(paths)
        counts.append(end - start)
    return BandKeys(files, counts)


@pytest.mark.parametrize("budget, slices", [(1 << 30, 1), (None, 8)])
def test_keys_read_back_in_slices_give_the_buckets_of_one_sort_in_the_same_order(tmp_path, monkeypatch, budget,
                                                                                 slices):
    matrix = planted_signatures()
    keys = written_keys(matrix, tmp_path, bands=8, rows=4)
    if budget is None:  # a budget that calls for 8 slices
        monkeypatch.setattr(BandKeys, "slices", lambda self, budget: 8)
    assert keys.slices(budget or 0) == slices
    expected = [tuple(b) for b in band_buckets(matrix, 8, 4)]
    found = [tuple(b) for b in keys.buckets(8, budget or 0)]
    assert found == expected and len(found) > 300  # the copies and the one-band matches


def test_a_small_budget_cuts_a_band_into_slices_that_fit():
    keys = BandKeys([[]], [10_000_000])
    assert keys.slices(4 << 30) == 1
    slices = keys.slices(100 << 20)
    assert slices > 1 and 10_000_000 * SORT_BYTES_PER_KEY / slices <= 100 << 20


def test_sizes_are_read_and_limits_too_small_are_refused_in_one_line():
    assert parse_size("2GB") == 2 << 30 and parse_size("512MB") == 512 << 20 and parse_size("1.5 GiB") == 3 << 29
    assert parse_size(str(100 << 20)) == 100 << 20
    with pytest.raises(UserError, match="'lots' is not a size; fix"):
        parse_size("lots")
    with pytest.raises(UserError, match="10MB is too small: one batch of signing needs 64MB"):
        parse_size("10MB")
    assert band_budget(2 << 30, 1_000_000) == (2 << 30) - 160_000_000
    with pytest.raises(UserError, match=r"--memory-limit 64MB is too small for the 1,000,000 documents.*fix: "
                                        r"--memory-limit 185MB or more"):
        band_budget(64 << 20, 1_000_000)


def test_a_run_with_sliced_bands_keeps_and_removes_what_one_sort_does(corpus_dir, tmp_path, monkeypatch):
    inputs = [corpus_dir / "docs.jsonl", corpus_dir / "code.jsonl"]
    settings = dict(fuzzy=True, threshold=0.7, workers=2, parts=3, progress=False)
    whole = clean(inputs, tmp_path / "whole", **settings)
    monkeypatch.setattr(BandKeys, "slices", lambda self, budget: 16)
    sliced = clean(inputs, tmp_path / "sliced", **settings, memory_limit="64MB")
    assert sliced["fuzzy"]["memory_limit_bytes"] == 64 << 20 and sliced["fuzzy"]["band_slices"] == 16
    assert whole["fuzzy"]["removed"] == sliced["fuzzy"]["removed"] > 0
    for name in ("docs.jsonl", "code.jsonl", "removed.jsonl"):
        assert (tmp_path / "whole" / name).read_bytes() == (tmp_path / "sliced" / name).read_bytes()
    assert not [p for p in (tmp_path / "sliced").iterdir() if p.name.startswith(".")], "band files left behind"


def test_band_files_a_killed_run_left_are_cleared_by_the_next(corpus_dir, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    stale = band_paths(out / ".removed.jsonl.keys0.tmp-999999999", 3)
    for path in stale:
        with open(path, "wb") as handle:
            handle.write(b"\0" * 64)
    report = clean([corpus_dir / "docs.jsonl"], out, fuzzy=True, progress=False)
    assert report["fuzzy"]["documents_signed"] > 0 and json.loads((out / "report.json").read_text())["fuzzy"]
    assert sorted(p.name for p in out.iterdir()) == ["docs.jsonl", "removed.jsonl", "report.json"]
