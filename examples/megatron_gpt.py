"""Megatron: megatron-core's `GPTDataset` reading the workshop's prefixes, feeding megatron-core's `GPTModel`
(the same small Llama, from the same initial weights) for a few steps; random tokens only when asked for by name.

    .venv/bin/torchrun --nproc-per-node 2 examples/megatron_gpt.py \\
        --data-path data/megatron/literature_text_document --steps 30
    .venv/bin/torchrun --nproc-per-node 2 examples/megatron_gpt.py --synthetic --vocab-size 128256    # said so

Each rank takes its slice of every global batch as Megatron's pretraining sampler cuts it; the samples are
megatron-core's own, byte for byte the ones `make_dataloader` gives (the batch digests in `--csv` agree with
the other examples'). On a GPU the model is megatron-core's local spec as it ships; on a CPU its attention
slot holds torch's SDPA with rotary positions (see `helpers.training.megatron_model` for why).
Missing data stops the run with one line naming the path and how to make it; nothing falls back.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from helpers.common.errors import run_cli  # noqa: E402
from helpers.training.distributed import join_ranks, leave_ranks, rank_device  # noqa: E402
from helpers.training.framework_runs import (  # noqa: E402
    ADAM_BETAS,
    StepLog,
    example_loader,
    example_parser,
    example_vocab_size,
    example_weights,
    global_batch_digest,
    mean_over_ranks,
)


def main(argv: list[str] | None = None) -> int:
    parser = example_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args(argv)
    ranks = join_ranks(group_of_one=True)
    loader = example_loader(args, ranks)  # checks the data (one line if missing) and gives random tokens by name
    from helpers.training.megatron_model import (
        copy_llama_weights,
        from_our_layout,
        megatron_batch,
        megatron_gpt,
        megatron_loss,
        megatron_train_samples,
        start_megatron,
    )

    device = rank_device(torch.device(args.device), ranks)
    start_megatron(seed=0, device=device)
    llama = example_weights(args, loader)  # the weights every example starts from, copied into Megatron's layout
    model = copy_llama_weights(megatron_gpt(llama.config, device), llama)
    if ranks.world_size > 1:
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, betas=ADAM_BETAS)
    samples = None if args.synthetic else megatron_train_samples(
        args.data_path, args.seq_length, args.steps * args.global_batch_size, seed=0)
    if samples is None:
        batches = (from_our_layout(batch) for batch in loader)
    else:
        batches = (megatron_batch(samples, step, loader.batch_size, ranks) for step in range(len(loader)))
    log = StepLog(f"Megatron GPTModel on {ranks.world_size} process(es)", ranks)
    for step, batch in enumerate(batches):
        loss = megatron_loss(model, {key: value.to(device) for key, value in batch.items()})
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        log.record(step, mean_over_ranks(loss), global_batch_digest(batch["tokens"]))
    log.finish(args, example_vocab_size(args, loader))
    leave_ranks()
    return 0


if __name__ == "__main__":
    run_cli(main)
