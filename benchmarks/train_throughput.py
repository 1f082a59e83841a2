"""Training throughput: the preset as it was against the new path, same preset, weights and batches, side by
side in one run, on real batches and on random ones.

- baseline: transformers' Llama, the loss and gradient norm read from the device after every step (the
  loop as it was: `log_every=1`), the batches loaded in the training process (no workers);
- new: the plain-PyTorch Llama (`helpers.training.llama`), the device read once every `log_every` steps,
  `default_num_workers` loader processes (on a GPU; none on a CPU).

Both copy the next batch to the GPU on a side stream (`helpers.training.staging`). `--variant MODE:KERNEL`
(repeatable) runs the new path once per torch.compile mode and loss kernel, e.g.
`max-autotune-no-cudagraphs:torch` or `default:liger` (`helpers.training.fused_loss`: the output layer and the
loss in one library kernel, GPU only).

    python benchmarks/train_throughput.py                       # on a GPU: the h100 preset; on a CPU: cpu-tiny
    python benchmarks/train_throughput.py --preset h100 --steps 60 --tokenizer mistral
    python benchmarks/train_throughput.py --data real --variant default:torch --variant default:liger

Prints, per path and data: tokens/s, MFU by PaLM's count (6·N + 12·L·H·Q·T, N without the input embedding,
as torchtitan and nanochat count) and by llm.c's (6·N with every parameter + 6·L·C·T), the share of step
time spent waiting for data, peak GPU memory, and the versions of torch and transformers. The first steps
(allocation, compilation) are left out of every rate. Real batches come from the workshop corpus tokenized
with `--tokenizer` into a temporary folder (or `--prefix`); random ones are asked for by name.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import transformers  # noqa: E402

from helpers.common.paths import RAW_DIR  # noqa: E402
from helpers.corpus.build import corpus_paths  # noqa: E402
from helpers.datasets.sidecar import data_facts  # noqa: E402
from helpers.loading.loader import make_dataloader  # noqa: E402
from helpers.preprocess import preprocess  # noqa: E402
from helpers.training.train import (  # noqa: E402
    COMPILE_MODES,
    LOSS_KERNELS,
    build_model,
    default_num_workers,
    flops_per_token,
    flops_per_token_llmc,
    llama_config,
    peak_flops,
    train,
    train_settings,
)

BASELINE = "baseline (as it was)"
DEFAULT_VARIANT = ("default", "torch")  # the new path as the h100 preset runs it


def variant(text: str) -> tuple[str, str]:
    """`MODE:KERNEL` as (torch.compile mode, loss kernel), each checked against its choices."""
    mode, _, kernel = text.partition(":")
    if mode not in COMPILE_MODES or kernel not in LOSS_KERNELS:
        raise argparse.ArgumentTypeError(f"{text!r}: expected MODE:KERNEL, MODE one of {', '.join(COMPILE_MODES)}, "
                                         f"KERNEL one of {', '.join(LOSS_KERNELS)}")
    return mode, kernel


def label(path) -> str:
    """A path's name in the table: the baseline, or the new path with its compile mode and loss kernel."""
    return path if path == BASELINE else "new path" if path == DEFAULT_VARIANT else f"new ({path[0]}, {path[1]} loss)"


def real_prefix(tokenizer: str, work: Path) -> str:
    """The whole workshop corpus as one Megatron prefix of `tokenizer`."""
    mixed = work / "mixed.jsonl"
    with open(mixed, "wb") as out:
        for path in corpus_paths(RAW_DIR).values():
            out.write(path.read_bytes())
    return preprocess(mixed, work / "mixed", tokenizer, append_eod=True, workers=2, progress=False).outputs["text"]


