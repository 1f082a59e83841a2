"""The next batches on their way to the GPU while the current step runs, without the training thread waiting.

A host-to-device copy on the compute stream waits for the step before it and delays the step after it, and
taking a batch from the DataLoader's workers costs the host up to a millisecond (the queue, the pipe,
pinning). Here a background thread takes batch k+1, k+2, ... from the loader as soon as there is room for
them and copies each to the GPU on a side CUDA stream (from pinned memory, `non_blocking`). The training
thread only takes a staged batch from a queue; the compute stream waits for that batch's copy event, and each
tensor is marked as used by the compute stream so its memory is not reused too early.

On a CPU there is nothing to overlap: each batch is prepared when asked for (the thread can be asked for by
name, which is how the tests check its order and its count of batches held).

Batches taken from the loader but not yet handed out are not trained on: `loader_state` subtracts them from
the loader's count, so a run resumed from a checkpoint takes them again (`TokenBatches.state_dict(unused=)`).
"""

from __future__ import annotations

import queue
import threading
from typing import Callable, Iterator

import torch

DEPTH = 2  # staged batches held ready (each also holds its place in device memory)


class StagedBatches:
    """`prepare(batch)` (which moves it to `device`) for each batch of `batches`, in order; on a GPU (or when
    `threaded`) prepared by a background thread, up to `depth` batches ahead."""

    def __init__(self, batches: Iterator[dict], device: torch.device, prepare: Callable[[dict], dict], *,
                 threaded: bool | None = None, depth: int = DEPTH):
        self.batches, self.device, self.prepare = batches, device, prepare
        self.threaded = device.type == "cuda" if threaded is None else threaded
        self.taken = self.handed = 0  # batches taken from `batches` (by the thread), handed out (to training)
        self._lock = threading.Lock()  # held while a batch is taken and counted, so a checkpoint sees both at once
        self._ready: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = None
        self._side = torch.cuda.Stream(device=device) if device.type == "cuda" else None

    def __iter__(self) -> Iterator[dict]:
        return self

    def __next__(self) -> dict:
        if not self.threaded:
            return self.prepare(next(self.batches))  # nothing is ever ahead
        if self._thread is None:
            self._thread = threading.Thread(target=self._stage_all, name="staged-batches", daemon=True)
            self._thread.start()
        item = self._ready.get()
        if item is None:
            raise StopIteration
        if isinstance(item, BaseException):
            raise item
        moved, done = item
        self.handed += 1
        if done is not None:
            current = torch.cuda.current_stream(self.device)
            current.wait_event(done)
            for tensor in moved.values():
                tensor.record_stream(current)
        return moved

    def _stage_all(self) -> None:
        """The background thread: take, copy and queue every batch, then the end (None) or the error."""
        try:
            while not self._stop.is_set():
                with self._lock:
                    batch = next(self.batches, None)
                    self.taken += batch is not None
                if batch is None:
                    break
                self._put(self._stage(batch))
        except BaseException as error:  # handed to the training thread, which raises it
            self._put(error)
            return
        self._put(None)

    def _stage(self, batch: dict) -> tuple[dict, torch.cuda.Event | None]:
        """`batch` prepared, on the side stream with an event marking its copy's end on a GPU."""
        if self._side is None:
            return self.prepare(batch), None
        with torch.cuda.stream(self._side):
            moved = self.prepare(batch)
            done = torch.cuda.Event()
            done.record(self._side)
        return moved, done

    def _put(self, item) -> None:
        """Queue `item`, giving up when the consumer has closed (so the thread never hangs on a full queue)."""
        while not self._stop.is_set():
            try:
                self._ready.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    @property
    def ahead(self) -> int:
        """Batches taken from the loader and not yet handed out (staged, or on their way)."""
        return self.taken - self.handed

    def loader_state(self, loader) -> dict:
        """`loader.state_dict()` as of the batches handed out: those staged ahead count as not consumed."""
        with self._lock:
            return loader.state_dict(unused=self.ahead)

    def close(self) -> None:
        """Stop the background thread (a run that ends early leaves batches staged)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def staged_batches(batches: Iterator[dict], device: torch.device, prepare: Callable[[dict], dict]) -> StagedBatches:
    """`StagedBatches` with the defaults: staged ahead by a background thread on a GPU, prepared on ask on a CPU."""
    return StagedBatches(batches, device, prepare)
