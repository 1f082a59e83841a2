"""One loader for every run: real data by default, synthetic only by name, exact resume in O(1).

    loader = make_dataloader(["0.7", "data/megatron/literature_text_document",
                              "0.3", "data/megatron/code_text_document"],
                             seq_length=256, batch_size=8, num_samples=8_000)
    for batch in loader:             # dicts of [8, 256] int64 tensors, the layout of helpers.datasets.layout
        ...
    state = loader.state_dict()      # small: fingerprint, seed, samples consumed
    again = make_dataloader(..., same arguments ...)
    again.load_state_dict(state)     # yields exactly the batches `loader` would have yielded next

A batch is a pure function of (data, seed, step): at step k, rank r of W ranks with per-rank batch B
gets samples `k·W·B + r·B + b`, b < B. So W ranks at step k together hold the one-rank batch of size
W·B at step k, a run resumes on another number of GPUs, and nothing is replayed to resume.
Batches are counted as they are handed out, not as workers prefetch them. A worker hands over the token windows
of a few steps at a time (`ITEM_BYTES`), in the data's own dtype (for 4-byte ids an eighth of the four int64
tensors' bytes: the dearest part of a worker's batch is its trip to the main process), through memory they
share, and the main process lays them out.
"""

from __future__ import annotations

import logging
import numbers
import os
import shutil
from dataclasses import replace

import numpy as np
import torch

from ..common.errors import UserError
from ..common.headless import message_stream
from ..common.settings import with_keywords
from ..datasets.layout import BATCH_KEYS
from .settings import LoaderSettings
from .sources import Source, open_source

log = logging.getLogger("helpers.loading.loader")


class _WhereTheUserLooks(logging.StreamHandler):
    """stderr in a terminal or a log file; stdout in a notebook kernel, where stderr is drawn as an error block
    and a batch run would commit it as one (the line is news, not an error: SYNTHETIC DATA says so in words)."""

    def emit(self, record):
        self.stream = message_stream()
        super().emit(record)


if not log.handlers:  # say where the data comes from even when the application configured no logging
    _handler = _WhereTheUserLooks()
    _handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    log.addHandler(_handler)
    if log.level == logging.NOTSET:  # a level set before this import (a notebook kernel's) stays
        log.setLevel(logging.INFO)
    log.propagate = False

STATE_VERSION = 3  # 3: a mix keeps its schedule's steps in samples
# A worker hands over the windows of consecutive steps in one item of about this many bytes (at most
# STEPS_PER_ITEM steps): each item costs the worker and the main process a round of the DataLoader's queues,
# pipes and threads (measured on 2 cores beside the layout: more than the gather of a 32 x 2,048 batch itself).
ITEM_BYTES = 1 << 20
STEPS_PER_ITEM = 4


class _StepBatches(torch.utils.data.Dataset):
    """Map-style view a DataLoader (and its workers) index by step: item k is this rank's batch at step k."""

    def __init__(self, source: Source, batch_size: int, rank: int, world_size: int):
        self.source, self.batch_size, self.rank, self.world_size = source, batch_size, rank, world_size

    def __len__(self) -> int:
        return len(self.source) // (self.batch_size * self.world_size)

    def sample_ids(self, step: int) -> np.ndarray:
        first = step * self.world_size * self.batch_size + self.rank * self.batch_size
        return np.arange(first, first + self.batch_size, dtype=np.int64)

    def checked_sample_ids(self, step: int) -> np.ndarray:
        if not 0 <= step < len(self):
            raise IndexError(f"step {step} out of range for {len(self)} steps")
        return self.sample_ids(step)

    def __getitem__(self, step: int) -> dict[str, torch.Tensor]:
        return self.source.batch(self.checked_sample_ids(step))


