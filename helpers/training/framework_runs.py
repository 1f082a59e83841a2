"""What every framework example under `examples/` shares, so that each script shows only its framework:
the same flags, the same refusal of missing data, the same loader and small Llama, and one log whose rows
can be compared across frameworks (the loss of each step, and a digest of the global batch it learned from).
Every example takes the same optimizer steps: Adam with `helpers.training`'s betas at a constant rate, no
weight decay, no clipping; so on the same batches every framework draws the same loss curve.

The digest of a global batch hashes each row of `input_ids` and then the rows in order, so it is the same
whether one process read the whole batch or N processes read a slice each: batch k of a DeepSpeed run on 2
processes and batch k of a `Trainer` run on one have equal digests exactly when they are the same tensor.
"""

from __future__ import annotations

import argparse
import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import xxhash

from ..audit.planting import loader_rank, model_vocab_size
from ..common.cli import CommandParser
from ..common.errors import UserError
from ..common.files import written_atomically
from ..loading.loader import TokenBatches, make_dataloader
from .audit_flags import add_audit_flag, batches_for_the_model, planter_if_asked
from .distributed import Ranks, group_running
from .train import ADAM_BETAS

__all__ = ["ADAM_BETAS", "StepLog", "add_audit_flag", "batches_for_the_model", "example_llama", "example_loader",
           "example_parser", "example_vocab_size", "example_weights", "global_batch_digest", "llama_shape",
           "mean_over_ranks", "planter_if_asked", "refuse_missing_data", "row_digests"]

EXAMPLE_SEED = 0
FINAL_LINE = "{name}, {steps} steps of {batch} x {seq}: loss {first:.4f} -> {last:.4f} (ln V = {ln_v:.4f})"


def refuse_missing_data(data_path, synthetic: bool) -> None:
    """No data named and no random tokens asked for: one line saying how to get either."""
    if not data_path and not synthetic:
        raise UserError("no --data-path; fix: pass Megatron prefixes (make them with python -m helpers.preprocess), "
                        "or ask for random tokens by name with --synthetic --vocab-size N")


def example_parser(description: str) -> argparse.ArgumentParser:
    """The flags every framework example takes, with the same meaning in each."""
    parser = CommandParser(description=description)
    parser.add_argument("--data-path", nargs="+", help="Megatron prefixes or a weighted blend, a .npy, or shards")
    parser.add_argument("--synthetic", action="store_true", help="random tokens, asked for by name")
    parser.add_argument("--vocab-size", type=int, default=None, help="with --synthetic: the range of the tokens")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--global-batch-size", type=int, default=8, help="samples per step, all ranks together")
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--model", action="append", default=[], metavar="KEY=VALUE", help="model override")
    parser.add_argument("--csv", type=Path, default=None, help="step, loss and batch digest of each step (rank 0)")
    return parser


def example_loader(args: argparse.Namespace, ranks: Ranks) -> TokenBatches:
    """This rank's slice of each global batch, real data unless random tokens were asked for by name."""
    refuse_missing_data(args.data_path, args.synthetic)
    if args.global_batch_size % ranks.world_size:
        raise UserError(f"--global-batch-size {args.global_batch_size} does not split over {ranks.world_size} "
                        "processes; fix: give a multiple of --nproc-per-node")
    return make_dataloader(None if args.synthetic else args.data_path, split="100,0,0", seq_length=args.seq_length,
                           batch_size=args.global_batch_size // ranks.world_size,
                           num_samples=args.steps * args.global_batch_size, seed=EXAMPLE_SEED,
                           rank=loader_rank(getattr(args, "plant_bug", None), ranks.rank, ranks.world_size),
                           world_size=ranks.world_size, source="synthetic" if args.synthetic else "real",
                           vocab_size=args.vocab_size, cache_dir=None)


def example_vocab_size(args: argparse.Namespace, loader: TokenBatches) -> int:
    """The vocabulary the data was made with (or `--model vocab_size=N`)."""
    from .command import assignments

    vocab_size = assignments(args.model, "--model").get("vocab_size") or getattr(loader.source, "vocab_size", None)
    if vocab_size is None:
        raise UserError("the data names no vocabulary size; fix: pass --model vocab_size=N")
    return model_vocab_size(getattr(args, "plant_bug", None), vocab_size)


