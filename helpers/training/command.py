"""A few training steps of a preset's Llama on real data, on one process or several, from one loader:

    python -m helpers.training --data-path data/megatron/literature_text_document --steps 50
    torchrun --nproc-per-node 2 -m helpers.training --data-path data/megatron/literature_text_document \\
        --parallel ddp --global-batch-size 32 --micro-batch-size 8 --steps 50 --csv runs/ddp.csv

`--global-batch-size` is the batch one optimizer step learns from, whatever the number of processes: rank r
of N reads its N-th of it (`make_dataloader(rank=r, world_size=N)`), in micro-batches when
`--micro-batch-size` is smaller. The same global batch on 1 or N processes takes the same steps. Random
tokens only with `--synthetic` (and `--vocab-size`); missing real data is an error, never a fallback.
`--model KEY=VALUE` and `--train KEY=VALUE` override the preset (e.g. `--model hidden_size=64`,
`--train dtype=float64`). Rank 0 prints the summary and writes `--csv`. `--checkpoint-dir` saves the whole
run; `--resume` continues it, on the same or another number of processes, with the steps an uninterrupted
run would have taken (with another `--global-batch-size`, its samples: `--steps` counts the first run's global
batches); `--data-schedule FILE` changes the mix by step (`helpers.loading.schedule`), and a run resumed with
other weights or another schedule continues every dataset where it stood. `--audit` checks every batch before
its step (`helpers.audit`; under torchrun the ranks compare their batches) and stops the run at the first
finding, in one line; `--plant-bug NAME` does one of the silent data bugs of
`helpers.audit.planting` to the real batches, and says so, to see the audit name it.
"""

from __future__ import annotations

from pathlib import Path

import torch
import yaml

from ..audit.planting import loader_rank, model_vocab_size
from ..common.cli import CommandParser
from ..common.errors import UserError
from ..loading.loader import make_dataloader
from ..loading.schedule import load_schedule_file
from .audit_flags import add_audit_flag, batches_for_the_model
from .distributed import PARALLEL, join_ranks, leave_ranks
from .run_length import resuming_global_batch
from .train import (
    IMPLEMENTATIONS,
    PRESETS,
    CheckpointPlan,
    TrainSettings,
    build_model,
    default_num_workers,
    model_shape,
    preset_implementation,
    train,
    train_settings,
)


def assignments(pairs: list[str], flag: str) -> dict:
    """`KEY=VALUE` pairs as a dict, each value a number where it reads as one (`64` an int, `3e-3` a float,
    which YAML alone would leave a string), else read as YAML (`true` a bool, `bfloat16` a string)."""
    parsed = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise UserError(f"{flag} {pair}: not KEY=VALUE; fix: e.g. {flag} hidden_size=64")
        parsed[key] = setting_value(value)
    return parsed


