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

from ...audit.planting import (BUGS, REPLAYED, SMALL_MODEL_VOCAB, not_shifted, one_row_random, padded_in_loss,
                               random_like, refuse_unknown, replay_named_at, shifted_twice, wrapped_by_uint16,
                               zeros)
from ...audit.statistics import WRAP_TOKENS

__all__ = ["BUGS", "Planted", "planted"]


@dataclass
class Planted:
    """Streams to audit (one per rank) with the settings the script's model implies, and the finding due."""

    bug: str
    streams: list
    vocab_size: int
    code: str
    step: int | None  # None where the stream is too short for the audit to be sure (a replay of few samples)
    labels: str | None = "shifted"
    pad_id: int | None = None
    rank: int = 0
    training_batches: list = field(default_factory=list)  # what a training loop would see, one rank


def _from(batches: Sequence[dict], at: int, change: Callable[[dict], dict]) -> list[dict]:
    return [change(batch) if step >= at else batch for step, batch in enumerate(batches)]


def planted(bug: str, batches: Sequence[dict], vocab_size: int, at: int = 3, seed: int = 0) -> Planted:
    """`bug` (a name of `BUGS`) done to `batches` from step `at`; see the module docstring."""
    refuse_unknown(bug)
    generator = torch.Generator().manual_seed(seed)
    batches = list(batches)

    def case(streams: list, step: int, **more) -> Planted:
        settings = {"bug": bug, "vocab_size": vocab_size, "code": BUGS[bug][0], **more}
        return Planted(streams=streams, step=step, training_batches=streams[0], **settings)
    if bug == "random-fallback":
        stream = _from(batches, at, lambda b: random_like(b, vocab_size, generator))
        return case([stream], at)
    if bug == "partly-random":
        stream = _from(batches, at, lambda b: one_row_random(b, vocab_size, generator))
        return case([stream], at)
    if bug == "rank-not-set":
        return case([batches, batches], 0, rank=1)
    rows = len(batches[0]["input_ids"])
    replayed_at = replay_named_at(at, rows)
    if bug == "stream-loops":
        stream = [batches[step % at] for step in range(len(batches))]
        return case([stream], replayed_at)
    if bug == "epoch-not-advanced":
        samples = [{key: value[row] for key, value in batch.items()} for batch in batches[:at]
                   for row in range(len(batch["input_ids"]))]
        sampler = torch.utils.data.DistributedSampler(samples, num_replicas=1, rank=0, shuffle=True, seed=seed)
        per_batch = len(batches[0]["input_ids"])
        stream = [batch for _epoch in range(2)  # sampler.set_epoch(epoch) never called
                  for batch in torch.utils.data.DataLoader(samples, batch_size=per_batch, sampler=sampler)]
        return case([stream], replayed_at)
    if bug == "resume-replays":
        stream = batches[:at] + batches[at - REPLAYED:]
        return case([stream], replay_named_at(at, len(batches[0]["input_ids"]), replayed=REPLAYED * rows))
    if bug == "double-shift":
        stream = [shifted_twice(b) for b in batches]
        return case([stream], 0)
    if bug == "no-shift":
        stream = [not_shifted(b) for b in batches]
        return case([stream], 0)
    if bug == "padding-in-loss":
        stream = _from(batches, at, padded_in_loss)
        return case([stream], at)
    if bug == "past-vocab":
        return case([batches], 0, vocab_size=SMALL_MODEL_VOCAB)
    if bug == "uint16-wrap":
        stream = [wrapped_by_uint16(b) for b in batches]
        tokens = np.cumsum([b["input_ids"].numel() for b in batches])
        return case([stream], int(np.searchsorted(tokens, WRAP_TOKENS)))
    # zero-batch
    stream = [zeros(b) if step == at else b for step, b in enumerate(batches)]
    return case([stream], at)
