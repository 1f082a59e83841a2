"""One dataset's GPT samples in its own order, epoch after epoch, whatever the blend asks of it.

Epoch 0 is megatron-core's `GPTDataset` order for one epoch of the split (its documents shuffled by
`RandomState(seed)`, cut into samples of `seq_length + 1` tokens, the samples shuffled), which does not depend
on how many samples a blend asks for as long as they fit in one epoch. Each later epoch e is the same
construction with its own seed, `SeedSequence([seed, e])`'s first word: shuffled on its own, so a dataset's
order never depends on the weights. megatron-core instead tiles all the epochs it was asked for and shuffles
them together, which makes its order beyond the first epoch depend on the sample count (and so on the
weights); here each epoch holds every document once, and the last `< seq_length` tokens of an epoch's
stream, which megatron-core carries into the next epoch, are left out.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace

import numpy as np

from ..datasets.batch_memory import BATCH_BLOCKS
from ..datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
from ..datasets.indexed import IndexedDataset

EPOCHS_KEPT = 4  # epochs whose indices stay in memory (the cursors of a run touch one or two at a time)


def epoch_seed(seed: int, epoch: int) -> int:
    """The shuffle seed of `epoch` (0: `seed` itself, megatron-core's)."""
    return seed if epoch == 0 else int(np.random.SeedSequence([seed, epoch]).generate_state(1)[0])


class EpochOrder:
    """Samples 0, 1, 2, ... of one split of one prefix: sample j is sample `j % per_epoch` of epoch
    `j // per_epoch`."""

    def __init__(self, indexed: IndexedDataset, span: tuple[int, int], config: GPTDatasetConfig,
                 split_name: str = "train"):
        self.indexed, self.span, self.config, self.split_name = indexed, span, config, split_name
        self._epochs: OrderedDict[int, GPTDataset] = OrderedDict()
        self.per_epoch = len(self.epoch(0))

    def epoch(self, e: int) -> GPTDataset:
        """The GPTDataset of epoch `e` (built on first use; the least recently used beyond EPOCHS_KEPT dropped)."""
        if self._epochs and next(reversed(self._epochs)) == e:  # the one in use
            return self._epochs[e]
        if e not in self._epochs:
            config = replace(self.config, seed=epoch_seed(self.config.seed, e))
            self._epochs[e] = GPTDataset(self.indexed.prefix, self.span, None, config, split_name=self.split_name,
                                         dataset=self.indexed)
            while len(self._epochs) > EPOCHS_KEPT:
                self._epochs.popitem(last=False)
        self._epochs.move_to_end(e)
        return self._epochs[e]

    @property
    def token_dtype(self) -> np.dtype:
        return self.indexed.dtype

    def windows(self, numbers, dtype=np.int64, compiled: bool | None = None) -> np.ndarray:
        """`[n, seq_length + 1]` token windows of this dataset's samples `numbers` (in its own order); `compiled`
        as `GPTDataset.windows` takes it."""
        numbers = np.asarray(numbers, dtype=np.int64)
        one = self._within_one_epoch(numbers)
        if one is not None:
            return self.epoch(one[0]).windows(one[1], dtype, compiled)
        epochs, within = np.divmod(numbers, self.per_epoch)
        out = BATCH_BLOCKS.block((numbers.size, self.config.seq_length + 1), dtype)
        for e in np.unique(epochs):
            chosen = epochs == e
            out[chosen] = self.epoch(int(e)).windows(within[chosen], dtype, compiled)
        return out

    def lay_out(self, numbers, rows: np.ndarray, out: np.ndarray) -> None:
        """Rows `rows` of `out` (`[4, B, seq_length]`) = this dataset's samples `numbers` laid out, compiled
        (`GPTDataset.lay_out`), each epoch's from its own order."""
        numbers = np.asarray(numbers, dtype=np.int64)
        one = self._within_one_epoch(numbers)
        if one is not None:
            self.epoch(one[0]).lay_out(one[1], rows, out)
            return
        epochs, within = np.divmod(numbers, self.per_epoch)
        for e in np.unique(epochs):
            chosen = epochs == e
            self.epoch(int(e)).lay_out(within[chosen], rows[chosen], out)

    def latest(self) -> int:
        """The epoch used last (0 before any)."""
        return next(reversed(self._epochs)) if self._epochs else 0

    def _within_one_epoch(self, numbers: np.ndarray) -> tuple[int, np.ndarray] | None:
        """(epoch, the samples' numbers within it) when samples `numbers` all lie in one epoch, the usual batch;
        None otherwise."""
        if not numbers.size:
            return None
        first, last = int(numbers.min()) // self.per_epoch, int(numbers.max()) // self.per_epoch
        if first != last:
            return None
        return first, numbers - first * self.per_epoch if first else numbers

    def documents_seen(self, consumed: int) -> np.ndarray:
        """For each document of the split, in how many epochs samples 0..consumed-1 held any of its tokens."""
        begin, end = self.span
        seen = np.zeros(end - begin, dtype=np.int64)
        for e in range(-(-consumed // self.per_epoch)):
            seen += self.epoch(e).documents_seen(np.arange(min(self.per_epoch, consumed - e * self.per_epoch)))
        return seen
