"""Megatron's indexed dataset (`PREFIX.bin` + `PREFIX.idx`): the whole format in one file.

`.bin` holds every sequence's token ids back to back, in one dtype, nothing else.
`.idx` is little-endian with no padding:

    9 bytes   magic b"MMIDIDX\\x00\\x00"
    8 bytes   version, u64 = 1
    1 byte    dtype code (see DTYPE_CODES: 4 is int32, 8 is uint16)
    8 bytes   sequence count N, u64
    8 bytes   document-index count D, u64 (= documents + 1: the indices start with 0)
    4·N       sequence lengths, int32
    8·N       sequence pointers, int64 byte offsets into .bin
    8·D       document indices, int64: document d is sequences [D[d], D[d+1])

A document made by Megatron's preprocessing is one sequence (or none, for an empty text).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import weakref
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ..common.errors import UserError
from ..common.files import remove_stale_temporaries, temporary_name
from ..common.stop_signals import signals_held

# How to make a missing prefix, said wherever one is missing.
MAKE_PREFIX = ("make it with python -m helpers.preprocess --input FILE.jsonl --output-prefix PREFIX --tokenizer NAME "
               "--append-eod (it writes PREFIX_text_document; the workshop's own under data/megatron come from "
               "notebook 02 or make workshop), or correct the path (a prefix has no .bin/.idx suffix)")
MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
HEADER = struct.Struct("<9sQBQQ")  # magic, version, dtype code, sequence count, document-index count

DTYPE_CODES: dict[int, type] = {
    1: np.uint8,
    2: np.int8,
    3: np.int16,
    4: np.int32,
    5: np.int64,
    6: np.float64,
    7: np.float32,
    8: np.uint16,
}
CODE_OF_DTYPE = {np.dtype(t): code for code, t in DTYPE_CODES.items()}

class IndexFormatError(UserError):
    """A `.bin/.idx` pair that is not a valid Megatron indexed dataset."""


def as_token_ids(ids, dtype: np.dtype) -> np.ndarray:
    """`ids` as an array of `dtype`; an id the dtype cannot hold is refused, never wrapped around
    (numpy's cast would store 70,000 in a uint16 as 4,464). One min/max per call, no loop."""
    array = np.asarray(ids)
    if array.dtype == dtype:
        return array
    if array.size == 0:
        return array.astype(dtype)
    if dtype.kind in "iu":
        if array.dtype.kind not in "iub":
            raise UserError(f"token ids of type {array.dtype} cannot be stored as {dtype}; "
                            "fix: give integer ids")
        info = np.iinfo(dtype)
        low, high = int(array.min()), int(array.max())
        if low < info.min or high > info.max:
            bad = low if low < info.min else high
            raise UserError(f"token id {bad} does not fit in {dtype} ({info.min}..{info.max}); "
                            "fix: write with a wider dtype (int32, or int64)")
    return array.astype(dtype)


def idx_path(prefix: str | os.PathLike) -> Path:
    return Path(f"{prefix}.idx")


def bin_path(prefix: str | os.PathLike) -> Path:
    return Path(f"{prefix}.bin")


def _discard_temporaries(handle, paths: tuple[Path, ...], owner: int) -> None:
    """Close a writer's `.bin` and remove its temporary files; a forked child, which does not own them,
    leaves them alone."""
    if os.getpid() != owner:
        return
    handle.close()
    for path in paths:
        path.unlink(missing_ok=True)


def _sequences_per_document(document_lengths: np.ndarray, sequence_lengths: np.ndarray) -> np.ndarray:
    """How many of the sequences fall in each document; the sequences must tile the documents exactly."""
    sequence_ends = np.cumsum(sequence_lengths)
    document_ends = np.cumsum(document_lengths)
    tiled = (int(sequence_lengths.sum()) == int(document_lengths.sum()) and bool((sequence_lengths > 0).all())
             and bool(np.isin(document_ends[document_lengths > 0], sequence_ends).all()))
    if not tiled:
        raise ValueError("sequence lengths do not cut the documents into whole sequences")
    return np.diff(np.searchsorted(sequence_ends, document_ends, side="right"), prepend=0)


class IndexedWriter:
    """Writes a dataset under temporary names; `finalize` renames them into place.

    An interrupted run (exception, Ctrl-C, crash) never leaves a `.bin/.idx` pair that looks valid:
    the old `.idx` is removed before the new `.bin` takes its name, and the new `.idx` comes last.
    Use as a context manager: leaving it by an exception removes the temporary files, and so does
    dropping a writer that was neither finalized nor aborted. A new writer first removes the temporary
    files that killed processes left for its prefix.
    """

    def __init__(self, prefix: str | os.PathLike, dtype):
        self.prefix = Path(prefix)
        self.dtype = np.dtype(dtype)
        if self.dtype not in CODE_OF_DTYPE:
            raise ValueError(f"dtype {self.dtype} has no Megatron dtype code")
        self.prefix.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(self.prefix)
        self._bin_tmp = temporary_name(bin_path(self.prefix))
        self._idx_tmp = temporary_name(idx_path(self.prefix))
        with signals_held():  # a stop signal the moment the file appears must find its removal registered
            self._bin = open(self._bin_tmp, "wb")
            self._discard = weakref.finalize(self, _discard_temporaries, handle=self._bin,
                                             paths=(self._bin_tmp, self._idx_tmp), owner=os.getpid())
        self._lengths: list[np.ndarray] = []
        self._document_ends: list[np.ndarray] = []
        self._sequences = 0
        self.documents = 0
        self.tokens = 0

    def add_document(self, ids: Sequence[int] | np.ndarray) -> None:
        """One document as one sequence; an empty one adds a document boundary and no sequence."""
        array = as_token_ids(ids, self.dtype)
        if array.size:
            self._bin.write(array.tobytes())
            self._lengths.append(np.array([array.size], dtype=np.int32))
            self._sequences += 1
            self.tokens += array.size
        self._document_ends.append(np.array([self._sequences], dtype=np.int64))
        self.documents += 1

    def add_documents(self, flat_ids: np.ndarray, lengths: np.ndarray,
                      sequence_lengths: np.ndarray | None = None) -> None:
        """Many documents at once: their ids concatenated, and each one's length (0 for an empty one).

        Each non-empty document is one sequence, unless `sequence_lengths` (all positive, in order) cut
        the documents into several, as Megatron's tool does for a list of strings."""
        flat_ids = as_token_ids(flat_ids, self.dtype)
        lengths = np.asarray(lengths, dtype=np.int64)
        if int(lengths.sum()) != flat_ids.size:
            raise ValueError("lengths do not add up to the number of ids")
        if sequence_lengths is None:
            sequences = lengths[lengths > 0]
            per_document = (lengths > 0).astype(np.int64)
        else:
            sequences = np.asarray(sequence_lengths, dtype=np.int64)
            per_document = _sequences_per_document(lengths, sequences)
        self._bin.write(flat_ids.tobytes())
        self._lengths.append(sequences.astype(np.int32))
        self._document_ends.append(self._sequences + np.cumsum(per_document))
        self._sequences += int(sequences.size)
        self.tokens += int(flat_ids.size)
        self.documents += int(lengths.size)

    def add_sequences(self, sequences: Iterable[Sequence[int]]) -> None:
        """Sequences of one document (sentence-level data); close the document with `end_document`."""
        for ids in sequences:
            array = as_token_ids(ids, self.dtype)
            self._bin.write(array.tobytes())
            self._lengths.append(np.array([array.size], dtype=np.int32))
            self._sequences += 1
            self.tokens += array.size

    def end_document(self) -> None:
        self._document_ends.append(np.array([self._sequences], dtype=np.int64))
        self.documents += 1

    def append_dataset(self, prefix: str | os.PathLike) -> None:
        """Append every document of an existing dataset of the same dtype (for merging)."""
        source = IndexedDataset(prefix)
        if source.dtype != self.dtype:
            raise UserError(f"{prefix}: dtype {source.dtype} differs from {self.dtype}; "
                            f"fix: merge only datasets made with the same tokenizer")
        with open(bin_path(prefix), "rb") as handle:
            shutil.copyfileobj(handle, self._bin, length=16 << 20)
        self._lengths.append(np.array(source.sequence_lengths, dtype=np.int32))
        self._document_ends.append(self._sequences + np.array(source.document_indices[1:], dtype=np.int64))
        self._sequences += len(source)
        self.tokens += int(source.sequence_lengths.sum(dtype=np.int64))
        self.documents += source.document_count

    def finalize(self) -> Path:
        """Write the index and move both files into place; returns the prefix."""
        self._bin.close()
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0, np.int32)
        pointers = np.zeros(lengths.size, dtype=np.int64)
        np.cumsum(lengths[:-1].astype(np.int64) * self.dtype.itemsize, out=pointers[1:])
        document_indices = np.concatenate([np.zeros(1, np.int64), *self._document_ends])
        with open(self._idx_tmp, "wb") as out:
            header = (MAGIC, VERSION, CODE_OF_DTYPE[self.dtype], lengths.size, document_indices.size)
            out.write(HEADER.pack(*header))
            out.write(lengths.astype("<i4").tobytes())
            out.write(pointers.astype("<i8").tobytes())
            out.write(document_indices.astype("<i8").tobytes())
        idx_path(self.prefix).unlink(missing_ok=True)
        os.replace(self._bin_tmp, bin_path(self.prefix))
        os.replace(self._idx_tmp, idx_path(self.prefix))
        self._discard.detach()
        return self.prefix

    def abort(self) -> None:
        """Close and remove the temporary files; nothing under the final names is touched."""
        self._discard()

    def __enter__(self) -> "IndexedWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()


