"""Loader throughput: our batches against megatron-core's GPTDataset with torch's default_collate.

    python benchmarks/loader_throughput.py [--prefix data/megatron/literature_text_document]
        [--batch-size 32] [--seq-length 2048] [--batches 200] [--h100-tokens-per-s 500000]

Both read the same Megatron prefix, the same samples in the same order (checked token for token on the
first batches), in one process, no workers, after one warm-up batch, with torch's default threads. Megatron
is timed twice: with its default `create_attention_mask=True` (a [S, S] mask per sample) and without it.
Every rate is measured twice: on an idle machine, and beside one other process spinning on a core (as on
a GPU node, where other ranks and workers hold cores). The last line compares
our rate with what a training run consumes (`--h100-tokens-per-s`, e.g. the h100 preset's measured rate).
Without a prefix, the workshop corpus is tokenized into a temporary folder first (llama3, all domains).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from helpers.common.paths import RAW_DIR  # noqa: E402
from helpers.corpus.build import corpus_paths  # noqa: E402
from helpers.datasets.sidecar import data_facts  # noqa: E402
from helpers.loading.loader import make_dataloader  # noqa: E402
from helpers.preprocess import preprocess  # noqa: E402

OURS = "ours (vectorised gather, numpy batch)"


def corpus_prefix(work: Path) -> str:
    """The whole workshop corpus as one llama3 Megatron prefix."""
    mixed = work / "mixed.jsonl"
    with open(mixed, "wb") as out:
        for path in corpus_paths(RAW_DIR).values():
            out.write(path.read_bytes())
    return preprocess(mixed, work / "mixed", "llama3", append_eod=True, workers=2, progress=False).outputs["text"]


def megatron_dataset(prefix: str, seq_length: int, num_samples: int, seed: int, create_attention_mask: bool):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
        from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig

        facts = data_facts(prefix)
        config = GPTDatasetConfig(
            random_seed=seed, sequence_length=seq_length, split="100,0,0", blend=([prefix], None),
            tokenizer=SimpleNamespace(vocab_size=facts.vocab_size, eod=facts.eod_id, pad=-1,
                                      special_tokens_dict={}, unique_identifiers={"class": facts.tokenizer}),
            reset_position_ids=False, reset_attention_mask=False, eod_mask_loss=False, path_to_cache=None,
            mmap_bin_files=True, create_attention_mask=create_attention_mask)
        return BlendedMegatronDatasetBuilder(GPTDataset, [num_samples, None, None], lambda: True, config).build()[0]


@contextmanager
def busy_process():
    """Another process spinning on one core for as long as the block runs: the usual state of a GPU node
    (other ranks, DataLoader workers, the CPU side of the training step)."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        yield
    finally:
        spinner.kill()
        spinner.wait()


def rate(next_batch, batches: int) -> float:
    """Batches per second over `batches` calls, after one warm-up call."""
    next_batch(0)
    start = time.perf_counter()
    for step in range(1, batches + 1):
        next_batch(step)
    return batches / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefix", help="Megatron prefix with a sidecar (default: the corpus, tokenized now)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-length", type=int, default=2048)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--h100-tokens-per-s", type=float, default=None,
                        help="tokens/s a training run consumes, to compare with")
    args = parser.parse_args()

    prefix = args.prefix or corpus_prefix(Path(tempfile.mkdtemp(prefix="loader-bench-")))
    B, S = args.batch_size, args.seq_length
    num_samples = (args.batches + 1) * B
    ours = make_dataloader([prefix], split="100,0,0", seq_length=S, batch_size=B, num_samples=num_samples,
                           seed=args.seed, cache_dir=None)
    collate = torch.utils.data.default_collate
    megatron = {mask: megatron_dataset(prefix, S, num_samples, args.seed, mask) for mask in (True, False)}

    for step in range(3):  # the same samples, in the same order
        theirs = collate([megatron[False][step * B + b] for b in range(B)])
        assert torch.equal(ours.batch_at(step)["input_ids"], theirs["tokens"].long()), "samples differ"

    def measure() -> dict[str, float]:
        results = {OURS: rate(ours.batch_at, args.batches)}
        for mask, dataset in megatron.items():
            name = f"megatron-core GPTDataset + default_collate (create_attention_mask={mask})"
            results[name] = rate(lambda step, d=dataset: collate([d[step * B + b] for b in range(B)]),
                                 args.batches if not mask else max(args.batches // 4, 10))
        return results

    print(f"batches of {B} x {S} tokens from {prefix}, one process, no workers, torch with its default "
          f"{torch.get_num_threads()} threads")
    idle = measure()
    with busy_process():
        busy = measure()
    for condition, results in (("machine idle", idle), ("beside one busy process", busy)):
        print(condition)
        for name, value in results.items():
            print(f"  {name:<72} {value:8.1f} batches/s  {value * B * S / 1e6:8.2f} M tokens/s"
                  f"  ratio {results[OURS] / value:6.2f}")
    print(f"ours beside a busy process / ours idle: {busy[OURS] / idle[OURS]:.2f}")
    if args.h100_tokens_per_s:
        print(f"ours / training consumption ({args.h100_tokens_per_s:,.0f} tokens/s): "
              f"{idle[OURS] * B * S / args.h100_tokens_per_s:.1f}x")


if __name__ == "__main__":
    main()
