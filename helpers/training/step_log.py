"""The training log without a wait for the device at every step.

Reading a GPU tensor (`float(loss)`) or synchronising to read a clock makes the host wait until the device
has finished everything queued, so the host cannot prepare the next step while the device runs this one.
Here each step leaves its loss and gradient norm on the device and records a CUDA event when its work is
queued; every `log_every` steps (and before an evaluation or a checkpoint) the pending rows are read in one
go: one wait, each step's time from its events. Each step's loss and norm are copied to pinned host memory
on the stream as the step ends (`non_blocking`), so the wait is for one event, not for the whole queue: a
flush that keeps the last step pending (`keep_last=1`) waits for the step before it, and the device goes on
with the last one meanwhile instead of running dry. On a CPU the clock is the host's and nothing is pending.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import torch


class StepClock:
    """Marks between steps: CUDA events on a GPU (recorded without waiting), host timestamps elsewhere."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.marks: list = []

    def mark(self) -> None:
        """The end of a step (or the start of the first one): its work is queued up to here."""
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self.marks.append(event)
        else:
            self.marks.append(time.perf_counter())

    def restart(self) -> None:
        """Forget the marks (after work that is no step, e.g. an evaluation) and start the next interval."""
        self.marks.clear()
        self.mark()

    def seconds_between_marks(self, intervals: int | None = None) -> list[float]:
        """The seconds between the first `intervals` + 1 marks (all when None), with one wait for the device
        on the last of them; the marks from there on are kept, the next intervals start at it."""
        last = len(self.marks) - 1 if intervals is None else intervals
        marks = self.marks[:last + 1]
        if self.cuda:
            marks[-1].synchronize()
            seconds = [start.elapsed_time(end) / 1000 for start, end in zip(marks, marks[1:])]
        else:
            seconds = [end - start for start, end in zip(marks, marks[1:])]
        self.marks = self.marks[last:]
        return seconds


def model_flops_utilisation(flops_per_token_: float, tokens_per_s: float, peak: float | None) -> float | None:
    """Achieved model FLOP/s as a fraction of the peak; None when the peak is unknown."""
    return None if peak is None else flops_per_token_ * tokens_per_s / peak


@dataclass
class PendingSteps:
    """Steps whose loss and gradient norm are still on the device; `flush` completes their log rows."""

    clock: StepClock
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(self, row: dict[str, Any], loss: torch.Tensor, grad_norm: torch.Tensor) -> None:
        """A finished step: `row` holds what the host knows (step, lr, tokens, data wait, FLOPs per token).
        Its loss and norm start on their way to the host; the step's mark is recorded after that copy."""
        values = torch.stack((loss.detach().to(torch.float64).reshape(()),
                              grad_norm.detach().to(torch.float64).reshape(())))
        self.rows.append({**row, "values": values.to("cpu", non_blocking=True)})
        self.clock.mark()

    def flush(self, peak: float | None, keep_last: int = 0) -> list[dict[str, Any]]:
        """The pending rows but the last `keep_last` completed (loss, gradient norm, step time, tokens/s, MFU),
        with one wait for the device: for the end of the last row completed."""
        count = len(self.rows) - keep_last
        if count <= 0:
            return []
        seconds = self.clock.seconds_between_marks(count)
        done = []
        for row, step_s in zip(self.rows[:count], seconds):
            loss, grad_norm = row.pop("values").tolist()
            flops = row.pop("flops_per_token")
            tokens_per_s = row["tokens"] / step_s
            done.append({**row, "loss": loss, "grad_norm": grad_norm, "step_s": step_s, "tokens_per_s": tokens_per_s,
                         "mfu": model_flops_utilisation(flops, tokens_per_s, peak)})
        self.rows = self.rows[count:]
        return done