class IndexedDataset:
    """A memory-mapped reader: opening touches only the header, whatever the size of the files.

    `ds[i]` is sequence i as a numpy array (a view into the mapped `.bin`); `ds.get(i, offset, length)`
    reads part of it. The arrays `sequence_lengths`, `sequence_pointers`, `document_indices` are
    views into the mapped `.idx`.
    """

    def __init__(self, prefix: str | os.PathLike):
        self.prefix = Path(prefix)
        index_file, data_file = idx_path(prefix), bin_path(prefix)
        for path in (index_file, data_file):
            if not path.is_file():
                if path.is_dir():
                    raise IndexFormatError(f"{path}: a folder, not a file; fix: check the prefix (it has no "
                                           ".bin/.idx suffix)")
                raise IndexFormatError(f"{path}: no such file; fix: {MAKE_PREFIX}")
        size = index_file.stat().st_size
        if size < HEADER.size:
            raise IndexFormatError(f"{index_file}: {size} bytes, shorter than the {HEADER.size}-byte header; "
                                   "fix: re-run the preprocessing")
        with open(index_file, "rb") as handle:
            magic, version, code, count, doc_count = HEADER.unpack(handle.read(HEADER.size))
        if magic != MAGIC:
            raise IndexFormatError(f"{index_file}: magic {magic!r} is not {MAGIC!r}; fix: this is not a Megatron .idx")
        if version != VERSION:
            raise IndexFormatError(f"{index_file}: version {version}, only {VERSION} exists; fix: re-run the preprocessing")
        if code not in DTYPE_CODES:
            raise IndexFormatError(f"{index_file}: dtype code {code} is not one of {sorted(DTYPE_CODES)}; "
                                   "fix: re-run the preprocessing")
        expected = HEADER.size + 12 * count + 8 * doc_count
        if size != expected:
            raise IndexFormatError(f"{index_file}: {size} bytes, but the header's counts ({count} sequences, "
                                   f"{doc_count} document indices) need {expected}; fix: re-run the preprocessing")
        self.dtype = np.dtype(DTYPE_CODES[code])
        self.dtype_code = code
        self.version = version
        self._index = np.memmap(index_file, dtype=np.uint8, mode="r")
        offset = HEADER.size
        self.sequence_lengths = np.frombuffer(self._index, dtype="<i4", count=count, offset=offset)
        offset += 4 * count
        self.sequence_pointers = np.frombuffer(self._index, dtype="<i8", count=count, offset=offset)
        offset += 8 * count
        self.document_indices = np.frombuffer(self._index, dtype="<i8", count=doc_count, offset=offset)
        self.bin_bytes = data_file.stat().st_size
        self._data = (np.memmap(data_file, dtype=np.uint8, mode="r") if self.bin_bytes
                      else np.zeros(0, np.uint8))

    def __getstate__(self) -> dict:
        """Pickle by prefix: a DataLoader worker reopens the memory maps instead of receiving a copy."""
        return {"prefix": str(self.prefix)}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["prefix"])

    def __len__(self) -> int:
        return self.sequence_lengths.size

    @property
    def tokens(self) -> np.ndarray:
        """Every token of the `.bin` as one flat array in the dataset's dtype (a view, nothing is read)."""
        return np.frombuffer(self._data, dtype=self.dtype, count=self.bin_bytes // self.dtype.itemsize)

    @property
    def document_count(self) -> int:
        """Documents, which is one less than the document indices."""
        return max(self.document_indices.size - 1, 0)

    @property
    def num_tokens(self) -> int:
        return int(self.sequence_lengths.sum(dtype=np.int64))

    def get(self, i: int, offset: int = 0, length: int | None = None) -> np.ndarray:
        """Tokens `offset : offset + length` of sequence i (to its end when length is None)."""
        if not -len(self) <= i < len(self):
            raise IndexError(f"sequence {i} out of range for {len(self)} sequences")
        i %= len(self)
        size = int(self.sequence_lengths[i])
        length = size - offset if length is None else length
        if offset < 0 or length < 0 or offset + length > size:
            raise IndexError(f"tokens [{offset}, {offset + length}) outside sequence {i} of length {size}")
        start = int(self.sequence_pointers[i]) + offset * self.dtype.itemsize
        end = start + length * self.dtype.itemsize
        if start < 0 or end > self.bin_bytes:
            raise IndexFormatError(f"{bin_path(self.prefix)}: sequence {i} points at bytes [{start}, {end}), outside "
                                   f"the file's {self.bin_bytes}; fix: the .bin/.idx pair is damaged or from two runs: "
                                   f"python -m helpers.check {self.prefix} says which, then re-run the preprocessing")
        return np.frombuffer(self._data, dtype=self.dtype, count=length, offset=start)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.get(j) for j in range(*i.indices(len(self)))]
        return self.get(int(i))

    def document(self, d: int) -> np.ndarray:
        """All tokens of document d (its sequences joined)."""
        start, end = int(self.document_indices[d]), int(self.document_indices[d + 1])
        parts = [self.get(j) for j in range(start, end)]
        return np.concatenate(parts) if parts else np.zeros(0, self.dtype)

    def __repr__(self) -> str:
        return (f"IndexedDataset({str(self.prefix)!r}: {len(self):,} sequences, {self.document_count:,} documents, "
                f"{self.num_tokens:,} tokens, {self.dtype})")