class _StepWindows(_StepBatches):
    """What a worker hands over for the `per_item` steps from step k (one item of the DataLoader): for each, the
    number of a slot of memory it shares with the main process, into which it wrote the batch's token windows in
    the data's own dtype, laid out by `Source.finish` in the main process; a batch that is not windows (packed
    rows) whole, one step an item. Only small numbers cross the worker's pipe: a torch tensor would be moved into
    shared memory of its own, and the main process would connect to the worker to receive its file descriptor and
    map it, batch after batch; a numpy array would be pickled through the pipe and copied twice. The slots are made
    before the workers start, twice as many as the items the DataLoader can have asked for at once
    (`prefetch_factor` per worker) hold steps, so the slot of step k is written again only for step k + slots,
    asked for after the main process has laid out step k + slots / 2, long after step k."""

    def __init__(self, source: Source, batch_size: int, rank: int, world_size: int, items_ahead: int):
        super().__init__(source, batch_size, rank, world_size)
        self.memory, self.per_item = None, 1
        one = source.windows(self.sample_ids(0)[:1])  # a window's width and dtype (None: rows that are not windows)
        if one is not None:
            self.dtype, self.width = one.dtype, one.shape[1]
            self.per_item = max(1, min(STEPS_PER_ITEM, ITEM_BYTES // (batch_size * one.nbytes)))
            self.slots = min(2 * items_ahead * self.per_item, len(self))  # never more than the run's steps
            self.memory = shared_bytes(self.slots * batch_size * one.nbytes)

    def slot(self, number: int) -> np.ndarray:
        """Slot `number`: one step's `[batch_size, seq_length + 1]` windows, in the shared memory."""
        return self.memory.numpy().view(self.dtype).reshape(self.slots, self.batch_size, self.width)[number]

    def __getitem__(self, first: int) -> list:
        steps = range(first, min(first + self.per_item, len(self)))
        if self.memory is None:
            return [self.source.batch(self.checked_sample_ids(step)) for step in steps]
        for step in steps:
            self.slot(step % self.slots)[...] = self.source.windows(self.checked_sample_ids(step))
        return [step % self.slots for step in steps]

    def batches(self, item: list):
        """The batches of one handed item, in order: slots laid out here, whole batches as they came."""
        for handed in item:
            yield self.source.finish(self.slot(handed)) if isinstance(handed, int) else handed


def shared_bytes(size: int) -> torch.Tensor:
    """`size` bytes of memory shared with worker processes (in /dev/shm on Linux), refused in one line where
    /dev/shm has less room: a worker writing past what it can hold would be killed by SIGBUS, mid-run."""
    free = shutil.disk_usage("/dev/shm").free if os.path.isdir("/dev/shm") else None
    if free is not None and size > free:
        raise UserError(f"the loader's workers need {size / 2**20:,.0f} MiB of shared memory for their batches "
                        f"(the windows of 2 x num_workers x prefetch_factor items of steps), and /dev/shm has "
                        f"{free / 2**20:,.0f} MiB free; fix: fewer num_workers or a smaller prefetch_factor, or a "
                        "larger /dev/shm (docker run --shm-size)")
    return torch.empty(size, dtype=torch.uint8).share_memory_()


ITERATED_AGAIN = ("this loader was iterated again (a new for loop, iter() or load_state_dict) while an earlier "
                  "iteration was still read: both would hand out the same batches and its state would count them "
                  "twice; fix: read one iteration at a time (a new loop goes on from where the last one stopped)")


def _as_handed(batch):
    """The DataLoader's collate function: what a worker hands over, as it is."""
    return batch


class TokenBatches:
    """The iterable `make_dataloader` returns: batches in order from where it stands, and its state."""

    def __init__(self, source: Source, settings: LoaderSettings):
        """`settings` as `make_dataloader` hands them: rank, world size and pin_memory decided."""
        self.source, self.settings, self.seed = source, settings, settings.seed
        batch_size, rank, world_size = settings.batch_size, settings.rank, settings.world_size
        self.batch_size, self.rank, self.world_size = batch_size, rank, world_size
        self.num_workers, self.pin_memory = settings.num_workers, settings.pin_memory
        self.prefetch_factor = settings.prefetch_factor
        self.steps = _StepBatches(source, batch_size, rank, world_size)
        if len(self.steps) == 0:
            raise UserError(f"{len(source)} samples make no full batch of {world_size} x {batch_size}; "
                            "fix: ask for more samples or a smaller batch")
        self.step = 0
        self.stints: list[dict] = []  # earlier runs this loader's state continues: samples, ranks, batch size
        self.resumed_at = 0
        self.iteration = 0  # the iteration being read: an earlier one still open refuses its next batch

    def __len__(self) -> int:
        """Batches in the whole run (not only those left)."""
        return len(self.steps)

    @property
    def fingerprint(self) -> str:
        return self.source.fingerprint()

    def describe(self) -> str:
        """Where the batches come from, in the words of the line `make_dataloader` logs: `real data: ...` or
        `SYNTHETIC DATA: ...`."""
        return self.source.describe()

    def batch_at(self, step: int) -> dict[str, torch.Tensor]:
        """This rank's batch at `step`, computed directly (no iteration, no workers)."""
        return self.steps[step]

    def __iter__(self):
        self.iteration += 1
        iteration = self.iteration
        if self.step >= len(self.steps):
            return
        if self.num_workers:
            prefetch = 2 if self.prefetch_factor is None else int(self.prefetch_factor)  # None: torch's default
            handed = _StepWindows(self.source, self.batch_size, self.rank, self.world_size,
                                  items_ahead=self.num_workers * prefetch)
            items = torch.utils.data.DataLoader(
                handed, batch_size=None, sampler=range(self.step, len(self.steps), handed.per_item),
                num_workers=self.num_workers, collate_fn=_as_handed, prefetch_factor=prefetch,
                persistent_workers=False)
            loader = (batch for item in items for batch in handed.batches(item))
        else:  # in this process: nothing for a DataLoader to add
            loader = (self.steps[step] for step in range(self.step, len(self.steps)))
        for batch in loader:
            if self.iteration != iteration:
                raise UserError(ITERATED_AGAIN)
            if self.pin_memory:  # after the layout: pinned memory for the tensors the GPU copies
                batch = {key: value.pin_memory() for key, value in batch.items()}
            self.step += 1
            yield batch

    def state_dict(self, unused: int = 0) -> dict:
        """Small and explicit: which data, which seed, how many samples (all ranks together) were consumed.
        `unused`: batches taken from this loader but not trained on (staged ahead for the GPU), which a
        resumed run must take again."""
        if not 0 <= unused <= self.step:
            raise ValueError(f"unused={unused} batches of {self.step} taken")
        consumed = (self.step - unused) * self.world_size * self.batch_size
        state = {"version": STATE_VERSION, "fingerprint": self.fingerprint, "seed": self.seed,
                 "samples_consumed": consumed, "stints": self.stints_until(consumed)}
        mix = getattr(self.source, "mix", None)
        if mix is not None:
            state["mix"] = {**mix.state(consumed), "cut": self.source.cut()}
        return state

    def stints_until(self, consumed: int) -> list[dict]:
        """The runs that took samples 0..consumed: from which sample to which, on how many ranks of which batch."""
        if consumed <= self.resumed_at:
            return [dict(s) for s in self.stints if s["from"] < consumed]
        return [*self.stints, {"from": self.resumed_at, "to": consumed, "world_size": self.world_size,
                               "batch_size": self.batch_size}]

    def load_state_dict(self, state: dict) -> None:
        """Continue where `state` stopped, possibly with another batch size or number of ranks."""
        missing = {"fingerprint", "seed", "samples_consumed"} - set(state)
        if missing:
            raise UserError(f"loader state lacks {', '.join(sorted(missing))}; fix: pass what state_dict() returned")
        if state["fingerprint"] != self.fingerprint:
            raise UserError(f"loader state is from other data (fingerprint {state['fingerprint']}, this loader's is "
                            f"{self.fingerprint}); fix: resume with the same data, split, seq_length and sample count")
        if state["seed"] != self.seed:
            raise UserError(f"loader state has seed {state['seed']}, this loader {self.seed}; fix: use the same seed")
        per_step = self.world_size * self.batch_size
        consumed = int(state["samples_consumed"])
        if consumed % per_step:
            raise UserError(f"{consumed} samples consumed is not a whole number of steps of {self.world_size} x "
                            f"{self.batch_size}; fix: resume with a global batch that divides it")
        mix = getattr(self.source, "mix", None)
        if mix is not None:
            if "mix" not in state:
                raise UserError("loader state has no record of its datasets' mix; fix: pass what state_dict() returned")
            stints = state.get("stints") or [{"world_size": self.world_size, "batch_size": self.batch_size}]
            mix.resume(state["mix"], consumed, first_global_batch=stints[0]["world_size"] * stints[0]["batch_size"])
        self.step, self.iteration = consumed // per_step, self.iteration + 1  # an iteration still open ends here
        self.stints, self.resumed_at = [dict(s) for s in state.get("stints", []) if s["from"] < consumed], consumed
        for stint in self.stints:
            stint["to"] = min(stint["to"], consumed)


def _ranks(rank: int | None, world_size: int | None) -> tuple[int, int]:
    """Explicit rank and world size, else torch.distributed's when it is running, else a single process."""
    running = torch.distributed.is_available() and torch.distributed.is_initialized()
    if world_size is None:
        world_size = torch.distributed.get_world_size() if running else 1
    if rank is None:
        rank = torch.distributed.get_rank() if running else 0
    if not 0 <= rank < world_size:
        raise UserError(f"rank {rank} is outside world size {world_size}; fix: ranks go from 0 to world_size - 1")
    return rank, world_size


def make_dataloader(data_path=None, *, settings: LoaderSettings | None = None, **options) -> TokenBatches:
    """Batches of `[batch_size, seq_length]` int64 tensors in the layout of `helpers.datasets.layout`.

    Every setting is a field of `LoaderSettings` (`helpers.loading.settings`), its default and meaning written
    there once. Give them as keywords (`make_dataloader(prefixes, seq_length=256, batch_size=8)`) or as one object
    (`make_dataloader(settings=LoaderSettings(...))`, or in place of `data_path`); keywords and a `data_path`
    beside an object replace its fields, and a keyword that is no setting raises TypeError.

    Real data is never replaced by random tokens: missing data raises `DataNotFoundError`, synthetic data comes
    only with `source="synthetic"`. `num_samples` past one epoch repeats the data in Megatron's epoch order.
    A `schedule` mixes the prefixes of `data_path` (listed without weights) by phase, `[(0, [0.7, 0.3]),
    (800, [0.2, 0.8])]`, a step being a global batch (`helpers.loading.schedule`); a weighted blend is one phase.
    `load_state_dict` of a state saved under another mix continues every dataset from where it stood; under another
    global batch, the phases begin at the samples the state keeps (`helpers.loading.mixing`), and `samples_per_step`
    (the global batch of the run that started) lets the opening line say where each phase starts in this run.
    """
    settings = _settings(data_path, settings, options)
    if settings.batch_size < 1 or settings.seq_length < 1:
        raise UserError(f"batch_size and seq_length must be positive, got {settings.batch_size} and "
                        f"{settings.seq_length}; fix: give both at least 1")
    _check_workers(settings.num_workers, settings.prefetch_factor)
    rank, world_size = _ranks(settings.rank, settings.world_size)
    pin = torch.cuda.is_available() if settings.pin_memory is None else settings.pin_memory
    if pin and not torch.cuda.is_available():
        raise UserError("pin_memory=True pins batches for a CUDA device's copies, and this machine has none; fix: "
                        "leave pin_memory unset (pinned where CUDA is) or pass pin_memory=False")
    settings = replace(settings, rank=rank, world_size=world_size, pin_memory=pin)
    data = open_source(settings)
    if data.kind == "synthetic":
        log.warning(data.describe())
    else:
        log.info(data.describe())
    return TokenBatches(data, settings)


def _whole(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_workers(workers, prefetch) -> None:
    """`num_workers` a whole number from 0 and `prefetch_factor` one from 1 (or None), refused in one line before
    the workers' shared memory is sized by them."""
    if not _whole(workers) or workers < 0:
        raise UserError(f"num_workers must be a whole number from 0, got {workers!r}; fix: e.g. num_workers=2 "
                        "(0: batches made in this process)")
    if prefetch is not None and (not _whole(prefetch) or prefetch < 1):
        raise UserError(f"prefetch_factor must be a whole number from 1, got {prefetch!r}; fix: e.g. prefetch_factor=4 "
                        "(None: torch's default, 2)")


def _settings(data_path, settings: LoaderSettings | None, options: dict) -> LoaderSettings:
    """The settings `make_dataloader` was given: an object (in place of `data_path` too), its fields replaced by
    `options` and by `data_path` where one is given."""
    if isinstance(data_path, LoaderSettings):
        settings, data_path = data_path, None
    if data_path is not None:
        options = {**options, "data_path": data_path}
    return with_keywords(settings or LoaderSettings(), options, "make_dataloader")


def samples_for_transformers(loader: TokenBatches, keys=("input_ids", "labels", "position_ids")):
    """The loader's samples one at a time, as a map-style dataset `transformers.Trainer` can take.

    Our labels are already shifted; `transformers` shifts `labels` again, so each sample also carries
    them as `shift_labels`, which its causal-LM loss uses as they are. Give `Trainer`
    `remove_unused_columns=False`: by default it drops every key its model's `forward` does not name,
    `shift_labels` among them, and the loss then quietly shifts the labels a second time.
    `train_sampling_strategy="sequential"` keeps the loader's (already shuffled) order.
    """
    return _TransformersSamples(loader.source, keys)


class _TransformersSamples(torch.utils.data.Dataset):
    def __init__(self, source: Source, keys):
        unknown = set(keys) - set(BATCH_KEYS)
        if unknown:
            raise UserError(f"unknown batch keys {sorted(unknown)}; fix: choose from {', '.join(BATCH_KEYS)}")
        self.source, self.keys = source, tuple(keys)

    def __len__(self) -> int:
        return len(self.source)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        batch = self.source.batch(np.array([i]))
        sample = {k: batch[k][0] for k in self.keys}
        if "labels" in sample:
            sample["shift_labels"] = sample["labels"]
        return sample

