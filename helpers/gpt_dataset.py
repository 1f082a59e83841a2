"""The GPT sample view of an indexed dataset, built exactly as megatron-core's `GPTDataset` builds it.

Three indices, from one `numpy.random.RandomState(seed)` in Megatron's order:

- **document index**: the split's sequence ids, tiled once per epoch and shuffled (int32); when the
  last epoch contributes fewer than 80% of an epoch's samples it is shuffled on its own, so that a
  partial epoch does not bias which documents are seen;
- **sample index** `[n+1, 2]`: where sample k starts, as (position in the document index, token
  offset). Samples are `seq_length + 1` tokens, overlap by one token, and cross document boundaries:
  sample k starts at token `k x seq_length` of the concatenated stream, found here with one
  `searchsorted` instead of a loop;
- **shuffle index**: a permutation of the samples (the last partial epoch, again, on its own).

Indices are cached on disk under a name that hashes the parameters *and* the data files' size,
modification time and index bytes, so a changed dataset never reuses stale indices.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .errors import UserError
from .indexed import IndexedDataset, bin_path, idx_path

SPLITS = ("train", "valid", "test")
SEPARATE_FINAL_EPOCH_THRESHOLD = 0.80


def parse_split(split: str) -> list[float]:
    """'969,30,1' → normalised weights for train, valid, test (missing ones are 0)."""
    values = [float(v) for v in re.findall(r"[.0-9]+", split)]
    if not values or len(values) > 3 or sum(values) <= 0:
        raise UserError(f"split '{split}' must be up to three non-negative numbers with a positive sum, e.g. 969,30,1")
    values += [0.0] * (3 - len(values))
    total = float(np.sum(np.array(values, dtype=np.float64)))
    return (np.array(values, dtype=np.float64) / total).tolist()


def split_bookends(split: str) -> list[tuple[float, float] | None]:
    """Cumulative (start, end) fractions per split, None for a split with no share."""
    weights = parse_split(split)
    edges = [0.0]
    for w in weights:
        edges.append(edges[-1] + w)
    return [None if end <= start else (start, end) for start, end in zip(edges[:-1], edges[1:])]


def split_ranges(split: str, num_sequences: int) -> list[tuple[int, int] | None]:
    """Sequence ranges [begin, end) of each split, with Python's `round` as Megatron uses."""
    return [None if b is None else (int(round(b[0] * float(num_sequences))), int(round(b[1] * float(num_sequences))))
            for b in split_bookends(split)]


