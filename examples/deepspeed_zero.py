"""DeepSpeed ZeRO (stage 1, 2 or 3) fed by the workshop's loader: a few steps of the same small Llama as
`helpers.training`, on real data, or on random tokens only when asked for by name. The model is its plain-PyTorch
implementation (`helpers/training/llama.py`): transformers' Llama's function and initial weights, without
importing transformers.

    .venv/bin/torchrun --nproc-per-node 2 examples/deepspeed_zero.py --zero-stage 2 \\
        --data-path data/megatron/literature_text_document --steps 30
    .venv/bin/torchrun --nproc-per-node 2 examples/deepspeed_zero.py --synthetic --vocab-size 128256   # said so

Each rank reads its slice of every global batch from `make_dataloader(rank=, world_size=)`; DeepSpeed
averages the gradients and (from stage 1 up) shards the optimizer state, then the gradients (2), then the
parameters (3). On a machine without GPUs DeepSpeed runs on its CPU accelerator over gloo. Nothing is compiled:
Adam is torch's own (`torch_adam`), not a fused kernel, and the shared-memory op DeepSpeed's communication
backend would build with g++ at its first start (half a minute, then a second at every start to load it) serves
only its inference all-reduce, so it is left out (`without_the_inference_op`).
Missing data stops the run with one line naming the path and how to make it; nothing falls back.
`--audit` checks every batch before its step (the ranks compare theirs); `--plant-bug NAME` does one of the
silent data bugs to the batches first, and says so, to see the audit name it.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.common.errors import UserError, run_cli  # noqa: E402
from helpers.common.paths import CACHE_DIR  # noqa: E402
from helpers.training.distributed import join_ranks, leave_ranks  # noqa: E402
from helpers.training.framework_runs import (  # noqa: E402
    ADAM_BETAS,
    StepLog,
    add_audit_flag,
    batches_for_the_model,
    example_llama,
    example_loader,
    example_parser,
    example_vocab_size,
    global_batch_digest,
    mean_over_ranks,
)
from helpers.training.train import next_token_loss, to_device  # noqa: E402


def deepspeed_config(args, world_size: int) -> dict:
    """The run as DeepSpeed's configuration: no accumulation (each rank takes its slice whole), fp32, the
    asked ZeRO stage, and the optimizer of every example (Adam, constant rate, no weight decay, no clipping
    unless asked)."""
    micro_batch = args.global_batch_size // world_size
    return {
        "train_batch_size": args.global_batch_size,
        "train_micro_batch_size_per_gpu": micro_batch,
        "gradient_accumulation_steps": 1,
        "optimizer": {"type": "Adam", "params": {"lr": args.lr, "betas": list(ADAM_BETAS), "weight_decay": 0.0,
                                                 "torch_adam": True}},
        "gradient_clipping": args.gradient_clipping,  # DeepSpeed clips at 1.0 unless told otherwise
        "zero_optimization": {"stage": args.zero_stage},
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }


def without_the_inference_op() -> None:
    """Keep DeepSpeed's communication backend from building its shared-memory C++ op: only its
    `inference_all_reduce` calls it, while training's all-reduce is torch.distributed's own."""
    importlib.import_module("deepspeed.comm.torch").build_shm_op = lambda: None  # the module, not torch


def main(argv: list[str] | None = None) -> int:
    parser = example_parser(__doc__.split("\n\n")[0])
    add_audit_flag(parser)
    parser.add_argument("--zero-stage", type=int, choices=(1, 2, 3), default=2)
    parser.add_argument("--gradient-clipping", type=float, default=0.0,
                        help="clip the gradient norm here (0: off, as the other examples; DeepSpeed's default: 1.0)")
    args = parser.parse_args(argv)
    ranks = join_ranks(group_of_one=True)
    loader = example_loader(args, ranks)
    model = example_llama(args, loader, implementation="fast")  # plain PyTorch: no transformers to import
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(CACHE_DIR / "torch_extensions"))
    for name, value in (("RANK", ranks.rank), ("LOCAL_RANK", ranks.local_rank), ("WORLD_SIZE", ranks.world_size)):
        os.environ.setdefault(name, str(value))  # what torchrun sets; DeepSpeed reads them even on one process
    try:
        import deepspeed
    except ImportError:
        raise UserError("deepspeed is not installed; fix: .venv/bin/pip install -e '.[deepspeed]'") from None
    without_the_inference_op()
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                           config=deepspeed_config(args, ranks.world_size))
    log = StepLog(f"DeepSpeed ZeRO-{args.zero_stage} on {ranks.world_size} process(es)", ranks)
    batches = batches_for_the_model(args, loader, example_vocab_size(args, loader))
    for step, batch in enumerate(batches):
        loss = next_token_loss(engine, to_device(batch, engine.device, model))
        engine.backward(loss)
        engine.step()
        log.record(step, mean_over_ranks(loss), global_batch_digest(batch["input_ids"]))
    log.finish(args, example_vocab_size(args, loader))
    engine.destroy()  # ZeRO-3's hooks and pending gathers go before the process group does
    leave_ranks()
    return 0


if __name__ == "__main__":
    run_cli(main)
