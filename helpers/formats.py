"""The two other token layouts the seed scripts used, converted to and from the Megatron indexed form.

- **npy**: one flat array of every token, EOD-separated, for `np.load(path, mmap_mode="r")`, plus a
  JSON sidecar (`PATH.json`) with dtype, counts and the EOD id. A Megatron `.bin` already *is* that
  flat array; the `.npy` is the same bytes behind a 128-byte header.
- **shards**: the same flat stream cut into fixed-size raw binary shards, `train/shard_00000.bin`,
  ..., the last shards in `val/`, described by `dataset_metadata.json`. Good for streaming from
  object storage; the document index is gone (only EOD marks boundaries).
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import numpy as np

from .errors import UserError
from .indexed import IndexedDataset, IndexedWriter, bin_path

METADATA = "dataset_metadata.json"


def _write_json(path: Path, content: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def indexed_to_npy(prefix: str | os.PathLike, out: str | os.PathLike, eod_id: int | None = None) -> Path:
    """Write the dataset's tokens as one `.npy` (the `.bin` bytes behind an npy header) and a sidecar."""
    ds = IndexedDataset(prefix)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    header = {"descr": np.lib.format.dtype_to_descr(ds.dtype), "fortran_order": False, "shape": (ds.num_tokens,)}
    with open(tmp, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, header)
        with open(bin_path(prefix), "rb") as source:
            shutil.copyfileobj(source, handle, length=16 << 20)
    os.replace(tmp, out)
    _write_json(Path(f"{out}.json"), {"format": "npy", "dtype": ds.dtype.name, "tokens": ds.num_tokens,
                                      "documents": ds.document_count, "eod_id": eod_id,
                                      "boundaries": "each document ends with eod_id" if eod_id is not None else "none",
                                      "source": str(prefix)})
    return out


def split_at_eod(tokens: np.ndarray, eod_id: int) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, document lengths) where each document ends with EOD; a tail without EOD is its own document."""
    ends = np.flatnonzero(tokens == eod_id) + 1
    if ends.size == 0 or ends[-1] != tokens.size:
        ends = np.append(ends, tokens.size)
    lengths = np.diff(np.concatenate([[0], ends])) if tokens.size else np.zeros(0, np.int64)
    return tokens, lengths


def npy_to_indexed(npy: str | os.PathLike, prefix: str | os.PathLike, eod_id: int) -> Path:
    """Rebuild an indexed dataset from a flat `.npy`, one document per EOD-terminated run."""
    tokens = np.load(npy, mmap_mode="r")
    with IndexedWriter(prefix, tokens.dtype) as writer:
        writer.add_documents(*split_at_eod(np.asarray(tokens), eod_id))
        return writer.finalize()


def indexed_to_shards(prefix: str | os.PathLike, out_dir: str | os.PathLike, tokens_per_shard: int,
                      val_fraction: float = 0.05, dtype=None, eod_id: int | None = None) -> Path:
    """Cut the token stream into shards of `tokens_per_shard` (the last may be shorter); the last
    `ceil(val_fraction x shards)` shards go to `val/` (none when there is a single shard)."""
    if tokens_per_shard < 1:
        raise UserError(f"tokens per shard must be at least 1, got {tokens_per_shard}")
    if not 0 <= val_fraction < 1:
        raise UserError(f"validation fraction must be in [0, 1), got {val_fraction}")
    ds = IndexedDataset(prefix)
    dtype = np.dtype(dtype or ds.dtype)
    tokens = ds.tokens
    if dtype.kind not in "iu" or (tokens.size and int(tokens.max()) > np.iinfo(dtype).max):
        raise UserError(f"{dtype} cannot hold this dataset's ids; fix: choose uint32 or {ds.dtype}")
    out_dir = Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    count = max(1, math.ceil(tokens.size / tokens_per_shard))
    val = math.ceil(val_fraction * count) if count > 1 else 0
    work = out_dir.with_name(f".{out_dir.name}.tmp")
    shutil.rmtree(work, ignore_errors=True)
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
                                  "tokens_per_shard": tokens_per_shard, "eod_id": eod_id,
                                  "train_shards": count - val, "val_shards": val, "shards": shards,
                                  "source": str(prefix)})
    os.replace(work, out_dir)
    return out_dir


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
    tokens = np.concatenate(parts) if parts else np.zeros(0, dtype)
    with IndexedWriter(prefix, dtype) as writer:
        writer.add_documents(*split_at_eod(tokens.astype(dtype), eod_id))
        return writer.finalize()