def llama_shape(args: argparse.Namespace, loader: TokenBatches):
    """The workshop's small Llama's shape (`cpu-tiny`, with `--model` overrides), a `LlamaShape`."""
    from .command import assignments
    from .train import model_shape

    overrides = {"max_position_embeddings": args.seq_length, **assignments(args.model, "--model")}
    overrides["vocab_size"] = example_vocab_size(args, loader)
    return model_shape("cpu-tiny", **overrides)


def example_llama(args: argparse.Namespace, loader: TokenBatches, implementation: str = "transformers"):
    """The workshop's small Llama, the same initial weights in every example: transformers' model, or the
    plain-PyTorch one (`"fast"`: the same function, built without importing transformers)."""
    from .train import build_model

    return build_model(llama_shape(args, loader), seed=EXAMPLE_SEED, implementation=implementation)


def example_weights(args: argparse.Namespace, loader: TokenBatches):
    """`example_llama`'s initial weights under transformers' names, drawn without importing transformers (for a
    framework with a model of its own, which copies them in)."""
    from .llama_shape import TransformersLayout

    torch.manual_seed(EXAMPLE_SEED)
    return TransformersLayout(llama_shape(args, loader))


def row_digests(input_ids: torch.Tensor) -> torch.Tensor:
    """One 64-bit hash per row of a `[batch, seq]` id tensor (as int64, so every rank can gather them)."""
    rows = np.ascontiguousarray(input_ids.detach().cpu().numpy().astype(np.int64, copy=False))
    return torch.tensor([np.int64(np.uint64(xxhash.xxh64_intdigest(row.tobytes())).view(np.int64)) for row in rows])


def global_batch_digest(input_ids: torch.Tensor) -> str:
    """A digest of the whole global batch this rank's `input_ids` are a slice of, the same on every rank
    and for any number of ranks."""
    digests = row_digests(input_ids)
    if group_running():  # gathered where the backend works: NCCL only gathers CUDA tensors
        local = digests.to(collective_device())
        gathered = [torch.empty_like(local) for _ in range(torch.distributed.get_world_size())]
        torch.distributed.all_gather(gathered, local)
        digests = torch.cat(gathered).cpu()
    return xxhash.xxh64_hexdigest(digests.numpy().tobytes())


def collective_device() -> torch.device:
    """Where this rank's collectives take their tensors: its GPU under NCCL, the CPU under gloo."""
    if torch.distributed.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def mean_over_ranks(value: torch.Tensor) -> float:
    """A rank's scalar averaged over every rank (the global batch's loss when each rank holds its slice's)."""
    value = value.detach().float().reshape(1)
    if group_running():
        value = value.clone()
        torch.distributed.all_reduce(value)
        value /= torch.distributed.get_world_size()
    return float(value)


@dataclass
class StepLog:
    """The rows of one example run: step, loss and the digest of the global batch; rank 0 writes them."""

    name: str
    ranks: Ranks
    rows: list[dict] = field(default_factory=list)

    def record(self, step: int, loss: float, digest: str) -> None:
        self.rows.append({"step": step, "loss": loss, "batch_digest": digest})

    def finish(self, args: argparse.Namespace, vocab_size: int) -> None:
        """On rank 0: the CSV (written whole or not at all) and one line with the first and last loss."""
        if not self.ranks.main:
            return
        if not self.rows:
            raise UserError(f"{self.name} took no step; fix: ask for --steps 1 or more")
        if args.csv is not None:
            with written_atomically(args.csv, newline="") as out:
                writer = csv.DictWriter(out, fieldnames=["step", "loss", "batch_digest"])
                writer.writeheader()
                writer.writerows(self.rows)
        print(FINAL_LINE.format(name=self.name, steps=len(self.rows), batch=args.global_batch_size,
                                seq=args.seq_length, first=self.rows[0]["loss"], last=self.rows[-1]["loss"],
                                ln_v=math.log(vocab_size)), flush=True)
