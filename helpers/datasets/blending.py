"""Blending several datasets by weight, as megatron-core's `BlendedMegatronDatasetBuilder` does.

    train, valid, test = build_datasets(["0.5", "data/megatron/literature_text_document",
                                         "0.3", "data/megatron/docs_text_document",
                                         "0.2", "data/megatron/code_text_document"],
                                        split="969,30,1", num_samples=(10_000, 300, 10), seq_length=512, seed=1234)

- weights are normalised by their sum; each dataset is asked for `ceil(ceil(size x w) x 1.005)`
  samples of each split (Megatron's 0.5% surplus), so a small dataset at a large weight is
  repeated for several epochs;
- the blending index chooses, at step i, the dataset with the largest `w x max(i, 1) - count`
  (ties: the lowest index), so the mix tracks the weights at every step, deterministically
  (`helpers.datasets.greedy`);
- a list of prefixes without weights blends by dataset size and draws every sample once.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..common.compiled import BATCH_TOKENS, compiled_pays
from ..common.errors import DataNotFoundError, UserError
from ..common.yaml_file import read_yaml
from .batch_memory import BATCH_BLOCKS
from .gpt_dataset import SPLITS, GPTDataset, GPTDatasetConfig, split_bookends, split_span
from .greedy import NO_LIMIT, greedy_blend
from .indexed import MAKE_PREFIX, IndexedDataset, idx_path
from .layout import from_windows

SURPLUS = 0.005


@dataclass(frozen=True)
class Blend:
    prefixes: list[str]
    weights: list[float] | None  # None: blend by size, every sample once


def _number(text: str) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def parse_data_path(items: list[str] | str) -> Blend:
    """Megatron's `--data-path`: `[w1, prefix1, w2, prefix2, ...]` or `[prefix1, prefix2, ...]`."""
    if isinstance(items, str):
        items = items.split()
    items = [str(x) for x in items]
    if not items:
        raise UserError("--data-path is empty; fix: name at least one dataset prefix")
    numbers = [_number(x) for x in items]
    if all(n is None for n in numbers):
        blend = Blend(items, None)
    elif len(items) % 2:
        raise UserError(f"--data-path has {len(items)} items with numbers among them; fix: give pairs "
                        "'WEIGHT PREFIX', or prefixes only")
    else:
        weights, prefixes = numbers[0::2], items[1::2]
        for position, (weight, text) in enumerate(zip(weights, items[0::2])):
            if weight is None:
                raise UserError(f"--data-path item {2 * position + 1} ('{text}') should be a weight; "
                                "fix: write 'WEIGHT PREFIX' pairs")
        for prefix in prefixes:
            if _number(prefix) is not None:
                raise UserError(f"--data-path has the number {prefix} where a prefix belongs; fix: 'WEIGHT PREFIX' pairs")
        if any(w < 0 or not math.isfinite(w) for w in weights):
            raise UserError(f"--data-path weights must be non-negative, got {weights}; "
                            "fix: give each prefix a weight of 0 or more")
        if sum(weights) <= 0:
            raise UserError(f"--data-path weights sum to {sum(weights)}; fix: give at least one positive weight")
        blend = Blend(prefixes, normalize(weights))
    for prefix in blend.prefixes:
        if not idx_path(prefix).exists():
            raise DataNotFoundError(f"dataset prefix {prefix}: {idx_path(prefix)} not found; fix: {MAKE_PREFIX}")
    return blend


def normalize(weights: list[float]) -> list[float]:
    """Weights divided by their sum, in float64 as Megatron does."""
    w = np.array(weights, dtype=np.float64)
    return (w / np.sum(w)).tolist()


def load_blend_file(path: str | os.PathLike) -> dict[str, Blend | None]:
    """A per-split blend file (YAML or JSON): `train:`, `valid:`, `test:`, each a `--data-path` list
    or a mapping of prefix to weight. A missing split gets no dataset."""
    path = Path(path)
    content = read_yaml(path, "blend file", "'train: [0.7, prefix_a, 0.3, prefix_b]'")
    if not isinstance(content, dict) or not set(content) <= set(SPLITS):
        raise UserError(f"{path}: a blend file maps train/valid/test to blends; found {content!r:.80}; "
                        "fix: write e.g. 'train: [0.7, PREFIX_A, 0.3, PREFIX_B]'")
    blends: dict[str, Blend | None] = {}
    for split in SPLITS:
        value = content.get(split)
        if value is None:
            blends[split] = None
        elif isinstance(value, dict):
            blends[split] = parse_data_path([x for prefix, w in value.items() for x in (str(w), str(prefix))])
        elif isinstance(value, list):
            blends[split] = parse_data_path([str(x) for x in value])
        else:
            raise UserError(f"{path}: split '{split}' must be a list or a mapping, got {type(value).__name__}; "
                            "fix: write a list such as [0.5, PREFIX]")
    return blends


