"""The training log without a wait for the device at every step.

Reading a GPU tensor (`float(loss)`) or synchronising to read a clock makes the host wait until the device
has finished everything queued, so the host cannot prepare the next step while the device runs this one.
Here each step leaves its loss and gradient norm on the device and records a CUDA event when its work is
queued; every `log_every` steps (and before an evaluation or a checkpoint) the pending rows are read in one
go: one wait, the losses and norms as one stacked tensor, each step's time from its events. On a CPU the
clock is the host's and nothing is pending.
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

    def seconds_between_marks(self) -> list[float]:
        """The seconds between consecutive marks (one wait for the device, on the last mark), and keep only
        the last mark, where the next interval starts."""
        if self.cuda:
            self.marks[-1].synchronize()
            seconds = [start.elapsed_time(end) / 1000 for start, end in zip(self.marks, self.marks[1:])]
        else:
            seconds = [end - start for start, end in zip(self.marks, self.marks[1:])]
        self.marks = self.marks[-1:]
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
        """A finished step: `row` holds what the host knows (step, lr, tokens, data wait, FLOPs per token)."""
        self.clock.mark()
        self.rows.append({**row, "loss": loss.detach().to(torch.float64).reshape(()),
                          "grad_norm": grad_norm.detach().to(torch.float64).reshape(())})

    def flush(self, peak: float | None) -> list[dict[str, Any]]:
        """The pending rows completed (loss, gradient norm, step time, tokens/s, MFU), in one read."""
        if not self.rows:
            return []
        values = torch.stack([torch.stack((row["loss"], row["grad_norm"])) for row in self.rows]).tolist()
        seconds = self.clock.seconds_between_marks()
        done = []
        for row, (loss, grad_norm), step_s in zip(self.rows, values, seconds):
            flops = row.pop("flops_per_token")
            tokens_per_s = row["tokens"] / step_s
            done.append({**row, "loss": loss, "grad_norm": grad_norm, "step_s": step_s, "tokens_per_s": tokens_per_s,
                         "mfu": model_flops_utilisation(flops, tokens_per_s, peak)})
        self.rows = []
        return done
