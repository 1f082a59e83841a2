"""Fuzzing the indexed format past its magic bytes: header fields, index arrays and the `.bin`, damaged
one at a time, from a valid dataset.

For every damage, `python -m helpers.check` ends with a verdict, never a traceback: exit 1 with one FAIL
line per failed check (each with a fix), or exit 0 only where the damage cannot be seen (an id that
stays a valid, non-final id of the vocabulary; document boundaries moved to other valid places). And the
reader either opens the files or refuses them with an `IndexFormatError`.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from helpers.check.command import main
from helpers.check.damage import (
    INDEX_ARRAYS,
    flip_bit,
    index_array_offset,
    read_header,
    resize_bin,
    set_header_field,
    set_index_entry,
)
from helpers.common.errors import run_cli
from helpers.datasets.indexed import (
    DTYPE_CODES,
    MAGIC,
    IndexedDataset,
    IndexedWriter,
    IndexFormatError,
    bin_path,
    idx_path,
)

TOKENIZER = "bytes"  # 256 byte ids, then BOS 256 and EOD 257
VOCAB, EOD = 258, 257
TEXTS = [b"Hello world.", b"", b"To be, or not to be: that is the question.", b"x", b"def f(x):\n    return x\n"]
CODE_BYTE = len(MAGIC) + 8  # the dtype code follows the magic and the u64 version
BOUNDARIES = [0, 1, 2, 31, 32, 63, 64, 2**31 - 1, 2**31, 2**32, 2**63 - 1, 2**63, 2**64 - 1]


def _write(prefix, dtype) -> None:
    """Documents of byte ids with EOD: one empty, and one made of two sequences."""
    with IndexedWriter(prefix, dtype) as writer:
        for text in TEXTS:
            writer.add_document(list(text) + [EOD] if text else [])
        writer.add_sequences([list(b"two sequences, "), list(b"one document") + [EOD]])
        writer.end_document()
        writer.finalize()


@pytest.fixture(scope="module", params=["uint16", "int32"])
def original(request, tmp_path_factory):
    """A valid dataset's bytes (`.idx`, `.bin`) and dtype."""
    prefix = tmp_path_factory.mktemp(request.param) / "good"
    _write(prefix, request.param)
    return idx_path(prefix).read_bytes(), bin_path(prefix).read_bytes(), np.dtype(request.param)


@pytest.fixture()
def fresh(tmp_path, original):
    """A function that puts the valid files back under one prefix and returns it."""
    prefix = tmp_path / "x"

    def restore():
        idx_path(prefix).write_bytes(original[0])
        bin_path(prefix).write_bytes(original[1])
        return prefix
    return restore


def check_exit(prefix, capsys, what: str) -> int:
    """Run the command line in-process; assert it ended as a verdict with one fixable line per failure."""
    with pytest.raises(SystemExit) as exited:
        run_cli(main, [str(prefix), "--tokenizer", TOKENIZER])
    out, err = capsys.readouterr()
    code = exited.value.code
    failures = [line for line in out.splitlines() if line.strip().startswith("FAIL")]
    assert code in (0, 1, 2), (what, code, err)
    if code == 2:
        assert err.count("\n") == 1 and "; fix: " in err, (what, err)
    else:
        assert not err, (what, err)
        assert bool(failures) == (code == 1), (what, out)
        assert all("; fix: " in line for line in failures), (what, failures)
        assert not any("checks finished" in line for line in failures), (what, failures)  # no surprise exception
    return code


def opens_or_refuses(prefix, what: str) -> None:
    """The reader opens the files or raises `IndexFormatError`: never another exception."""
    try:
        IndexedDataset(prefix)
    except IndexFormatError as err:
        assert "; fix: " in str(err) and "\n" not in str(err), (what, err)