def setting_value(text: str):
    """`text` as an int, else a float, else whatever YAML reads it as."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return yaml.safe_load(text)


def command_parser() -> CommandParser:
    """The flags of `python -m helpers.training`."""
    parser = CommandParser(prog="python -m helpers.training", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-path", nargs="+",
                        help="Megatron prefixes or a weighted blend, a .npy, or a shard folder")
    parser.add_argument("--data-schedule", type=Path, default=None, metavar="FILE",
                        help="instead of --data-path: a YAML of 'datasets' and their weights by 'phases' from a step")
    parser.add_argument("--synthetic", action="store_true", help="random tokens instead of data, asked for by name")
    parser.add_argument("--vocab-size", type=int, default=None, help="with --synthetic: the range of the tokens")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu-tiny")
    parser.add_argument("--steps", type=int, default=None, help="optimizer steps (default: the preset's)")
    parser.add_argument("--global-batch-size", type=int, default=None, help="samples per step, all ranks together")
    parser.add_argument("--micro-batch-size", type=int, default=None, help="accumulate gradients in pieces this big")
    parser.add_argument("--seq-length", type=int, default=None)
    parser.add_argument("--split", default="969,30,1", help="train/valid/test shares, as Megatron's --split")
    parser.add_argument("--parallel", choices=PARALLEL, default="none",
                        help="ddp (replicas) or fsdp (FSDP2 shards) under torchrun; none for one process")
    parser.add_argument("--model", action="append", default=[], metavar="KEY=VALUE", help="model override")
    parser.add_argument("--implementation", choices=IMPLEMENTATIONS, default=None,
                        help="transformers' Llama or the plain-PyTorch one (default: the preset's)")
    parser.add_argument("--train", action="append", default=[], metavar="KEY=VALUE", help="training override")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--num-workers", type=int, default=None,
                        help="loader worker processes per rank (default: 4 on a GPU, none on a CPU)")
    parser.add_argument("--csv", type=Path, default=None, help="the per-step log (rank 0)")
    parser.add_argument("--checkpoint-dir", type=Path, default=None, help="save the whole run here (resumable)")
    parser.add_argument("--checkpoint-every", type=int, default=0, help="steps between checkpoints (0: at the end)")
    parser.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in --checkpoint-dir")
    parser.add_argument("--until-step", type=int, default=None,
                        help="end this run before this step, checkpointed (a job's time limit)")
    add_audit_flag(parser)
    parser.add_argument("--no-progress", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = command_parser().parse_args(argv)
    data_path, schedule = data_to_train_on(args)
    ranks = join_ranks()
    settings = settings_of_flags(args, ranks.world_size)
    loader = loader_of_flags(args, (data_path, schedule), settings, ranks)
    model_overrides = {"max_position_embeddings": settings.seq_length, **assignments(args.model, "--model")}
    vocab_size = model_overrides.pop("vocab_size", None) or getattr(loader.source, "vocab_size", None)
    if vocab_size is None:
        raise UserError("the data names no vocabulary size; fix: pass --model vocab_size=N")
    vocab_size = model_vocab_size(args.plant_bug, vocab_size)
    model = build_model(model_shape(args.preset, vocab_size=vocab_size, **model_overrides), seed=settings.seed,
                        implementation=args.implementation or preset_implementation(args.preset))
    checkpoints = checkpoint_plan(args)
    batches = batches_for_the_model(args, loader, vocab_size)
    result = train(model, batches, settings, args.device, progress=not args.no_progress, csv_path=args.csv,
                   parallel=args.parallel, micro_batch_size=args.micro_batch_size, checkpoints=checkpoints)
    if ranks.main:
        print(f"{len(result.log)} steps on {ranks.world_size} process(es), parallel {args.parallel}: final loss "
              f"{result.final_loss:.4f}, {result.tokens_per_s:,.0f} tokens/s"
              + (f", log in {args.csv}" if args.csv else ""))
    leave_ranks()
    return 0


def data_to_train_on(args) -> tuple[list[str] | None, list | None]:
    """The datasets (`--data-path`, or those of `--data-schedule`) and the schedule (None for a fixed blend);
    no data without `--synthetic` is an error, never a fallback to random tokens."""
    if args.data_path and args.data_schedule:
        raise UserError("both --data-path and --data-schedule; fix: name the datasets in the schedule file only")
    data_path, schedule = args.data_path, None
    if args.data_schedule is not None:
        data_path, schedule = load_schedule_file(args.data_schedule)
    if not data_path and not args.synthetic:
        raise UserError("no --data-path; fix: pass Megatron prefixes (make them with python -m helpers.preprocess), "
                        "or ask for random tokens by name with --synthetic --vocab-size N")
    return data_path, schedule


def settings_of_flags(args, world_size: int) -> TrainSettings:
    """The preset's training settings with `--train` and the flags that name a setting put in over them; the
    global batch must split evenly over the processes."""
    overrides = assignments(args.train, "--train")
    for name, value in (("steps", args.steps), ("batch_size", args.global_batch_size), ("seq_length", args.seq_length)):
        if value is not None:
            overrides[name] = value
    settings = train_settings(args.preset, **overrides)
    if settings.batch_size % world_size:
        raise UserError(f"--global-batch-size {settings.batch_size} does not split over {world_size} "
                        "processes; fix: give a multiple of --nproc-per-node")
    return settings


def loader_of_flags(args, data: tuple, settings: TrainSettings, ranks):
    """This rank's loader of `data` (datasets and schedule) for `settings`: its share of each global batch, for
    the steps of the run that started (a resume with another batch takes that run's samples)."""
    data_path, schedule = data
    workers = args.num_workers if args.num_workers is not None else default_num_workers(args.device)
    step_samples = (resuming_global_batch(args.checkpoint_dir) if args.resume else None) or settings.batch_size
    return make_dataloader(None if args.synthetic else data_path, schedule=schedule, split=args.split,
                           seq_length=settings.seq_length, batch_size=settings.batch_size // ranks.world_size,
                           seed=settings.seed, num_samples=settings.steps * step_samples,
                           samples_per_step=step_samples,
                           rank=loader_rank(args.plant_bug, ranks.rank, ranks.world_size),
                           world_size=ranks.world_size, source="synthetic" if args.synthetic else "real",
                           vocab_size=args.vocab_size, cache_dir=None, num_workers=workers)


def checkpoint_plan(args) -> CheckpointPlan | None:
    """`--checkpoint-dir`'s plan (None without one; `--resume` and `--until-step` need it)."""
    if args.checkpoint_dir is not None:
        return CheckpointPlan(folder=args.checkpoint_dir, every=args.checkpoint_every, resume=args.resume,
                              until_step=args.until_step)
    if args.resume or args.until_step is not None:
        raise UserError("--resume and --until-step need --checkpoint-dir; fix: name the folder of the checkpoints")
    return None
