"""The two other token layouts hand-written training scripts used, converted to and from the Megatron
indexed form.

- **npy**: one flat array of every token, EOD-separated, for `np.load(path, mmap_mode="r")`, plus a
  JSON sidecar (`PATH.json`) with dtype, counts and the EOD id. A Megatron `.bin` already *is* that
  flat array; the `.npy` is the same bytes behind a 128-byte header.
- **shards**: the same flat stream cut into fixed-size raw binary shards, `train/shard_00000.bin`,
  ..., the last shards in `val/`, described by `dataset_metadata.json`. Good for streaming from
  object storage; the document index is gone (only EOD marks boundaries).

Both keep only what EOD can say, so a conversion is exact or refused, never lossy: it is refused
(one line: the reason, the first document concerned, the fix) when a document is empty (a stream has no
place for it), holds several sequences, does not end with EOD, or holds an EOD inside it (it would come
back as two documents). What a conversion writes, `npy_to_indexed` and `shards_to_indexed` turn back
into the same `.bin/.idx` bytes, and its sidecar or metadata claims only what is true.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import numpy as np

from ..common.errors import UserError
from ..common.files import temporary_name, write_text_atomically, written_atomically
from .indexed import CODE_OF_DTYPE, IndexedDataset, IndexedWriter, bin_path

METADATA = "dataset_metadata.json"
BOUNDARIES = "each document is one run of tokens ending with eod_id, the only eod_id in it"
CHUNK_TOKENS = 1 << 24  # tokens compared with EOD at a time: memory stays flat on a large dataset


def _write_json(path: Path, content: dict) -> None:
    write_text_atomically(path, json.dumps(content, indent=2) + "\n")


def _count_equal(tokens: np.ndarray, value: int) -> int:
    return sum(int(np.count_nonzero(tokens[i:i + CHUNK_TOKENS] == value)) for i in range(0, tokens.size, CHUNK_TOKENS))


def _first_inner_eod(tokens: np.ndarray, eod_id: int, ends: np.ndarray) -> int:
    """The document holding the first EOD that is not a document's last token."""
    for start in range(0, tokens.size, CHUNK_TOKENS):
        found = start + np.flatnonzero(tokens[start:start + CHUNK_TOKENS] == eod_id)
        inner = found[~np.isin(found, ends)]
        if inner.size:
            return int(np.searchsorted(ends, inner[0]))
    raise AssertionError("no EOD inside a document")


def boundary_problem(ds: IndexedDataset, eod_id: int | None) -> str | None:
    """Why the documents of `ds` would not come back from its flat token stream cut after each EOD
    (the reason, the first document concerned counting from 0, and the fix), or None when they would."""
    if eod_id is None:
        return "no EOD id given, so nothing would mark where a document ends; fix: pass the tokenizer's eod_id"
    per_document = np.diff(ds.document_indices)
    for wrong, reason, fix in (
            (per_document == 0, "empty (a stream has no place for a document without tokens)",
             "drop empty texts before preprocessing, or keep the Megatron format"),
            (per_document > 1, "made of several sequences (a stream keeps one per document)",
             "give each record's text as one string, or keep the Megatron format")):
        bad = np.flatnonzero(wrong)
        if bad.size:
            return f"{bad.size:,} document(s) {reason}, the first is document {bad[0]}; fix: {fix}"
    ends = np.cumsum(ds.sequence_lengths, dtype=np.int64) - 1  # one sequence per document from here on
    tokens = ds.tokens[:ds.num_tokens]
    unended = np.flatnonzero(tokens[ends] != eod_id)
    if unended.size:
        return (f"{unended.size:,} document(s) do not end with EOD {eod_id} (their ends would be lost), the first "
                f"is document {unended[0]}; fix: preprocess with --append-eod")
    inner = _count_equal(tokens, eod_id) - ends.size
    if inner:
        return (f"{inner:,} EOD {eod_id} token(s) inside documents (each would cut its document in two), the first "
                f"in document {_first_inner_eod(tokens, eod_id, ends)}; fix: preprocess without "
                "--parse-special-tokens (the EOD string then stays text), or keep the Megatron format")
    return None