def assert_verdict(prefix, capsys, what: str, damaged: bool) -> None:
    """Damage the check must see ends in exit 1; damage it may not see, in exit 0 or 1."""
    opens_or_refuses(prefix, what)
    code = check_exit(prefix, capsys, what)
    assert code == 1 if damaged else code in (0, 1), (what, code)


def test_the_valid_dataset_passes(fresh, capsys):
    assert check_exit(fresh(), capsys, "valid") == 0


def test_header_fields_at_boundary_values(fresh, original, capsys):
    header = read_header(fresh())
    candidates = {
        "version": BOUNDARIES,
        "dtype code": [0, *DTYPE_CODES, 9, 255],
        "sequences": BOUNDARIES + [header["sequences"] + d for d in (-2, -1, 1, 2)],
        "document indices": BOUNDARIES + [header["document indices"] + d for d in (-3, -1, 1, 3)],
    }
    for name, values in candidates.items():
        for value in values:
            if value == header[name]:
                continue
            prefix = fresh()
            set_header_field(prefix, name, value)
            assert_verdict(prefix, capsys, f"{name} = {value}", damaged=not _same_width_integer(value, original)
                           if name == "dtype code" else True)


def _same_width_integer(code: int, original) -> bool:
    """A dtype code that reads the same bytes as integers of the same width: the ids may still look valid."""
    kind = np.dtype(DTYPE_CODES[code]) if code in DTYPE_CODES else None
    return kind is not None and kind.kind in "iu" and kind.itemsize == original[2].itemsize


def test_counts_changed_together_so_the_size_still_matches(fresh, capsys):
    """Twelve bytes per sequence and eight per document index: -2 sequences and +3 indices keep the size."""
    header = read_header(fresh())
    for sequences, indices in ((-2, 3), (2, -3), (-4, 6)):
        prefix = fresh()
        set_header_field(prefix, "sequences", header["sequences"] + sequences)
        set_header_field(prefix, "document indices", header["document indices"] + indices)
        assert_verdict(prefix, capsys, f"counts {sequences:+} and {indices:+}", damaged=True)


def _entries(prefix, name: str) -> np.ndarray:
    header = read_header(prefix)
    count = header["document indices"] if name == "document indices" else header["sequences"]
    data = idx_path(prefix).read_bytes()
    return np.frombuffer(data, INDEX_ARRAYS[name], count=count, offset=index_array_offset(prefix, name)).astype(np.int64)


def _still_valid_document_indices(indices: np.ndarray, sequences: int) -> bool:
    return indices[0] == 0 and indices[-1] == sequences and bool((np.diff(indices) >= 0).all())


def _array_mutations(rng: np.random.Generator, entries: dict, count: int):
    """(array, {position: new value}, description), drawn from boundary values, neighbours, swaps and shifts."""
    for _ in range(count):
        name = str(rng.choice(list(INDEX_ARRAYS)))
        values = entries[name]
        info = np.iinfo(INDEX_ARRAYS[name])
        i, j = (int(p) for p in rng.integers(0, values.size, size=2))
        kind = rng.integers(0, 4)
        if kind == 0:  # a boundary value
            value = int(rng.choice([-1, 0, 1, info.min, info.max, info.min + 1, info.max - 1, 2**31 - 1, -(2**31)]))
            yield name, {i: value}, f"{name}[{i}] = {value}"
        elif kind == 1:  # off by a little
            change = int(rng.choice([-2, -1, 1, 2]))
            yield name, {i: int(values[i]) + change}, f"{name}[{i}] {change:+}"
        elif kind == 2:  # two entries swapped
            yield name, {i: int(values[j]), j: int(values[i])}, f"{name}[{i}] <-> [{j}]"
        else:  # something moved from one entry to another: the sum stays the same
            change = int(rng.integers(1, 100))
            yield name, {i: int(values[i]) + change, j: int(values[j]) - change}, f"{name}[{i}] +{change}, [{j}] -{change}"


