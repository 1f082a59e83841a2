"""Training on several processes, fed by one loader: `torchrun --nproc-per-node N` starts the processes,
each joins one process group (NCCL on GPUs, gloo on CPU) and reads its rank's slice of every global batch
(`make_dataloader(rank=, world_size=)`). The model is replicated (`ddp`: DistributedDataParallel) or
sharded (`fsdp`: FSDP2's `fully_shard`, one unit per decoder layer and one for the rest).

Both average gradients over the ranks, so a rank scales its summed token loss by `world / labelled`
(labelled: the labelled tokens of the whole global batch): the update is then the gradient of the global
batch's mean token loss, whatever the number of processes or micro-batches. One process with the same
global batch takes the same steps.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import NoReturn

import torch
import torch.distributed as dist

from ..common.errors import UserError
from ..common.process_exit import exit_process, note_process_group

PARALLEL = ("none", "ddp", "fsdp")


@dataclass(frozen=True)
class Ranks:
    """This process's place in the run: its rank, how many there are, and its GPU on this node."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        """Whether this process logs, evaluates for the record and writes files (rank 0)."""
        return self.rank == 0


def group_running() -> bool:
    """Whether this process belongs to a running process group."""
    return dist.is_available() and dist.is_initialized()


def barrier() -> None:
    """Wait for every rank (nothing to wait for with one process)."""
    if group_running():
        dist.barrier()


def join_ranks(group_of_one: bool = False) -> Ranks:
    """The process group torchrun asked for (`WORLD_SIZE`, `RANK`, `LOCAL_RANK` in the environment), joined
    once: NCCL where CUDA is, gloo elsewhere. One process started without torchrun is rank 0 of 1, in no
    group unless `group_of_one` asks for one (DeepSpeed and Megatron want a group even on one process)."""
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if group_running():
        return Ranks(dist.get_rank(), dist.get_world_size(), local_rank)
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if int(os.environ.get("WORLD_SIZE", "1")) == 1:
        if group_of_one:
            dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
            note_process_group()
        return Ranks()
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    dist.init_process_group(backend)
    note_process_group()
    return Ranks(dist.get_rank(), dist.get_world_size(), local_rank)


def leave_ranks() -> None:
    """Leave the process group together: every rank waits for the others first (a rank that tears its
    connections down while another still uses them aborts the run at its very end). The group's threads can
    outlive this (see `helpers.common.process_exit`): a command line run by `run_cli` then ends without
    finalizing the interpreter, and a script of one's own ends with `finish_ranks()`."""
    if group_running():
        note_process_group()
        barrier()
        dist.destroy_process_group()


def finish_ranks(code: int = 0) -> NoReturn:
    """The last line of a script under torchrun: leave the process group together, then end the process with
    `code` without finalizing the interpreter, so that no thread of the group can abort it on the way out."""
    leave_ranks()
    exit_process(code)


def rank_device(device: torch.device, ranks: Ranks) -> torch.device:
    """This rank's device: its own GPU of the node when training on CUDA with several processes."""
    if device.type == "cuda" and ranks.world_size > 1:
        return torch.device("cuda", ranks.local_rank)
    return device


def parallel_model(model: torch.nn.Module, parallel: str, device: torch.device) -> torch.nn.Module:
    """`model` (already on `device`) replicated (`ddp`) or sharded (`fsdp`) over the process group."""
    if parallel not in PARALLEL:
        raise UserError(f"parallel={parallel!r}; fix: use one of {', '.join(PARALLEL)}")
    if parallel == "none":
        return model
    if not group_running():
        raise UserError(f"parallel={parallel!r} needs a process group; fix: start the run with "
                        "torchrun --nproc-per-node N (or leave parallel='none' for one process)")
    if parallel == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    for layer in model.model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def unwrapped(model: torch.nn.Module) -> torch.nn.Module:
    """The model inside a DistributedDataParallel wrapper (FSDP2 keeps the model itself)."""
    return getattr(model, "module", model)


def gradient_sync(model: torch.nn.Module, enabled: bool):
    """A context in which backward passes reduce gradients over the ranks only when `enabled` (the last
    micro-batch of a step); the others only accumulate locally."""
    if enabled:
        return contextlib.nullcontext()
    if hasattr(model, "no_sync"):  # DistributedDataParallel
        return model.no_sync()
    if hasattr(model, "set_requires_gradient_sync"):  # FSDP2
        return _fsdp_without_sync(model)
    return contextlib.nullcontext()


@contextlib.contextmanager
def _fsdp_without_sync(model):
    model.set_requires_gradient_sync(False)
    try:
        yield
    finally:
        model.set_requires_gradient_sync(True)


def all_sum(value: torch.Tensor) -> torch.Tensor:
    """`value` summed over every rank (itself with one process)."""
    if group_running():
        value = value.clone()
        dist.all_reduce(value)
    return value


def local_value(value: torch.Tensor) -> torch.Tensor:
    """A plain tensor from what clipping returns (a DTensor under FSDP2)."""
    return value.full_tensor() if hasattr(value, "full_tensor") else value
