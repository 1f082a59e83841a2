"""The silent data bugs of training scripts, planted by name into real batches, so that a run shows the
audit naming each one: notebook 09, and `--plant-bug NAME` in `python -m helpers.training` and in every
framework example (always said on stderr; never without being asked).

Batches are one rank's stream in the loader's layout: `input_ids`, `labels` one token on, `position_ids`.
A `Planter` does one bug to them as a script would, step by step from step `at`, keeping only what the bug
needs (at most `at` batches). Two bugs live in how a run is set up, not in its stream, and are planted
there: `rank-not-set` (every rank's loader made with rank 0: `loader_rank`) and `past-vocab` (a model
made for a 32,000-id tokenizer: `model_vocab_size`).
"""

from __future__ import annotations

import math
from collections import deque

import torch

from ..common.errors import UserError
from .statistics import EXACT_CHANCE, SHORTEST_ROW, replay_run_needed

BUGS = {  # name -> (the finding's code, what the script does)
    "random-fallback": ("random-tokens", "the data path is wrong and the script falls back to torch.randint"),
    "partly-random": ("random-tokens", "one row of each batch comes from a fallback"),
    "rank-not-set": ("same-batch-across-ranks", "the sampler is never told its rank: every rank reads the same"),
    "stream-loops": ("repeated-batch", "a dataset shorter than the run, iterated again from its start"),
    "epoch-not-advanced": ("repeated-batch", "DistributedSampler(shuffle=True) without set_epoch: every epoch "
                           "the same order"),
    "resume-replays": ("repeated-batch", "a resumed run restarts its data two batches early"),
    "double-shift": ("labels-misaligned", "labels shifted by the script and again by the model"),
    "no-shift": ("labels-misaligned", "labels equal to the inputs, for a loss that does not shift"),
    "padding-in-loss": ("padding-in-loss", "padded rows whose labels are not masked with -100"),
    "past-vocab": ("id-out-of-range", "data from a 128k tokenizer into a model of 32,000 ids"),
    "uint16-wrap": ("id-wraparound", "128k-vocabulary ids stored in a uint16 array"),
    "zero-batch": ("constant-batch", "a failed read returns a buffer of zeros"),
}
SETUP_BUGS = {"rank-not-set", "past-vocab"}
SMALL_MODEL_VOCAB = 32_000  # past-vocab: the model's vocabulary
UINT16_IDS = 65_536  # uint16-wrap: what a uint16 array holds
PAD_ID = 0
PLANTED_AT = 3  # the step a bug of the stream starts at
REPLAYED = 2  # resume-replays: batches taken again
REPLAYS = {"stream-loops", "epoch-not-advanced", "resume-replays"}  # named once their run is long enough


