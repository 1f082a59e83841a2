"""The Megatron-LM command line that trains the same model on the same `.bin/.idx` files."""

from __future__ import annotations

from ..common.errors import UserError


def megatron_pretrain_command(config, settings, data_path: list[str], split: str, tokenizer_dir: str, *,
                              seed: int, gpus: int = 8) -> str:
    """`torchrun ... pretrain_gpt.py` with Megatron's flag for each field of our Llama config and settings.

    `data_path` is the `--data-path` list (weights and prefixes) and `tokenizer_dir` a folder written by
    `python -m helpers.tokenizers export`, which Megatron reads as a Hugging Face tokenizer: give both
    relative to the folder the command runs in. `settings.batch_size` is the global batch, as in our loop:
    each of the `gpus` processes takes an equal share of it, so the learning rate means the same. `seed` is
    the loader's: Megatron's one `--seed` also orders the samples, so it must be the data's to read the
    same batches (its initial weights differ from ours whatever the seed).
    """
    if settings.batch_size % gpus:
        raise UserError(f"a global batch of {settings.batch_size} does not split over {gpus} GPUs; "
                        f"fix: a batch size that is a multiple of {gpus}, or another number of GPUs")
    flags = [
        ("--num-layers", config.num_hidden_layers), ("--hidden-size", config.hidden_size),
        ("--ffn-hidden-size", config.intermediate_size), ("--num-attention-heads", config.num_attention_heads),
        ("--num-query-groups", config.num_key_value_heads), ("--seq-length", settings.seq_length),
        ("--max-position-embeddings", settings.seq_length), ("--micro-batch-size", settings.batch_size // gpus),
        ("--global-batch-size", settings.batch_size), ("--train-iters", settings.steps),
        ("--lr", settings.lr), ("--min-lr", settings.min_lr), ("--lr-decay-style", "cosine"),
        ("--lr-warmup-iters", settings.warmup_steps), ("--weight-decay", settings.weight_decay),
        ("--clip-grad", settings.grad_clip), ("--adam-beta1", 0.9), ("--adam-beta2", 0.95),
        ("--eval-interval", settings.eval_every), ("--eval-iters", settings.eval_batches),
        ("--seed", seed), ("--split", split),
        ("--tokenizer-type", "HuggingFaceTokenizer"), ("--tokenizer-model", tokenizer_dir),
    ]
    switches = ["--swiglu", "--normalization RMSNorm", "--position-embedding-type rope", "--disable-bias-linear",
                "--attention-dropout 0", "--hidden-dropout 0", "--group-query-attention"]
    if not config.tie_word_embeddings:
        switches.append("--untie-embeddings-and-output-weights")
    if settings.dtype == "bfloat16":
        switches.append("--bf16")
    lines = [f"torchrun --nproc-per-node {gpus} pretrain_gpt.py"]
    lines.append("--data-path " + " ".join(data_path))
    lines += [f"{flag} {value}" for flag, value in flags]
    lines += switches
    return " \\\n    ".join(lines)