def number_of_epochs(tokens_per_epoch: int, num_samples: int | None, seq_length: int) -> int:
    """Smallest E with E x tokens_per_epoch >= num_samples x seq_length + 1 (1 when num_samples is None)."""
    if num_samples is None:
        return 1
    needed = num_samples * seq_length + 1
    return max(1, -(-needed // tokens_per_epoch))


def build_document_index(documents: np.ndarray, epochs: int, rng: np.random.RandomState,
                         separate_final_epoch: bool) -> np.ndarray:
    """Document ids tiled per epoch and shuffled, as int32; the final epoch apart when asked."""
    if not separate_final_epoch or epochs == 1:
        index = np.tile(documents, epochs).astype(np.int32)
        rng.shuffle(index)
        return index
    first = build_document_index(documents, epochs - 1, rng, False)
    last = build_document_index(documents, 1, rng, False)
    return np.concatenate([first, last])


def build_sample_index(sequence_lengths: np.ndarray, document_index: np.ndarray, seq_length: int,
                       num_samples: int) -> np.ndarray:
    """[num_samples + 1, 2]: (position in the document index, offset) where each sample starts."""
    lengths = sequence_lengths[document_index].astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    positions = np.arange(num_samples + 1, dtype=np.int64) * seq_length
    doc = np.searchsorted(starts, positions, side="right") - 1
    doc = np.minimum(doc, document_index.size - 1)
    offsets = positions - starts[doc]
    return np.stack([doc, offsets], axis=1)


def build_shuffle_index(num_samples: int, total: int, rng: np.random.RandomState) -> np.ndarray:
    """A permutation of [0, num_samples), then of [num_samples, total) on its own."""
    dtype = np.int64 if total >= np.iinfo(np.uint32).max - 1 else np.uint32
    first = np.arange(num_samples, dtype=dtype)
    rng.shuffle(first)
    if num_samples == total:
        return first
    last = np.arange(num_samples, total, dtype=dtype)
    rng.shuffle(last)
    return np.concatenate([first, last])


def _files_fingerprint(prefix: Path) -> str:
    """Size and modification time of the .bin and .idx, and a hash of the .idx bytes."""
    parts = []
    for path in (bin_path(prefix), idx_path(prefix)):
        stat = path.stat()
        parts.append(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}")
    parts.append(hashlib.sha256(idx_path(prefix).read_bytes()).hexdigest())
    return "|".join(parts)


@dataclass(frozen=True)
class SampleIndices:
    document_index: np.ndarray
    sample_index: np.ndarray
    shuffle_index: np.ndarray
    epochs: int
    tokens_per_epoch: int


class GPTDataset(torch.utils.data.Dataset):
    """Samples of `seq_length + 1` tokens from one split of an indexed dataset, as megatron-core makes them.

    `ds[i]` → dict of tensors: `tokens`, `labels` (tokens shifted by one), `loss_mask`, `position_ids`;
    with `reset_position_ids`, positions restart after each EOD; with `eod_mask_loss`, the loss
    ignores positions whose input is EOD; with `reset_attention_mask`, `attention_mask` (True = masked)
    stops attention at document boundaries.
    """

    def __init__(self, prefix: str | os.PathLike, split_range: tuple[int, int], num_samples: int | None,
                 seq_length: int, seed: int, split_name: str = "train", eod_id: int | None = None,
                 reset_position_ids: bool = False, reset_attention_mask: bool = False, eod_mask_loss: bool = False,
                 cache_dir: str | os.PathLike | None = None, dataset: IndexedDataset | None = None):
        self.prefix = Path(prefix)
        self.dataset = dataset or IndexedDataset(prefix)
        self.split_name, self.split_range = split_name, split_range
        self.seq_length, self.seed, self.num_samples_requested = seq_length, seed, num_samples
        self.eod_id = eod_id
        self.reset_position_ids, self.reset_attention_mask, self.eod_mask_loss = \
            reset_position_ids, reset_attention_mask, eod_mask_loss
        if (reset_position_ids or reset_attention_mask or eod_mask_loss) and eod_id is None:
            raise UserError("document-aware samples need the EOD id; fix: pass eod_id")
        begin, end = split_range
        self.documents = np.arange(begin, end, dtype=np.int32)
        tokens = int(self.dataset.sequence_lengths[begin:end].sum(dtype=np.int64))
        if tokens <= 1 and (num_samples is None or num_samples > 0):
            raise UserError(f"{self.prefix}: the {split_name} split gets sequences [{begin}, {end}) holding "
                            f"{tokens} tokens, but samples are asked of it ({num_samples or 'one epoch'}); "
                            "fix: give it a larger share in --split or ask for no samples")
        indices = self._load_or_build(tokens, cache_dir)
        self.document_index, self.sample_index, self.shuffle_index = \
            indices.document_index, indices.sample_index, indices.shuffle_index
        self.epochs, self.tokens_per_epoch = indices.epochs, indices.tokens_per_epoch

    # ------------------------------------------------------------ index building

    def description(self) -> dict:
        return {"class": "GPTDataset", "prefix": str(self.prefix.resolve()), "split": self.split_name,
                "range": list(self.split_range), "num_samples": self.num_samples_requested,
                "seq_length": self.seq_length, "seed": self.seed, "files": _files_fingerprint(self.prefix)}

    def _build(self, tokens_per_epoch: int) -> SampleIndices:
        epochs = number_of_epochs(tokens_per_epoch, self.num_samples_requested, self.seq_length)
        separate = False
        if epochs > 1:
            before_final = ((epochs - 1) * tokens_per_epoch - 1) // self.seq_length
            from_final = self.num_samples_requested - before_final
            per_epoch = (tokens_per_epoch - 1) // self.seq_length
            separate = from_final < int(SEPARATE_FINAL_EPOCH_THRESHOLD * per_epoch)
        rng = np.random.RandomState(self.seed)
        document_index = build_document_index(self.documents, epochs, rng, separate)
        num_samples = (epochs * tokens_per_epoch - 1) // self.seq_length
        sample_index = build_sample_index(self.dataset.sequence_lengths, document_index, self.seq_length, num_samples)
        first = before_final if separate else num_samples
        shuffle_index = build_shuffle_index(first, num_samples, rng)
        return SampleIndices(document_index, sample_index, shuffle_index, epochs, tokens_per_epoch)

    def _load_or_build(self, tokens_per_epoch: int, cache_dir) -> SampleIndices:
        if cache_dir is None:
            return self._build(tokens_per_epoch)
        description = json.dumps(self.description(), sort_keys=True)
        key = hashlib.sha256(description.encode()).hexdigest()[:16]
        folder = Path(cache_dir) / f"gpt-{self.split_name}-{key}"
        names = ("document_index", "sample_index", "shuffle_index")
        if (folder / "description.json").exists():
            meta = json.loads((folder / "description.json").read_text())
            arrays = [np.load(folder / f"{n}.npy", mmap_mode="r") for n in names]
            return SampleIndices(*arrays, meta["epochs"], meta["tokens_per_epoch"])
        indices = self._build(tokens_per_epoch)
        tmp = folder.with_name(folder.name + f".tmp-{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        for name in names:
            np.save(tmp / f"{name}.npy", getattr(indices, name))
        (tmp / "description.json").write_text(json.dumps(
            {**json.loads(description), "epochs": indices.epochs, "tokens_per_epoch": tokens_per_epoch}, indent=2))
        try:
            os.replace(tmp, folder)
        except OSError:  # another process finished first: use its files
            for path in tmp.iterdir():
                path.unlink()
            tmp.rmdir()
        return indices

    # ------------------------------------------------------------ samples

    def __len__(self) -> int:
        return self.sample_index.shape[0] - 1

    def sample_tokens(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """The `seq_length + 1` token ids of sample i (after shuffling), and the documents they come from."""
        j = int(self.shuffle_index[i])
        (first, offset), (last, end_offset) = self.sample_index[j], self.sample_index[j + 1]
        parts, documents = [], []
        for position in range(int(first), int(last) + 1):
            sequence = int(self.document_index[position])
            start = int(offset) if position == first else 0
            stop = int(end_offset) + 1 if position == last else int(self.dataset.sequence_lengths[sequence])
            parts.append(self.dataset.get(sequence, start, stop - start))
            documents.append(sequence)
        return np.concatenate(parts).astype(np.int64), np.array(documents, dtype=np.int64)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        if not -len(self) <= i < len(self):
            raise IndexError(f"sample {i} out of range for {len(self)} samples")
        text, _ = self.sample_tokens(i % len(self))
        text = torch.from_numpy(text)
        tokens, labels = text[:-1].contiguous(), text[1:].contiguous()
        item = {"tokens": tokens, "labels": labels}
        item.update(document_masks(tokens, self.eod_id, self.reset_position_ids, self.reset_attention_mask,
                                   self.eod_mask_loss))
        return item


def document_masks(tokens: torch.Tensor, eod_id: int | None, reset_position_ids: bool = False,
                   reset_attention_mask: bool = False, eod_mask_loss: bool = False) -> dict[str, torch.Tensor]:
    """loss_mask, position_ids and (when asked) a causal attention mask that stops at EOD boundaries.

    The attention mask is boolean with True meaning *masked*, as megatron-core returns it.
    """
    n = tokens.numel()
    loss_mask = torch.ones(n, dtype=torch.float)
    if eod_mask_loss:
        loss_mask[tokens == eod_id] = 0.0
    position_ids = torch.arange(n, dtype=torch.long)
    # document number of each position: it increases right after each EOD
    is_eod = (tokens == eod_id) if eod_id is not None else torch.zeros(n, dtype=torch.bool)
    document = torch.cumsum(torch.cat([torch.zeros(1, dtype=torch.long), is_eod[:-1].long()]), 0)
    if reset_position_ids:
        starts = torch.nonzero(torch.cat([torch.ones(1, dtype=torch.bool), is_eod[:-1]])).flatten()
        position_ids = position_ids - starts[document]
    out = {"loss_mask": loss_mask, "position_ids": position_ids}
    if reset_attention_mask:
        causal = torch.tril(torch.ones(n, n, dtype=torch.bool))
        same_document = document[:, None] == document[None, :]
        out["attention_mask"] = ~(causal & same_document).unsqueeze(0)
    return out