def blending_indices(weights: list[float], size: int) -> tuple[np.ndarray, np.ndarray]:
    """(dataset of each sample, sample number within that dataset) for `size` samples.

    `weights` are used as given (normalise them first): ties are decided by their exact float
    values. The rule is `helpers.datasets.greedy`'s, no dataset limited.
    """
    weights = np.asarray(weights, dtype=np.float64)
    return greedy_blend(weights, limits=np.full(weights.size, NO_LIMIT), size=int(size))


def exhaustive_blending_indices(sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Every sample of every dataset exactly once, interleaved by the same rule, each dataset limited to its size."""
    sizes = np.asarray(sizes, dtype=np.int64)
    return greedy_blend(np.asarray(normalize(sizes)), limits=sizes, size=int(sizes.sum()))


def sizes_per_dataset(weights: list[float], target: int, surplus: float = 0.0) -> list[int]:
    """Samples to ask of each dataset for a blend of `target` samples: ceil(ceil(target x w) x (1 + surplus))."""
    return [int(math.ceil(math.ceil(target * w) * (1 + surplus))) for w in weights]


class BlendedDataset(torch.utils.data.Dataset):
    """Samples drawn from several datasets in the order of the blending index."""

    def __init__(self, datasets: list, weights: list[float] | None, size: int | None):
        self.datasets = datasets
        if size is None:
            self.weights = [len(d) for d in datasets]
            self.dataset_index, self.dataset_sample_index = exhaustive_blending_indices(self.weights)
        else:
            self.weights = normalize(weights)
            self.dataset_index, self.dataset_sample_index = blending_indices(self.weights, size)
        for k, dataset in enumerate(datasets):
            wanted = int((self.dataset_index == k).sum())
            if wanted > len(dataset):
                raise UserError(f"the blend asks {wanted} samples of dataset {k} which has {len(dataset)}; "
                                "fix: raise the surplus or lower the weight")

    def __len__(self) -> int:
        return self.dataset_index.size

    def __getitem__(self, i: int) -> dict:
        k = int(self.dataset_index[i])
        return {"dataset_id": k, **self.datasets[k][int(self.dataset_sample_index[i])]}

    @property
    def config(self) -> GPTDatasetConfig:
        return self.datasets[0].config

    @property
    def token_dtype(self) -> np.dtype:
        """One dtype that holds every source's tokens."""
        return np.result_type(*(d.token_dtype for d in self.datasets))

    def windows(self, sample_ids, dtype=np.int64) -> np.ndarray:
        """`[n, seq_length + 1]` token windows (int64 unless `dtype` says) of blend samples `sample_ids`,
        gathered per source dataset."""
        sample_ids = np.asarray(sample_ids, dtype=np.int64)
        sources, within = self.dataset_index[sample_ids], self.dataset_sample_index[sample_ids]
        out = BATCH_BLOCKS.block((sample_ids.size, self.config.seq_length + 1), dtype)
        compiled = compiled_pays(out.size, BATCH_TOKENS)  # as the whole batch's size says, not each dataset's share
        for k in np.unique(sources):
            chosen = sources == k
            out[chosen] = self.datasets[int(k)].windows(within[chosen], dtype, compiled)
        return out

    def batch(self, sample_ids) -> dict:
        """Samples `sample_ids` as one batch in the layout of `helpers.datasets.layout`."""
        c = self.config
        return from_windows(self.windows(sample_ids), c.eod_id, c.reset_position_ids, c.eod_mask_loss)

    def mix(self, batch_size: int = 1, steps: int | None = None) -> dict[str, np.ndarray]:
        """Token share per source as training goes; see `mix_over_steps`."""
        return mix_over_steps(self.dataset_index, len(self.datasets), batch_size, steps)


def mix_over_steps(dataset_index: np.ndarray, sources: int, batch_size: int = 1,
                   steps: int | None = None) -> dict[str, np.ndarray]:
    """Share of each source per step (a step = `batch_size` consecutive samples) and cumulatively.

    Every sample has the same number of tokens, so sample shares are token shares. Returns
    `per_step` and `cumulative`, both [steps, sources].
    """
    steps = dataset_index.size // batch_size if steps is None else min(steps, dataset_index.size // batch_size)
    index = np.asarray(dataset_index[: steps * batch_size]).reshape(steps, batch_size)
    counts = np.stack([(index == k).sum(axis=1) for k in range(sources)], axis=1)
    cumulative = np.cumsum(counts, axis=0) / (batch_size * np.arange(1, steps + 1))[:, None]
    return {"per_step": counts / batch_size, "cumulative": cumulative}


def _split_dataset(prefix: str, split: str | None, split_name: str, *, size: int | None,
                   config: GPTDatasetConfig) -> GPTDataset:
    """The GPTDataset of one split of one prefix; with no split string, the whole prefix (per-split blends)."""
    indexed = IndexedDataset(prefix)
    span = split_span(split, split_name, len(indexed)) if split is not None else (0, len(indexed))
    return GPTDataset(prefix, span, size, config, split_name=split_name, dataset=indexed)


def _blend_split(blend: Blend, split: str | None, split_name: str, *, size: int | None, config: GPTDatasetConfig):
    """One split's dataset from a blend (a GPTDataset for one prefix, else a BlendedDataset)."""
    # Megatron: one prefix is a plain GPTDataset (per-split blends: whatever its weight)
    if len(blend.prefixes) == 1 and (blend.weights is None or split is None):
        return _split_dataset(blend.prefixes[0], split, split_name, size=size, config=config)
    if blend.weights is not None:
        if size is None:
            raise UserError("a weighted blend needs a sample count for each split it builds; fix: pass num_samples")
        targets = sizes_per_dataset(blend.weights, size)
        buffers = sizes_per_dataset(blend.weights, size, SURPLUS)
    else:
        targets, buffers = None, [None] * len(blend.prefixes)
    parts = [_split_dataset(prefix, split, split_name, size=buffer, config=config)
             for prefix, buffer in zip(blend.prefixes, buffers)]
    if blend.weights is not None:
        return BlendedDataset(parts, blend.weights, sum(targets))
    lengths = [len(p) for p in parts]
    if size is not None:
        return BlendedDataset(parts, lengths, min(size, sum(lengths)))
    return BlendedDataset(parts, None, None)


def build_split(data_path: list[str] | Blend, split: str, split_name: str, num_samples: int | None,
                config: GPTDatasetConfig):
    """The dataset of one split (`train`, `valid` or `test`) of a `--data-path` blend, and nothing else."""
    if split_name not in SPLITS:
        raise UserError(f"split name '{split_name}' is not one of {', '.join(SPLITS)}; fix: use one of those")
    blend = data_path if isinstance(data_path, Blend) else parse_data_path(data_path)
    if split_bookends(split)[SPLITS.index(split_name)] is None:
        raise UserError(f"--split {split} gives the {split_name} split no share; fix: give it a positive share")
    return _blend_split(blend, split, split_name, size=num_samples, config=config)


def build_datasets(data_path: list[str] | Blend | None, split: str | None, num_samples, seq_length: int, seed: int,
                   blend_per_split: dict[str, Blend | None] | None = None, eod_id: int | None = None,
                   cache_dir: str | os.PathLike | None = None, **document_options):
    """(train, valid, test) as megatron-core's BlendedMegatronDatasetBuilder with GPTDataset builds them.

    `num_samples` is a 3-tuple (None: one pass over that split); a split whose share is 0 is None.
    Either `data_path` with `split`, or `blend_per_split` (each split its own blend, no split string).
    `document_options`: `reset_position_ids`, `eod_mask_loss` (see `GPTDatasetConfig`).
    """
    if len(num_samples) != 3:
        raise UserError(f"num_samples must give train, valid and test counts, got {num_samples!r}; "
                        "fix: pass three numbers, e.g. [1000, 100, 10]")
    config = GPTDatasetConfig(seq_length, seed, eod_id, cache_dir=None if cache_dir is None else str(cache_dir),
                              **document_options)
    if blend_per_split is not None:
        return tuple(None if blend_per_split.get(name) is None else
                     _blend_split(blend_per_split[name], None, name, size=num_samples[i], config=config)
                     for i, name in enumerate(SPLITS))
    blend = data_path if isinstance(data_path, Blend) else parse_data_path(data_path)
    bookends = split_bookends(split)
    return tuple(None if bookends[i] is None else _blend_split(blend, split, name, size=num_samples[i], config=config)
                 for i, name in enumerate(SPLITS))
