"""Every setting of a loader, written once: its name, its default and what it means (`LoaderSettings`).

`make_dataloader` builds one object from its keywords (or takes one whole) and hands it, whole, to what runs it:
the source that cuts the data into samples (`helpers.loading.sources`) and the iterable that hands out batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..common.paths import CACHE_DIR


@dataclass(frozen=True, kw_only=True)
class LoaderSettings:
    """What to read, how to cut it into samples and how to hand them out (see `make_dataloader`)."""

    data_path: Any = None  # Megatron prefixes, a weighted blend (["0.7", P1, "0.3", P2]), a .npy or a shard folder
    split: str = "969,30,1"  # Megatron's --split: the train, valid and test shares of each dataset's documents
    split_name: str = "train"  # the split read: train, valid or test
    seq_length: int = 1024  # tokens in a sample's model input
    batch_size: int = 8  # samples in each rank's batch
    seed: int = 1234  # seed of every shuffle
    num_samples: int | None = None  # samples of the whole run, all ranks, Megatron's meaning; None: one epoch
    num_workers: int = 0  # DataLoader worker processes; 0: batches made in this process
    rank: int | None = None  # this process's rank; None: torch.distributed's when it runs, else 0
    world_size: int | None = None  # ranks that share each global batch; None: torch.distributed's, else 1
    source: str = "real"  # or "synthetic" (random tokens), asked for by name only
    vocab_size: int | None = None  # synthetic data's range of ids
    packing: str | None = None  # a packing strategy (e.g. "best_fit_decreasing"): rows of whole documents
    tokenizer: str | None = None  # the data's tokenizer, where no sidecar names one
    eod_id: int | None = None  # the end-of-document id; None: the data's sidecar's
    reset_position_ids: bool = False  # positions start again after each end of document
    eod_mask_loss: bool = False  # no loss on end-of-document tokens
    cache_dir: Any = CACHE_DIR  # where the sample indices are kept between runs; None: built in memory each time
    pin_memory: bool | None = None  # batches in pinned memory for the GPU's copies; None: where CUDA is available
    prefetch_factor: int | None = 4  # batches each worker makes ahead
    schedule: Any = None  # [(step, weights), ...] over the prefixes of data_path (helpers.loading.schedule)
    samples_per_step: int | None = None  # samples a schedule's step counts; None: this run's global batch

    @property
    def global_batch(self) -> int:
        """Samples of one step over all ranks (the world size decided, as `make_dataloader` does)."""
        return self.batch_size * self.world_size

    @property
    def step_samples(self) -> int:
        """Samples a schedule's step counts: `samples_per_step`, else this run's global batch."""
        return self.samples_per_step or self.global_batch

