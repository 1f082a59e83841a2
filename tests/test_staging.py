"""Batches staged ahead by a background thread (as on a GPU; asked for by name here on the CPU): every batch in
order, an error raised where training asks, the thread stopped when a run ends early, and a checkpoint that
counts staged batches as not consumed, so a resumed run takes the steps of the uninterrupted one. The log's
lagged read (`keep_last`) completes every row once."""

from __future__ import annotations

import time

import pytest
import torch

from helpers.loading.loader import make_dataloader
from helpers.training.staging import StagedBatches
from helpers.training.step_log import PendingSteps, StepClock

CPU = torch.device("cpu")


def synthetic_loader(steps: int = 6, batch_size: int = 2):
    return make_dataloader(source="synthetic", vocab_size=97, seq_length=8, batch_size=batch_size,
                           num_samples=steps * batch_size, seed=3)


def wait_until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the staging thread did not get ahead"
        time.sleep(0.01)


def test_threaded_staging_hands_out_every_batch_in_order_and_counts_those_ahead():
    loader = synthetic_loader()
    staged = StagedBatches(iter(loader), CPU, lambda batch: batch, threaded=True)
    first, second = next(staged), next(staged)
    wait_until(lambda: staged.ahead >= 2)  # the thread has taken more than training has
    assert loader.step >= 4
    assert staged.loader_state(loader)["samples_consumed"] == 2 * 2  # two batches of two trained on
    rest = list(staged)
    assert staged.ahead == 0 and staged.loader_state(loader)["samples_consumed"] == 6 * 2
    for step, batch in enumerate([first, second, *rest]):
        assert all(torch.equal(batch[key], loader.batch_at(step)[key]) for key in batch)
    assert len(rest) == 4


def test_an_error_in_the_loader_is_raised_where_training_asks():
    def failing():
        yield {"input_ids": torch.zeros(1)}
        raise OSError("disk gone")

    staged = StagedBatches(failing(), CPU, lambda batch: batch, threaded=True)
    next(staged)
    with pytest.raises(OSError, match="disk gone"):
        next(staged)


def test_closing_a_run_early_stops_the_thread():
    def endless():
        while True:
            yield {"input_ids": torch.zeros(1)}

    staged = StagedBatches(endless(), CPU, lambda batch: batch, threaded=True, depth=1)
    next(staged)
    staged.close()
    assert not staged._thread.is_alive()


def test_the_state_refuses_more_unused_batches_than_were_taken():
    loader = synthetic_loader()
    next(iter(loader))
    with pytest.raises(ValueError, match="unused=2 batches of 1"):
        loader.state_dict(unused=2)


def test_a_run_resumed_from_a_checkpoint_taken_with_batches_staged_ahead_takes_the_same_steps(monkeypatch,
                                                                                             tmp_path):
    import helpers.training.train as loop
    from helpers.training.train import CheckpointPlan, build_model, llama_config, train, train_settings

    monkeypatch.setattr(loop, "staged_batches",
                        lambda batches, device, prepare: StagedBatches(batches, device, prepare, threaded=True))
    config = llama_config("cpu-tiny", vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                          num_attention_heads=4)
    settings = train_settings("cpu-tiny", steps=6, batch_size=2, seq_length=8, eval_every=0, dtype="float64",
                              log_every=1)

    def run(until=None, resume=False):
        plan = CheckpointPlan(folder=tmp_path / "checkpoints", every=1, resume=resume, until_step=until)
        result = train(build_model(config, seed=0), synthetic_loader(), settings, progress=False, checkpoints=plan)
        return [row["loss"] for row in result.log]

    whole = train(build_model(config, seed=0), synthetic_loader(), settings, progress=False).log
    resumed = run(until=3) + run(resume=True)
    assert len(resumed) == 6
    assert max(abs(a - row["loss"]) for a, row in zip(resumed, whole)) < 1e-12, (resumed, whole)


def test_a_lagged_flush_keeps_the_last_rows_pending_and_completes_each_row_once():
    pending = PendingSteps(StepClock(CPU))
    pending.clock.mark()
    for step in range(3):
        pending.add({"step": step, "lr": 0.1, "tokens": 64, "data_wait_s": 0.0, "flops_per_token": 10},
                    torch.tensor(float(step)), torch.tensor(1.0))
    early = pending.flush(peak=None, keep_last=1)
    assert [row["step"] for row in early] == [0, 1] and len(pending.rows) == 1
    assert pending.flush(peak=None, keep_last=1) == []  # one pending, one kept
    late = pending.flush(peak=None)
    assert [row["step"] for row in late] == [2] and [row["loss"] for row in early + late] == [0.0, 1.0, 2.0]
    assert all(row["step_s"] > 0 for row in early + late) and len(pending.clock.marks) == 1
