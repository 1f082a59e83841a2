"""Hugging Face `Trainer` fed by the workshop's loader: a few steps of the same small Llama as
`helpers.training`, on real data, or on random tokens only when asked for by name.

    .venv/bin/python examples/trainer.py --data-path data/megatron/literature_text_document --csv runs/trainer.csv
    .venv/bin/python examples/trainer.py --synthetic --vocab-size 128256 --steps 30     # random tokens, said so
    .venv/bin/torchrun --nproc-per-node 2 examples/trainer.py --data-path data/megatron/literature_text_document

The loader's labels are already shifted: `samples_for_transformers` hands them to `Trainer` as
`shift_labels`, which transformers' causal-LM loss takes as they are (it would shift plain `labels` again).
Samples are taken in the loader's order (`train_sampling_strategy="sequential"`; the loader has already
shuffled them as Megatron does), so step k learns from the loader's global batch k, as in every other example.
Under torchrun, Trainer cuts each global batch itself: every rank reads the same sample order and takes the
per-device batches of its rank (rank r the r-th of each step's), the same rows the loader's own slices hold.
Missing data stops the run with one line naming the path and how to make it; nothing falls back.
`--audit` checks every batch the model is called with (`helpers.audit.AuditCallback`); `--plant-bug NAME`
does one of the silent data bugs to the batches first, and says so, to see the audit name it.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.audit import AuditCallback  # noqa: E402
from helpers.common.errors import UserError, run_cli  # noqa: E402
from helpers.loading.loader import samples_for_transformers  # noqa: E402
from helpers.training.distributed import Ranks, join_ranks, leave_ranks  # noqa: E402
from helpers.training.framework_runs import (  # noqa: E402
    ADAM_BETAS,
    StepLog,
    add_audit_flag,
    example_llama,
    example_loader,
    example_parser,
    example_vocab_size,
    global_batch_digest,
    planter_if_asked,
)


class DigestingCollator:
    """Transformers' default collation, noting the digest of each batch it hands the model, in order; with
    `--plant-bug`, the bug done to each batch first (on the loader's layout: `shift_labels` are its labels)."""

    def __init__(self, planter=None):
        from transformers import default_data_collator

        self.collate, self.digests, self.planter = default_data_collator, [], planter

    def __call__(self, samples):
        batch = self.collate(samples)
        if self.planter is not None:
            batch = self.planter({key: value for key, value in batch.items() if key != "shift_labels"})
            batch["shift_labels"] = batch["labels"]
        self.digests.append(global_batch_digest(batch["input_ids"]))
        return batch


def main(argv: list[str] | None = None) -> int:
    parser = example_parser(__doc__.split("\n\n")[0])
    add_audit_flag(parser)
    args = parser.parse_args(argv)
    ranks = join_ranks()
    if ranks.world_size > 1 and getattr(args, "plant_bug", None) == "rank-not-set":
        raise UserError("rank-not-set cannot be planted in Trainer: its own sampler gives each rank its slice; "
                        "fix: plant it in another framework (deepspeed, or helpers.training --parallel ddp)")
    loader = example_loader(args, Ranks())  # the whole global order: Trainer hands each rank its slice
    if args.global_batch_size % ranks.world_size:
        raise UserError(f"--global-batch-size {args.global_batch_size} does not split over {ranks.world_size} "
                        "processes; fix: give a multiple of --nproc-per-node")
    model = example_llama(args, loader)
    from transformers import Trainer, TrainingArguments

    collator = DigestingCollator(planter_if_asked(args, loader.source.vocab_size))
    with tempfile.TemporaryDirectory(prefix="trainer-") as folder:
        training = TrainingArguments(output_dir=folder, max_steps=args.steps,
                                     per_device_train_batch_size=args.global_batch_size // ranks.world_size,
                                     learning_rate=args.lr,
                                     lr_scheduler_type="constant", weight_decay=0.0, adam_beta1=ADAM_BETAS[0],
                                     adam_beta2=ADAM_BETAS[1], max_grad_norm=0.0, report_to=[], logging_steps=1,
                                     save_strategy="no", use_cpu=True, dataloader_drop_last=True, disable_tqdm=True,
                                     remove_unused_columns=False,
                                     train_sampling_strategy="sequential", seed=0)
        callbacks = [AuditCallback()] if args.audit else []  # what the model is called with, every step
        trainer = Trainer(model=model, args=training, train_dataset=samples_for_transformers(loader),
                          data_collator=collator, callbacks=callbacks)
        trainer.train()
        losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    log = StepLog(f"Trainer on {ranks.world_size} process(es)", ranks)
    for step, (loss, digest) in enumerate(zip(losses, collator.digests)):
        log.record(step, loss, digest)
    log.finish(args, example_vocab_size(args, loader))
    leave_ranks()
    return 0


if __name__ == "__main__":
    run_cli(main)
