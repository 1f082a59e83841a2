"""The next batch on its way to the GPU while the current step runs.

A host-to-device copy on the compute stream waits for the step before it and delays the step after it.
Here batch k+1 is copied on a side CUDA stream (from pinned memory, `non_blocking`) as soon as batch k has
been handed out; the compute stream waits only for that copy's event, and each tensor is marked as used by
the compute stream so its memory is not reused too early. On a CPU there is nothing to overlap: each batch
is prepared when asked for.
"""

from __future__ import annotations

from typing import Callable, Iterator

import torch


def staged_batches(batches: Iterator[dict], device: torch.device, prepare: Callable[[dict], dict]) -> Iterator[dict]:
    """`prepare(batch)` (which moves it to `device`) for each batch of `batches`, one batch ahead on a side
    stream when `device` is a GPU."""
    if device.type != "cuda":
        for batch in batches:
            yield prepare(batch)
        return
    side = torch.cuda.Stream(device=device)

    def start_copy(batch: dict) -> tuple[dict, torch.cuda.Event]:
        with torch.cuda.stream(side):
            moved = prepare(batch)
            done = torch.cuda.Event()
            done.record(side)
        return moved, done

    upcoming = next(batches, None)
    staged = None if upcoming is None else start_copy(upcoming)
    while staged is not None:
        moved, done = staged
        torch.cuda.current_stream(device).wait_event(done)
        for tensor in moved.values():
            tensor.record_stream(torch.cuda.current_stream(device))
        upcoming = next(batches, None)
        staged = None if upcoming is None else start_copy(upcoming)
        yield moved