def replay_named_at(at: int, rows: int, ranks: int = 1, replayed: int | None = None) -> int | None:
    """The step at which a replay planted from step `at` is named, in batches of `rows` samples on each of
    `ranks` ranks: `at` itself where a whole batch dealt again in order is already named there, else the
    first step whose run of replayed samples (the batch, growing each step, up to the
    `replayed` samples taken again in order: all `at` batches by default) is as long as
    `statistics.replay_run_needed` asks for the `at` steps of distinct samples seen before it. None when the
    run never gets that long (a loop over fewer samples than a shuffle of them puts in order by chance)."""
    longest = at * rows if replayed is None else replayed
    if rows >= 2 and math.perm(at * rows * ranks, rows) >= EXACT_CHANCE * (at + 1):
        return at  # its first batch is an earlier one dealt again in order (`StreamAudit._redrawn`)
    for step in range(at, at + longest // rows + 1):
        run = min(rows * (step - at + 1), longest)
        if run >= replay_run_needed(at * rows * ranks, (step + 1) * rows):
            return step
    return None


def copied(batch: dict) -> dict:
    return {key: value.clone() for key, value in batch.items()}


def random_like(batch: dict, vocab_size: int, generator: torch.Generator) -> dict:
    """The batch's shape filled by a `torch.randint` fallback, labels one token on as the loader makes them."""
    rows, length = batch["input_ids"].shape
    window = torch.randint(0, vocab_size, (rows, length + 1), generator=generator)
    return {**copied(batch), "input_ids": window[:, :-1], "labels": window[:, 1:]}


def one_row_random(batch: dict, vocab_size: int, generator: torch.Generator) -> dict:
    batch = copied(batch)
    batch["input_ids"][0] = torch.randint(0, vocab_size, batch["input_ids"][0].shape, generator=generator)
    return batch


def shifted_twice(batch: dict) -> dict:
    """Labels shifted once more: every key one position shorter, labels two tokens ahead of the inputs."""
    return {**{key: value[:, :-1] for key, value in batch.items()}, "labels": batch["labels"][:, 1:]}


def not_shifted(batch: dict) -> dict:
    return {**batch, "labels": batch["input_ids"].clone()}


def padded_in_loss(batch: dict, pad_id: int = PAD_ID) -> dict:
    """The last quarter of every row padded and masked from attention, but its labels left in the loss."""
    batch = copied(batch)
    cut = batch["input_ids"].shape[1] * 3 // 4
    batch["input_ids"][:, cut:] = pad_id
    batch["labels"][:, cut - 1:] = pad_id  # a correct script would write -100 here
    mask = torch.ones_like(batch["input_ids"])
    mask[:, cut:] = 0
    return {**batch, "attention_mask": mask}


def wrapped_by_uint16(batch: dict) -> dict:
    return {**batch, "input_ids": batch["input_ids"] % UINT16_IDS, "labels": batch["labels"] % UINT16_IDS}


def zeros(batch: dict) -> dict:
    return {**batch, "input_ids": torch.zeros_like(batch["input_ids"])}


def refuse_unknown(bug: str) -> None:
    if bug not in BUGS:
        raise UserError(f"unknown bug {bug!r}; fix: choose one of {', '.join(BUGS)}")


class Planter:
    """`bug` done to each batch it is handed, in step order. Call it once per step, on every batch."""

    def __init__(self, bug: str, *, vocab_size: int, at: int = PLANTED_AT, seed: int = 0):
        refuse_unknown(bug)
        if bug in SETUP_BUGS:
            raise ValueError(f"{bug} is planted where the run is set up (loader_rank, model_vocab_size)")
        if bug == "uint16-wrap" and vocab_size <= UINT16_IDS:
            raise UserError(f"uint16-wrap needs data of a vocabulary above {UINT16_IDS:,} ids, not {vocab_size:,}; "
                            "fix: plant it into data made with a 128k tokenizer (e.g. llama3)")
        if at < REPLAYED:
            raise ValueError(f"at={at}: a bug is planted from step {REPLAYED} or later")
        self.bug, self.vocab_size, self.at, self.step = bug, vocab_size, at, 0
        self.generator = torch.Generator().manual_seed(seed)
        self.kept: list[dict] = []  # stream-loops, epoch-not-advanced: the batches of the first `at` steps
        self.behind: deque = deque()  # resume-replays: the batches not yet handed on

    def __call__(self, batch: dict) -> dict:
        step, bug = self.step, self.bug
        if bug == "partly-random" and batch["input_ids"].shape[-1] < SHORTEST_ROW:
            raise UserError(f"partly-random: one random row among real ones shows in rows of {SHORTEST_ROW} tokens "
                            f"or more, not {batch['input_ids'].shape[-1]}; fix: --seq-length {SHORTEST_ROW} or more")
        self.step += 1
        if bug == "double-shift":
            return shifted_twice(batch)
        if bug == "no-shift":
            return not_shifted(batch)
        if bug == "uint16-wrap":
            return wrapped_by_uint16(batch)
        if bug in ("stream-loops", "epoch-not-advanced"):
            # a finite stream of `at` batches taken again from its start; a sampler never told its epoch
            # draws the same permutation every epoch, so its next epoch is the same batches in the same order
            if step < self.at:
                self.kept.append(batch)
                return batch
            return self.kept[step % self.at]
        if bug == "resume-replays":  # from step `at` the data runs REPLAYED batches behind
            self.behind.append(batch)
            if step >= self.at:
                return self.behind.popleft()
            if len(self.behind) > REPLAYED:
                self.behind.popleft()
            return batch
        if step < self.at:
            return batch
        if bug == "random-fallback":
            return random_like(batch, self.vocab_size, self.generator)
        if bug == "partly-random":
            return one_row_random(batch, self.vocab_size, self.generator)
        if bug == "padding-in-loss":
            return padded_in_loss(batch)
        return zeros(batch) if step == self.at else batch  # zero-batch: one failed read


def loader_rank(bug: str | None, rank: int, world_size: int) -> int:
    """The rank a script tells its loader: 0 on every rank when the sampler is never told its rank."""
    if bug != "rank-not-set":
        return rank
    if world_size < 2:
        raise UserError("rank-not-set needs two processes or more, one process has no other rank to repeat; "
                        "fix: run under torchrun --nproc-per-node 2")
    return 0


def model_vocab_size(bug: str | None, data_vocab_size: int) -> int:
    """The vocabulary the model is made with: 32,000 ids under past-vocab (for data of a larger one)."""
    if bug != "past-vocab":
        return data_vocab_size
    if data_vocab_size <= SMALL_MODEL_VOCAB:
        raise UserError(f"past-vocab needs data of a vocabulary above {SMALL_MODEL_VOCAB:,} ids, not "
                        f"{data_vocab_size:,}; fix: plant it into data made with a 128k tokenizer (e.g. llama3)")
    return SMALL_MODEL_VOCAB


def planted_notice(bug: str) -> str:
    return f"PLANTED BUG, asked for by name: {bug} ({BUGS[bug][1]})"


class PlantedBatches:
    """A loader with a bug planted into its batches; it stands in for the loader (length, state, `source`).
    Under resume-replays a resumed run is put back REPLAYED batches before where its checkpoint stopped, as a
    script that saved its data position late would be."""

    def __init__(self, loader, planter: Planter | None):
        self.loader, self.planter = loader, planter

    def __iter__(self):
        for batch in self.loader:
            yield batch if self.planter is None else self.planter(batch)

    def __len__(self) -> int:
        return len(self.loader)

    def state_dict(self, unused: int = 0) -> dict:
        return self.loader.state_dict(unused=unused)

    def load_state_dict(self, state: dict) -> None:
        if self.planter.bug == "resume-replays":
            per_step = self.loader.world_size * self.loader.batch_size
            state = {**state, "samples_consumed": max(0, int(state["samples_consumed"]) - REPLAYED * per_step)}
            self.planter = None  # the replay is in the resumed position now, not in the stream
        self.loader.load_state_dict(state)

    def __getattr__(self, name: str):
        return getattr(self.__dict__["loader"], name)
