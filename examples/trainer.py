"""Hugging Face `Trainer` fed by the workshop's loader: a few steps of the same small Llama as
`helpers.training`, on real data, or on random tokens only when asked for by name.

    .venv/bin/python examples/trainer.py --data-path data/megatron/literature_text_document --steps 30
    .venv/bin/python examples/trainer.py --synthetic --vocab-size 128256 --steps 30     # random tokens, said so

The loader's labels are already shifted: `samples_for_transformers` hands them to `Trainer` as
`shift_labels`, which transformers' causal-LM loss takes as they are (it would shift plain `labels` again).
Missing data stops the run with one line naming the path and how to make it; nothing falls back.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.common.errors import UserError, run_cli  # noqa: E402
from helpers.loading.loader import make_dataloader, samples_for_transformers  # noqa: E402
from helpers.training.command import assignments  # noqa: E402
from helpers.training.train import build_model, llama_config  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-path", nargs="+", help="Megatron prefixes or a weighted blend")
    parser.add_argument("--synthetic", action="store_true", help="random tokens, asked for by name")
    parser.add_argument("--vocab-size", type=int, default=None, help="with --synthetic")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--model", action="append", default=[], metavar="KEY=VALUE", help="model override")
    args = parser.parse_args(argv)
    if not args.data_path and not args.synthetic:
        raise UserError("no --data-path; fix: pass Megatron prefixes (make them with python -m helpers.preprocess), "
                        "or ask for random tokens by name with --synthetic --vocab-size N")
    from transformers import Trainer, TrainingArguments

    loader = make_dataloader(None if args.synthetic else args.data_path, split="100,0,0", seq_length=args.seq_length,
                             batch_size=args.batch_size, num_samples=args.steps * args.batch_size, seed=0,
                             source="synthetic" if args.synthetic else "real", vocab_size=args.vocab_size,
                             cache_dir=None)
    vocab_size = getattr(loader.source, "vocab_size", None)
    overrides = {"max_position_embeddings": args.seq_length, **assignments(args.model, "--model")}
    model = build_model(llama_config("cpu-tiny", vocab_size=vocab_size, **overrides), seed=0)
    with tempfile.TemporaryDirectory(prefix="trainer-") as folder:
        training = TrainingArguments(output_dir=folder, max_steps=args.steps,
                                     per_device_train_batch_size=args.batch_size, learning_rate=args.lr,
                                     lr_scheduler_type="constant", report_to=[],
                                     logging_steps=max(args.steps // 5, 1), save_strategy="no", use_cpu=True,
                                     dataloader_drop_last=True, disable_tqdm=True, seed=0)
        trainer = Trainer(model=model, args=training, train_dataset=samples_for_transformers(loader))
        trainer.train()
        losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    print(f"Trainer, {args.steps} steps of {args.batch_size} x {args.seq_length}: loss {losses[0]:.4f} -> "
          f"{losses[-1]:.4f} (ln V = {math.log(vocab_size):.4f})")
    return 0


if __name__ == "__main__":
    run_cli(main)