def require_boundaries(ds: IndexedDataset, eod_id: int | None, layout: str, name: str | None = None) -> None:
    """Refuse a conversion to `layout` that would lose documents, in one line naming `name` (or the dataset)."""
    problem = boundary_problem(ds, eod_id)
    if problem:
        raise UserError(f"{name or ds.prefix}: cannot become {layout} without losing documents: {problem}")


def indexed_to_npy(prefix: str | os.PathLike, out: str | os.PathLike, eod_id: int | None,
                   source: str | os.PathLike | None = None) -> Path:
    """Write the dataset's tokens as one `.npy` (the `.bin` bytes behind an npy header) and a sidecar
    naming `source` (what the data was made from; the prefix by default). Refused when the documents
    could not come back (see `boundary_problem`)."""
    ds = IndexedDataset(prefix)
    require_boundaries(ds, eod_id, "one .npy")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    sidecar = Path(f"{out}.json")
    sidecar.unlink(missing_ok=True)  # an old sidecar never describes the new array
    header = {"descr": np.lib.format.dtype_to_descr(ds.dtype), "fortran_order": False, "shape": (ds.num_tokens,)}
    with written_atomically(out, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, header)
        with open(bin_path(prefix), "rb") as data:
            shutil.copyfileobj(data, handle, length=16 << 20)
    _write_json(sidecar, {"format": "npy", "dtype": ds.dtype.name, "tokens": ds.num_tokens,
                          "documents": ds.document_count, "eod_id": eod_id, "boundaries": BOUNDARIES,
                          "source": str(source if source is not None else prefix)})
    return out


