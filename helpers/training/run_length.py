"""How far a run goes, and where each of its steps stands in the learning-rate schedule, resumed or not.

A run's `steps` count global batches of the run that started it, as a data schedule's steps do
(`helpers.loading.mixing`). A run resumed with another global batch therefore takes the samples the
uninterrupted run would have, in steps of its own batch, and its learning rate follows the samples taken
(as Megatron's schedule in samples does): the samples of the schedule's step k see step k's rate. Where the
samples left are not a whole number of the new global batch, the resume is refused in one line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..common.checkpoint_folders import RUN_FILE, latest_checkpoint
from ..common.errors import UserError


@dataclass(frozen=True)
class RunLength:
    """Optimizer steps `first_step` to `last_step` (exclusive) of a run of `global_batch` samples a step, after
    `consumed` samples; `step_samples` is what a step of the schedule counts (the starting run's global batch)."""

    first_step: int
    last_step: int
    consumed: int = 0
    global_batch: int = 1
    step_samples: int = 1

    def schedule_step(self, step: int) -> int | float:
        """Optimizer step `step` as a step of the schedule: whole where the batches agree, else by its samples."""
        samples = self.consumed + (step - self.first_step) * self.global_batch
        whole, part = divmod(samples, self.step_samples)
        return whole if part == 0 else samples / self.step_samples


def started_global_batch(loader_state: dict) -> int | None:
    """The global batch of the run that started the one `loader_state` was saved by, which its steps count:
    the mix's own record, else its first stint's (None for a state that keeps neither)."""
    kept = (loader_state.get("mix") or {}).get("samples_per_step")
    if kept is not None:
        return int(kept)
    stints = loader_state.get("stints") or []
    return int(stints[0]["world_size"]) * int(stints[0]["batch_size"]) if stints else None


def resuming_global_batch(folder: Path | None) -> int | None:
    """The global batch a run resumed from `folder`'s latest checkpoint counts its steps in, read before its loader
    is made (the loader must hold the run's samples); None where nothing readable is there to resume (the
    resume itself then says what is wrong)."""
    latest = None if folder is None or not Path(folder).is_dir() else latest_checkpoint(folder)
    try:
        run = json.loads((latest / RUN_FILE).read_text(encoding="utf-8")) if latest else None
        return started_global_batch(run["loader"]) if isinstance(run, dict) else None
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


def resumed_length(checkpoint: Path, run: dict, batches, steps: int) -> RunLength:
    """The rest of a run of `steps` steps whose checkpoint `run` (its `run.json`) was loaded, `batches` (the
    loader) resumed from its state: the samples the uninterrupted run would still take, in this loader's batches."""
    state = run["loader"]
    consumed, first_step = int(state["samples_consumed"]), int(run["step"])
    world_size, batch_size = getattr(batches, "world_size", None), getattr(batches, "batch_size", None)
    started = started_global_batch(state)
    global_batch = world_size * batch_size if world_size and batch_size else started or 1
    step_samples = started or global_batch
    left = steps * step_samples - consumed
    if left % global_batch:
        raise UserError(f"{checkpoint}: the run's {steps} steps of {step_samples} samples leave {left:,} after the "
                        f"{consumed:,} taken, not a whole number of global batches of {global_batch}; fix: resume "
                        f"with a global batch that divides {left:,} (e.g. {step_samples}), or other --steps")
    length = RunLength(first_step, first_step + max(left, 0) // global_batch, consumed=consumed,
                       global_batch=global_batch, step_samples=step_samples)
    position = getattr(batches, "step", None)
    if position is not None and len(batches) - position < length.last_step - first_step:
        raise UserError(f"the loader holds {len(batches) * global_batch:,} samples, the run's {steps} steps of "
                        f"{step_samples} take {steps * step_samples:,}; fix: make the loader with "
                        f"num_samples={steps * step_samples} (the steps times the global batch the run started with)")
    return length