FINGERPRINT_ENDS = {".idx": 1 << 20, ".bin": 64 << 10}  # bytes hashed at each end of each file
FINGERPRINT_PROBES, FINGERPRINT_PROBE_BYTES = 16, 4 << 10  # evenly spaced blocks hashed between the ends


def fingerprint(prefix: str | os.PathLike) -> str:
    """A short digest that tells datasets apart without reading them whole (at most about 2.3 MiB, whatever
    their size): each file's size, its first and last bytes (the `.idx` header and the ends of its arrays,
    the first and last tokens) and a few blocks spread between them.

    The modification time is left out on purpose: a copy (`cp`, `rsync`, data moved to another node)
    changes it but not the data, and an index cache or a loader's resume state must survive the copy.
    A rewrite of the same size is seen when it changes a sampled byte, as re-tokenizing does."""
    digest = hashlib.sha256()
    for path in (bin_path(prefix), idx_path(prefix)):
        size = path.stat().st_size
        digest.update(f"{path.suffix}:{size};".encode())
        with open(path, "rb") as handle:
            for offset, length in _sampled_blocks(size, FINGERPRINT_ENDS[path.suffix]):
                handle.seek(offset)
                digest.update(handle.read(length))
    return digest.hexdigest()[:16]


def _sampled_blocks(size: int, ends: int) -> list[tuple[int, int]]:
    """(offset, length) of the blocks `fingerprint` hashes in a file of `size` bytes: all of a small one."""
    if size <= 2 * ends + FINGERPRINT_PROBES * FINGERPRINT_PROBE_BYTES:
        return [(0, size)]
    probes = np.linspace(ends, size - ends - FINGERPRINT_PROBE_BYTES, FINGERPRINT_PROBES, dtype=np.int64)
    return [(0, ends), *((int(p), FINGERPRINT_PROBE_BYTES) for p in probes), (size - ends, ends)]


def merge(prefixes: Sequence[str | os.PathLike], output_prefix: str | os.PathLike) -> Path:
    """Concatenate datasets (same dtype) into one, documents in the order given."""
    if not prefixes:
        raise UserError("nothing to merge; fix: name at least one dataset prefix")
    dtype = IndexedDataset(prefixes[0]).dtype
    with IndexedWriter(output_prefix, dtype) as writer:
        for prefix in prefixes:
            writer.append_dataset(prefix)
        return writer.finalize()
