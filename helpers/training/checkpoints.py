"""Whole-run checkpoints that resume exactly, on the same or another number of processes.

A checkpoint is a folder `step-0000040` holding the model and optimizer (through
`torch.distributed.checkpoint`: each rank writes its shards under FSDP2, one copy of what DDP replicates),
the RNG states (the CPU generator's, and on CUDA the device's), and `run.json`: the step reached (the
learning-rate schedule is a function of it), the loader's state (`TokenBatches.state_dict()`: samples
consumed, all ranks together) and what the run must match to continue it (the data's fingerprint and the
model's shape). It is written under a hidden temporary name and renamed when complete, so a killed run
leaves nothing that looks like a checkpoint; the next save removes what it left.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import warnings
from contextlib import contextmanager
from pathlib import Path

import torch
import torch.distributed as dist

from ..common.checkpoint_folders import RUN_FILE, latest_checkpoint  # noqa: F401 - where checkpoints are
from ..common.errors import UserError
from ..common.files import process_alive, temporary_name, temporary_pid, write_text_atomically
from .distributed import barrier, group_running

TEMPORARY_FOLDER = re.compile(r"\.step-\d{7}\.tmp-\d+")
SHAPE_FIELDS = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads")


def run_identity(config, batches, model) -> dict:
    """What a checkpoint must match to be continued: the data (the loader's fingerprint), the model's shape and
    its implementation (`model_implementation`: transformers' Llama and the plain one name their weights apart)."""
    return {"data": batches.fingerprint, "model": {field: getattr(config, field) for field in SHAPE_FIELDS},
            "implementation": model_implementation(model)}


def model_implementation(model) -> str:
    """The name of `model`'s own class, through DistributedDataParallel and FSDP2's wrapping (`FastLlama`,
    `LlamaForCausalLM`, a script's own)."""
    inner = getattr(model, "module", model)
    return next(kind for kind in type(inner).__mro__ if not kind.__module__.startswith("torch.distributed")).__name__


def remove_abandoned_saves(folder: str | os.PathLike) -> list[Path]:
    """Remove the hidden `.step-NNNNNNN.tmp-PID` folders of `folder` whose writer (rank 0 of the run that
    saved them) is no longer running on this machine: saves a killed run left half-written. They never
    looked like checkpoints; this gives their space back. A save in progress stays."""
    removed = []
    for path in Path(folder).glob(".step-*.tmp-*"):
        pid = temporary_pid(path.name)
        if TEMPORARY_FOLDER.fullmatch(path.name) and pid is not None and not process_alive(pid) and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def rng_states(device_rng: bool) -> dict[str, torch.Tensor]:
    """The random states a run draws from: the CPU generator's, and the current CUDA device's where asked."""
    states = {"rng": torch.get_rng_state()}
    if device_rng:
        states["cuda_rng"] = torch.cuda.get_rng_state()
    return states


def _shared_name(final: Path) -> Path:
    """One temporary name for every rank (rank 0's), so that all write their shards into one folder."""
    names = [temporary_name(final)]
    if group_running():
        dist.broadcast_object_list(names, src=0)
    return names[0]


@contextmanager
def _one_process_is_fine():
    """torch.distributed.checkpoint warns when no process group runs; one process is a run like any other."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.distributed is disabled", category=UserWarning)
        yield


def save_checkpoint(folder: str | os.PathLike, step: int, trained: tuple, run: dict) -> Path:
    """Checkpoint `trained` (the model and its optimizer) after `step` steps; `run` holds the loader's state
    and `run_identity`. Every rank calls it."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    final = Path(folder) / f"step-{step:07d}"
    final.parent.mkdir(parents=True, exist_ok=True)
    if not group_running() or dist.get_rank() == 0:
        remove_abandoned_saves(final.parent)
    temporary = _shared_name(final)
    model_state, optimizer_state = get_state_dict(*trained)
    random_states = rng_states(torch.cuda.is_available() and torch.cuda.is_initialized())
    with _one_process_is_fine():
        dcp.save({"model": model_state, "optimizer": optimizer_state, **random_states}, checkpoint_id=str(temporary))
    barrier()
    if not group_running() or dist.get_rank() == 0:
        run = {"step": step, **run, "rng_states": sorted(random_states)}
        write_text_atomically(temporary / RUN_FILE, json.dumps(run, indent=2) + "\n")
        shutil.rmtree(final, ignore_errors=True)
        os.replace(temporary, final)
    barrier()
    return final


def load_checkpoint(path: Path, model, optimizer, identity: dict) -> dict:
    """Load `path` into `model` and `optimizer` (any number of processes) and restore the RNG state; returns
    its `run.json`. A checkpoint of other data, another model shape or the other implementation is refused in one
    line."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    run = json.loads((path / RUN_FILE).read_text(encoding="utf-8"))
    run.setdefault("implementation", identity["implementation"])  # saved before checkpoints named it
    for what, key, fix in (("data", "data", "resume with the same data, split, seq_length and sample count"),
                           ("model", "model", "resume with the same model shape"),
                           ("model implementation", "implementation", "resume with the same --implementation")):
        if run.get(key) != identity[key]:
            raise UserError(f"{path}: a checkpoint of other {what} ({run.get(key)}, this run's {identity[key]}); "
                            f"fix: {fix}, or start without resuming")
    model_state, optimizer_state = get_state_dict(model, optimizer)
    # a CUDA run's device state is restored on CUDA; a CPU checkpoint resumed on CUDA keeps the device's own
    with_device_rng = "cuda_rng" in run.get("rng_states", []) and torch.cuda.is_available()
    state = {"model": model_state, "optimizer": optimizer_state, **rng_states(with_device_rng)}
    with _one_process_is_fine():
        dcp.load(state, checkpoint_id=str(path))
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
    torch.set_rng_state(state["rng"])
    if with_device_rng:
        torch.cuda.set_rng_state(state["cuda_rng"])
    return run