def split_at_eod(tokens: np.ndarray, eod_id: int) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, document lengths) where each document ends with EOD; a tail without EOD is its own document."""
    ends = np.flatnonzero(tokens == eod_id) + 1
    if ends.size == 0 or ends[-1] != tokens.size:
        ends = np.append(ends, tokens.size)
    lengths = np.diff(np.concatenate([[0], ends])) if tokens.size else np.zeros(0, np.int64)
    return tokens, lengths


def _check_recorded_eod(eod_id: int, recorded: dict, where: Path) -> None:
    if recorded.get("eod_id") is not None and recorded["eod_id"] != eod_id:
        raise UserError(f"{where}: the data was written with EOD {recorded['eod_id']}, not {eod_id}; "
                        f"fix: pass eod_id={recorded['eod_id']}")


def _megatron_dtype(dtype, where) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in CODE_OF_DTYPE:
        raise UserError(f"{where}: {dtype} has no Megatron dtype code; fix: choose one of "
                        f"{', '.join(sorted(d.name for d in CODE_OF_DTYPE))}")
    return dtype


def npy_to_indexed(npy: str | os.PathLike, prefix: str | os.PathLike, eod_id: int) -> Path:
    """Rebuild an indexed dataset from a flat `.npy`, one document per EOD-terminated run (a tail
    without EOD is a document too)."""
    sidecar = Path(f"{npy}.json")
    if sidecar.exists():
        _check_recorded_eod(eod_id, json.loads(sidecar.read_text(encoding="utf-8")), sidecar)
    tokens = np.load(npy, mmap_mode="r")
    with IndexedWriter(prefix, _megatron_dtype(tokens.dtype, npy)) as writer:
        writer.add_documents(*split_at_eod(np.asarray(tokens), eod_id))
        return writer.finalize()


def indexed_to_shards(prefix: str | os.PathLike, out_dir: str | os.PathLike, tokens_per_shard: int,
                      val_fraction: float = 0.05, dtype=None, eod_id: int | None = None,
                      source: str | os.PathLike | None = None) -> Path:
    """Cut the token stream into shards of `tokens_per_shard` (the last may be shorter); the last
    `ceil(val_fraction x shards)` shards go to `val/` (none when there is a single shard). Refused when
    the documents could not come back (see `boundary_problem`); an old folder at `out_dir` is replaced
    only once the new one is complete. The metadata names `source` (the prefix by default)."""
    if tokens_per_shard < 1:
        raise UserError(f"tokens per shard must be at least 1, got {tokens_per_shard}; "
                        "fix: e.g. --tokens-per-shard 10000000")
    if not 0 <= val_fraction < 1:
        raise UserError(f"validation fraction must be in [0, 1), got {val_fraction}; fix: e.g. --val-fraction 0.05")
    ds = IndexedDataset(prefix)
    dtype = np.dtype(dtype or ds.dtype)
    tokens = ds.tokens[:ds.num_tokens]
    if dtype.kind not in "iu" or (tokens.size and (int(tokens.min()) < np.iinfo(dtype).min
                                                   or int(tokens.max()) > np.iinfo(dtype).max)):
        raise UserError(f"{dtype} cannot hold this dataset's ids; fix: choose uint32 or {ds.dtype}")
    require_boundaries(ds, eod_id, "shards")
    out_dir = Path(out_dir)
    work = temporary_name(out_dir)
    shutil.rmtree(work, ignore_errors=True)
    try:
        _write_shards(work=work, tokens=tokens, dtype=dtype, tokens_per_shard=tokens_per_shard,
                      val_fraction=val_fraction,
                      facts={"eod_id": eod_id, "documents": ds.document_count, "boundaries": BOUNDARIES,
                       "source": str(source if source is not None else prefix)})
        _swap_in(work, out_dir)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return out_dir


def _write_shards(work: Path, tokens: np.ndarray, dtype: np.dtype, tokens_per_shard: int, val_fraction: float,
                  facts: dict) -> None:
    """The shard files and their metadata, in the folder `work`."""
    count = max(1, math.ceil(tokens.size / tokens_per_shard))
    val = math.ceil(val_fraction * count) if count > 1 else 0
    for split in ("train", "val"):
        (work / split).mkdir(parents=True)
    shards = []
    for i in range(count):
        split = "val" if i >= count - val else "train"
        piece = tokens[i * tokens_per_shard:(i + 1) * tokens_per_shard].astype(dtype)
        name = f"{split}/shard_{i:05d}.bin"
        piece.tofile(work / name)
        shards.append({"file": name, "tokens": int(piece.size)})
    _write_json(work / METADATA, {"format": "shards", "dtype": dtype.name, "tokens": int(tokens.size),
                                  "tokens_per_shard": tokens_per_shard, "train_shards": count - val,
                                  "val_shards": val, "shards": shards, **facts})


def _swap_in(work: Path, out_dir: Path) -> None:
    """Put the finished folder `work` at `out_dir`; an old folder there is removed only once the new one
    has taken its place (a crash in between leaves it under a hidden `.old` name, never half of either)."""
    old = temporary_name(out_dir, "old")
    if out_dir.exists():
        os.replace(out_dir, old)
    os.replace(work, out_dir)
    shutil.rmtree(old, ignore_errors=True)


def read_shards(out_dir: str | os.PathLike, split: str | None = None) -> list[np.ndarray]:
    """Memory-map the shards (of one split, or all in order)."""
    out_dir = Path(out_dir)
    meta_path = out_dir / METADATA
    if not meta_path.exists():
        raise UserError(f"{meta_path}: no such file; fix: point at a folder written by indexed_to_shards")
    meta = json.loads(meta_path.read_text())
    return [np.memmap(out_dir / s["file"], dtype=meta["dtype"], mode="r") if s["tokens"] else np.zeros(0, meta["dtype"])
            for s in meta["shards"] if split is None or s["file"].startswith(split + "/")]


def shards_to_indexed(out_dir: str | os.PathLike, prefix: str | os.PathLike, eod_id: int, dtype) -> Path:
    """Rebuild an indexed dataset from shards (all of them, in order), one document per EOD run."""
    parts = read_shards(out_dir)
    _check_recorded_eod(eod_id, json.loads((Path(out_dir) / METADATA).read_text()), Path(out_dir) / METADATA)
    tokens = np.concatenate(parts) if parts else np.zeros(0, dtype)
    with IndexedWriter(prefix, _megatron_dtype(dtype, out_dir)) as writer:
        writer.add_documents(*split_at_eod(tokens, eod_id))  # ids the dtype cannot hold are refused, not wrapped
        return writer.finalize()