@pytest.mark.parametrize("seed", [0, 1])
def test_index_array_entries(fresh, capsys, seed):
    rng = np.random.default_rng(seed)
    prefix = fresh()
    entries = {name: _entries(prefix, name) for name in INDEX_ARRAYS}
    sequences = read_header(prefix)["sequences"]
    tried = 0
    for name, changes, what in _array_mutations(rng, entries, 150):
        info = np.iinfo(INDEX_ARRAYS[name])
        mutated = entries[name].copy()
        for position, value in changes.items():
            mutated[position] = value
        if (mutated == entries[name]).all() or not all(info.min <= v <= info.max for v in changes.values()):
            continue
        prefix = fresh()
        for position, value in changes.items():
            set_index_entry(prefix, name, position, value)
        moved_boundaries = name == "document indices" and _still_valid_document_indices(mutated, sequences)
        assert_verdict(prefix, capsys, what, damaged=not moved_boundaries)
        tried += 1
    assert tried > 100


@pytest.mark.parametrize("change", [-9, -8, -4, -2, -1, 1, 2, 4, 8, 9])
def test_bin_cut_or_extended(fresh, capsys, change):
    prefix = fresh()
    resize_bin(prefix, change)
    assert_verdict(prefix, capsys, f".bin {change:+} bytes", damaged=True)


def test_bin_bit_flips(fresh, original, capsys):
    """A flipped id is caught when it leaves the vocabulary, turns negative, or was a document's final EOD;
    else it may pass (an EOD inside a document is valid data)."""
    rng = np.random.default_rng(2)
    tokens = np.frombuffer(original[1], original[2])
    for bit in rng.integers(0, 8 * len(original[1]), size=120):
        prefix = fresh()
        flip_bit(bin_path(prefix), int(bit))
        position = int(bit) // (8 * tokens.itemsize)
        new = int(np.frombuffer(bin_path(prefix).read_bytes(), original[2])[position])
        visible = not 0 <= new < VOCAB or tokens[position] == EOD
        assert_verdict(prefix, capsys, f".bin bit {bit}: {tokens[position]} -> {new}", damaged=visible)


def test_idx_bit_flips_anywhere(fresh, original, capsys):
    """Single bit flips over the whole `.idx`: the header, the lengths and the pointers are always caught."""
    rng = np.random.default_rng(3)
    prefix = fresh()
    indices_start = index_array_offset(prefix, "document indices")
    sequences = read_header(prefix)["sequences"]
    code_bits = range(8 * CODE_BYTE, 8 * CODE_BYTE + 8)
    for bit in rng.integers(0, 8 * len(original[0]), size=150):
        prefix = fresh()
        flip_bit(idx_path(prefix), int(bit))
        if int(bit) in code_bits:
            damaged = not _same_width_integer(read_header(prefix)["dtype code"], original)
        elif int(bit) >= 8 * indices_start:
            damaged = not _still_valid_document_indices(_entries(prefix, "document indices"), sequences)
        else:
            damaged = True
        assert_verdict(prefix, capsys, f".idx bit {bit}", damaged=damaged)


@pytest.mark.parametrize("damage, field, value", [
    ("header", "sequences", 2**64 - 1),
    ("header", "dtype code", 7),
    ("entry", "pointers", 2**62),
    ("entry", "lengths", -1),
])
def test_as_a_real_subprocess(fresh, damage, field, value):
    """The same verdicts from `python -m helpers.check` in its own process: exit 1, no traceback."""
    prefix = fresh()
    if damage == "header":
        set_header_field(prefix, field, value)
    else:
        set_index_entry(prefix, field, 1, value)
    run = subprocess.run([sys.executable, "-m", "helpers.check", str(prefix), "--tokenizer", TOKENIZER],
                         capture_output=True, text=True)
    assert run.returncode == 1 and not run.stderr, run.stderr
    assert "FAIL" in run.stdout and "fix:" in run.stdout