def measure(path, source: str, args, prefix: str, device: str) -> dict:
    """One run of the preset on `source` ("real" or "random") by `path`: BASELINE, or a new-path variant."""
    vocab_size = data_facts(prefix).vocab_size
    config = llama_config(args.preset, vocab_size=vocab_size)
    if path == BASELINE:
        implementation, workers = "transformers", 0
        settings = train_settings(args.preset, steps=args.steps, eval_every=0, log_every=1)
    else:
        implementation = "fast"
        workers = default_num_workers(device) if args.workers is None else args.workers
        mode, kernel = path
        settings = train_settings(args.preset, steps=args.steps, eval_every=0, compile_mode=mode, loss_kernel=kernel)
    loader = make_dataloader([prefix] if source == "real" else None, split="100,0,0",
                             seq_length=settings.seq_length, batch_size=settings.batch_size, seed=0,
                             num_samples=settings.steps * settings.batch_size, cache_dir=None,
                             source="real" if source == "real" else "synthetic", vocab_size=vocab_size,
                             num_workers=workers)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    model = build_model(config, device, seed=settings.seed, implementation=implementation)
    result = train(model, loader, settings, device, progress=False)
    peak = peak_flops(device)
    llmc = None if peak is None else flops_per_token_llmc(model, settings.seq_length) * result.tokens_per_s / peak
    return {"tokens/s": result.tokens_per_s, "MFU (PaLM)": result.mfu, "MFU (llm.c)": llmc,
            "data wait": result.data_wait_fraction,
            "peak GiB": torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else None,
            "flops/token (PaLM)": flops_per_token(config, settings.seq_length)}


def percent(value) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def main() -> None:
    cuda = torch.cuda.is_available()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="h100" if cuda else "cpu-tiny")
    parser.add_argument("--steps", type=int, default=60 if cuda else 12)
    parser.add_argument("--tokenizer", default="mistral" if cuda else "bytes")
    parser.add_argument("--prefix", default=None, help="a Megatron prefix instead of the corpus")
    parser.add_argument("--workers", type=int, default=None,
                        help="the new path's loader processes (default: 4 on a GPU, none on a CPU)")
    parser.add_argument("--variant", type=variant, action="append", default=None, metavar="MODE:KERNEL",
                        help="a new-path run: torch.compile mode and loss kernel (repeatable; default: default:torch)")
    parser.add_argument("--data", nargs="+", choices=("real", "random"), default=["real", "random"])
    parser.add_argument("--no-baseline", action="store_true", help="run the new-path variants only")
    parser.add_argument("--rounds", type=int, default=1 if cuda else 3, help="interleaved repeats of each run")
    args = parser.parse_args()
    device = "cuda" if cuda else "cpu"
    paths = ([] if args.no_baseline else [BASELINE]) + (args.variant or [DEFAULT_VARIANT])
    name = torch.cuda.get_device_name(0) if cuda else "CPU"
    print(f"{name}; torch {torch.__version__}, transformers {transformers.__version__}; preset {args.preset}, "
          f"{args.steps} steps, tokenizer {args.tokenizer}")
    with tempfile.TemporaryDirectory(prefix="train-throughput-") as folder:
        prefix = args.prefix or real_prefix(args.tokenizer, Path(folder))
        runs = {}
        for source in args.data:
            for _ in range(args.rounds):  # A, B, A, B, ...: a busy moment hits both paths alike
                for path in paths:
                    runs.setdefault((source, path), []).append(measure(path, source, args, prefix, device))
    rows = {key: sorted(measured, key=lambda row: row["tokens/s"])[len(measured) // 2]  # the median round
            for key, measured in runs.items()}
    print(f"\nmedian of {args.rounds} interleaved round(s)")
    print("| data | path | tokens/s | MFU (PaLM) | MFU (llm.c) | data wait | peak GiB |")
    print("|---|---|---|---|---|---|---|")
    for (source, path), row in rows.items():
        memory = "n/a" if row["peak GiB"] is None else f"{row['peak GiB']:.1f}"
        print(f"| {source} | {label(path)} | {row['tokens/s']:,.0f} | {percent(row['MFU (PaLM)'])} | "
              f"{percent(row['MFU (llm.c)'])} | {percent(row['data wait'])} | {memory} |")
    for source in args.data:
        for path in paths[1:] if paths[0] == BASELINE else []:
            speedup = rows[(source, path)]["tokens/s"] / rows[(source, BASELINE)]["tokens/s"]
            print(f"{source} batches: {label(path)} at {speedup:.2f}x the baseline's tokens/s")
    assert all(math.isfinite(row["tokens/s"]) for row in rows.values())


if __name__ == "__main__":
    main()
