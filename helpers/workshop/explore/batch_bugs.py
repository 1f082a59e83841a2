"""The silent data bugs of training scripts, planted into real batches, for notebook 09 and its solutions.

    from helpers.workshop.explore.batch_bugs import BUGS, planted
    case = planted("double-shift", real_batches, vocab_size=128256, at=3)
    report = audit_ranks(case.streams, vocab_size=case.vocab_size, labels=case.labels, pad_id=case.pad_id)
    assert report.findings[0].code == case.code and report.findings[0].step == case.step

`real_batches` are batches of the loader's layout (`input_ids`, `labels` one token on). Each bug is what a
script does wrong, done to them from step `at` (or from the start where the bug is there from the start);
`code` and `step` are the finding the audit must make and where.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch


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


@dataclass
class Planted:
    """Streams to audit (one per rank) with the settings the script's model implies, and the finding due."""

    bug: str
    streams: list
    vocab_size: int
    code: str
    step: int
    labels: str | None = "shifted"
    pad_id: int | None = None
    rank: int = 0
    training_batches: list = field(default_factory=list)  # what a training loop would see, one rank


def _copy(batch: dict) -> dict:
    return {key: value.clone() for key, value in batch.items()}


def _random_like(batch: dict, vocab_size: int, generator: torch.Generator) -> dict:
    rows, length = batch["input_ids"].shape
    window = torch.randint(0, vocab_size, (rows, length + 1), generator=generator)
    return {**_copy(batch), "input_ids": window[:, :-1], "labels": window[:, 1:]}


def _from(batches: Sequence[dict], at: int, change: Callable[[dict], dict]) -> list[dict]:
    return [change(_copy(batch)) if step >= at else batch for step, batch in enumerate(batches)]


def planted(bug: str, batches: Sequence[dict], vocab_size: int, at: int = 3, seed: int = 0) -> Planted:
    """`bug` (a name of `BUGS`) done to `batches` from step `at`; see the module docstring."""
    if bug not in BUGS:
        raise ValueError(f"unknown bug {bug!r}; choose from {', '.join(BUGS)}")
    generator = torch.Generator().manual_seed(seed)
    batches = list(batches)

    def case(streams: list, step: int, **more) -> Planted:
        settings = {"bug": bug, "vocab_size": vocab_size, "code": BUGS[bug][0], **more}
        return Planted(streams=streams, step=step, training_batches=streams[0], **settings)
    if bug == "random-fallback":
        stream = _from(batches, at, lambda b: _random_like(b, vocab_size, generator))
        return case([stream], at)
    if bug == "partly-random":
        def one_row(batch):
            batch["input_ids"][0] = torch.randint(0, vocab_size, batch["input_ids"][0].shape, generator=generator)
            return batch
        stream = _from(batches, at, one_row)
        return case([stream], at)
    if bug == "rank-not-set":
        return case([batches, batches], 0, rank=1)
    if bug == "stream-loops":
        stream = [batches[step % at] for step in range(len(batches))]
        return case([stream], at)
    if bug == "epoch-not-advanced":
        samples = [{key: value[row] for key, value in batch.items()} for batch in batches[:at]
                   for row in range(len(batch["input_ids"]))]
        sampler = torch.utils.data.DistributedSampler(samples, num_replicas=1, rank=0, shuffle=True, seed=seed)
        per_batch = len(batches[0]["input_ids"])
        stream = [batch for _epoch in range(2)  # sampler.set_epoch(epoch) never called
                  for batch in torch.utils.data.DataLoader(samples, batch_size=per_batch, sampler=sampler)]
        return case([stream], at)
    if bug == "resume-replays":
        stream = batches[:at] + batches[at - 2:]
        return case([stream], at)
    if bug == "double-shift":
        stream = [{**{key: value[:, :-1] for key, value in b.items()}, "labels": b["labels"][:, 1:]} for b in batches]
        return case([stream], 0)
    if bug == "no-shift":
        stream = [{**b, "labels": b["input_ids"].clone()} for b in batches]
        return case([stream], 0)
    if bug == "padding-in-loss":
        def padded(batch, pad_id=0):
            cut = batch["input_ids"].shape[1] * 3 // 4
            batch["input_ids"][:, cut:] = pad_id
            batch["labels"][:, cut - 1:] = pad_id  # a real script would set IGNORE_INDEX here
            mask = torch.ones_like(batch["input_ids"])
            mask[:, cut:] = 0
            return {**batch, "attention_mask": mask}
        stream = _from(batches, at, padded)
        return case([stream], at)
    if bug == "past-vocab":
        return case([batches], 0, vocab_size=32_000)
    if bug == "uint16-wrap":
        stream = [{**b, "input_ids": b["input_ids"] % 65_536, "labels": b["labels"] % 65_536} for b in batches]
        tokens = np.cumsum([b["input_ids"].numel() for b in batches])
        return case([stream], int(np.searchsorted(tokens, 4096)))
    # zero-batch
    def zeros(batch):
        return {**batch, "input_ids": torch.zeros_like(batch["input_ids"])}
    stream = [zeros(_copy(b)) if step == at else b for step, b in enumerate(batches)]
    return case([stream], at)
