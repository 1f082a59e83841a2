"""Loader throughput: our batches against megatron-core's GPTDataset with torch's default_collate.

    python benchmarks/loader_throughput.py [--prefix data/megatron/literature_text_document]
        [--batch-size 32] [--seq-length 2048] [--batches 200] [--h100-tokens-per-s 500000]

Both read the same Megatron prefix, the same samples in the same order (checked token for token on the
first batches), in one process, no workers, after one warm-up batch, with torch's default threads. Ours is
measured in its steady state, numba loaded (`helpers.common.compiled`: a process lays out its first batches
with the twins, as the first-batch table below sees it). Megatron
is timed twice: with its default `create_attention_mask=True` (a [S, S] mask per sample) and without it.
Three rows of ours read the prefix twice, as two datasets: a fixed blend, a 10-phase schedule whose weights change
(what a schedule adds to a blend's batch, on other samples), and a 10-phase schedule of even weights, which draws
the fixed blend's very samples (checked), so that the two rates differ by the schedule's machinery alone.
Every rate is measured on an idle machine and beside one other process spinning on a core (as on a GPU node,
where other ranks and workers hold cores), the median of 3 rounds each. The last line compares
our rate with what a training run consumes (`--h100-tokens-per-s`, e.g. the h100 preset's measured rate).
Without a prefix, the workshop corpus is tokenized into a temporary folder first (llama3, all domains).

`--litdata` adds the loader users pick instead, LitData's `StreamingDataset` with `TokensLoader` (as litgpt
pretrains), on the same tokens written by `litdata.optimize`, its batches turned into int64 inputs and
targets as litgpt does; ours on the same tokens as `.bin/.idx`, as one `.npy` and as shards (all four
layout tensors); and the copy limit (one gather of the batch's windows into int64 from the mapped
tokens), measured right before ours and ours on a fixed blend of the prefix twice, so that each round's
ratio to it compares one moment of the machine (the median of those ratios is the last line). These run
through each loader's own iteration: idle and beside the busy process with no workers, and idle with 2
workers (LitData's started by spawn, as its `optimize` leaves the process that ran it; ours by the platform's
default, as in a process of their own); then a new process's seconds to its first batch, imports included,
ours and LitData's. LitData is not a dependency of the package: `pip install --no-deps litdata==0.2.76` and
`pip install lightning-utilities filelock obstore boto3 tifffile` (its full install replaces torch).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from helpers.common.compiled import load_now  # noqa: E402
from helpers.common.paths import RAW_DIR  # noqa: E402
from helpers.corpus.build import corpus_paths  # noqa: E402
from helpers.datasets.formats import indexed_to_npy, indexed_to_shards  # noqa: E402
from helpers.datasets.indexed import IndexedDataset  # noqa: E402
from helpers.datasets.sidecar import data_facts  # noqa: E402
from helpers.loading.loader import make_dataloader  # noqa: E402
from helpers.preprocess import preprocess  # noqa: E402

OURS = "ours (one prefix, gathered and laid out compiled)"
SCHEDULED = "ours, a 10-phase schedule over the prefix twice"
BLENDED = "ours, a fixed blend of the prefix twice (0.5, 0.5)"
EVEN = "ours, a 10-phase schedule of even weights (the fixed blend's samples)"


def corpus_prefix(work: Path, copies: int = 1) -> str:
    """The whole workshop corpus as one llama3 Megatron prefix (its documents `copies` times over)."""
    mixed = work / "mixed.jsonl"
    with open(mixed, "wb") as out:
        for _ in range(copies):
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


def litdata_folder(prefix: str, work: Path) -> Path:
    """The prefix's documents as LitData token chunks (`optimize` with `TokensLoader`), written once."""
    from litdata import optimize
    from litdata.streaming.item_loader import TokensLoader

    dataset = IndexedDataset(prefix)
    target = work / "litdata"
    if not (target / "index.json").is_file():
        start_method = multiprocessing.get_start_method(allow_none=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            optimize(fn=_document_tokens, inputs=[(prefix, d) for d in range(dataset.document_count)],
                     output_dir=str(target), chunk_bytes="64MB", item_loader=TokensLoader(), num_workers=1,
                     mode="overwrite")
        # `optimize` sets this process's start method to spawn for good: LitData's loader is measured with its
        # workers started that way (as in its own pipeline), ours with the platform's default (`litdata_table`)
        LITDATA_START_METHOD[:] = [multiprocessing.get_start_method()]
        multiprocessing.set_start_method(start_method, force=True)
    return target


LITDATA_START_METHOD = ["spawn"]  # how LitData's `optimize` left a process's workers to start


@contextlib.contextmanager
def start_method(method: str | None):
    """Worker processes started by `method` (None: the platform's default) inside the block, as before after it."""
    before = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method(method, force=True)
    try:
        yield
    finally:
        multiprocessing.set_start_method(before, force=True)


def _document_tokens(item):
    from helpers.datasets.indexed import IndexedDataset

    prefix, document = item
    yield torch.from_numpy(IndexedDataset(prefix).document(document).astype("int32"))


def iteration_rate(batches, count: int, batch_size: int) -> float:
    """Samples per second over `count` batches of an iterable, after one warm-up batch (workers started)."""
    iterator = iter(batches)
    next(iterator)
    start = time.perf_counter()
    for _ in range(count):
        next(iterator)
    return count * batch_size / (time.perf_counter() - start)


def litgpt_batches(loader, seq_length: int):
    """LitData's batches as litgpt turns them into inputs and targets (int64, contiguous), epoch after epoch
    (litgpt's `CycleIterator`)."""
    while True:
        for batch in loader:
            yield (batch[:, :seq_length].contiguous().long(), batch[:, 1:seq_length + 1].contiguous().long())


def copy_limit_batches(prefix: str, batch_size: int, seq_length: int, seed: int):
    """The least a loader must do: one gather of each batch's windows into int64, at random offsets."""
    from helpers.datasets.indexed import IndexedDataset

    tokens = IndexedDataset(prefix).tokens
    generator = np.random.default_rng(seed)
    columns = np.arange(seq_length + 1)
    while True:
        starts = generator.integers(0, len(tokens) - seq_length - 1, batch_size)
        yield torch.from_numpy(tokens[starts[:, None] + columns].astype(np.int64))


def litdata_table(prefix: str, args, work: Path) -> None:
    """Samples/s of LitData, ours and the copy limit, with no workers and with 2, idle and beside a busy
    process, and ours / LitData."""
    from litdata import StreamingDataLoader, StreamingDataset
    from litdata.streaming.item_loader import TokensLoader

    B, S = args.batch_size, args.seq_length
    folder = litdata_folder(prefix, work)
    count = args.batches
    eod = data_facts(prefix).eod_id
    formats = {".bin/.idx": [prefix], ".npy": str(indexed_to_npy(prefix, work / "tokens.npy", eod_id=eod)),
               "shards": str(indexed_to_shards(prefix, work / "shards", tokens_per_shard=4_000_000,
                                               val_fraction=0.0, eod_id=eod))}

    def ours(data_path, workers):
        return make_dataloader(data_path, split="100,0,0", seq_length=S, batch_size=B,
                               num_samples=(count + 8) * B, seed=args.seed, cache_dir=None, num_workers=workers)

    def theirs(workers):
        dataset = StreamingDataset(str(folder), item_loader=TokensLoader(block_size=S + 1), shuffle=True,
                                   drop_last=True, seed=args.seed)
        return litgpt_batches(StreamingDataLoader(dataset, batch_size=B, num_workers=workers), S)

    limit, mine, blend = "copy limit (one gather into int64)", "ours, .bin/.idx", "ours, .bin/.idx, a fixed blend"
    rows, paired = [], {}
    for condition, workers, busy in (("idle, no workers", 0, False), ("beside one busy process, no workers", 0, True),
                                     ("2 workers", 2, False)):
        rounds: dict[str, list[float]] = {}
        with busy_process() if busy else contextlib.nullcontext():
            for _ in range(args.rounds):  # the loaders in turn, round after round: a slow moment hits all
                with start_method(LITDATA_START_METHOD[0]):
                    rounds.setdefault("LitData (TokensLoader, litgpt's int64 inputs/targets)", []).append(
                        iteration_rate(theirs(workers), count, B))
                if workers == 0:  # right before ours, so that each round's ratio compares the same moment
                    rounds.setdefault(limit, []).append(
                        iteration_rate(copy_limit_batches(prefix, B, S, args.seed), count, B))
                    rounds.setdefault(blend, []).append(iteration_rate(ours(["0.5", prefix, "0.5", prefix], 0), count,
                                                                       B))
                for name, data_path in formats.items():
                    rounds.setdefault(f"ours, {name}", []).append(iteration_rate(ours(data_path, workers), count, B))
        rows.append((condition, {name: statistics.median(rates) for name, rates in rounds.items()}))
        if workers == 0:
            paired[condition] = {name: statistics.median(a / b for a, b in zip(rounds[name], rounds[limit]))
                                 for name in (mine, blend)}
    print(f"\nsamples/s, batches of {B} x {S}, through each loader's iteration ({count} batches after one), "
          f"median of {args.rounds} rounds")
    for condition, measured in rows:
        litdata = next(iter(measured.values()))
        print(condition)
        for name, value in measured.items():
            print(f"  {name:<60} {value:10,.0f} samples/s  ratio to LitData {value / litdata:5.2f}")
    (_, idle), _, (_, workers) = rows
    print("ours / the copy limit (the median of each round's ratio): " + "; ".join(
        f"{condition.split(',')[0]}: one prefix {ratios[mine]:.2f}, a fixed blend {ratios[blend]:.2f}"
        for condition, ratios in paired.items()) + f"; with 2 workers / with none: {workers[mine] / idle[mine]:.2f}")
    first_batch_table(prefix, folder, args)


FIRST_BATCH = {
    "ours": textwrap.dedent('''
        import sys
        from helpers.loading.loader import make_dataloader
        prefix, batch_size, seq_length, seed = sys.argv[1], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
        batches = make_dataloader([prefix], split="100,0,0", seq_length=seq_length, batch_size=batch_size,
                                  num_samples=8 * batch_size, seed=seed)
        next(iter(batches))
    '''),
    "LitData": textwrap.dedent('''
        import sys
        from litdata import StreamingDataLoader, StreamingDataset
        from litdata.streaming.item_loader import TokensLoader
        folder, batch_size, seq_length, seed = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
        dataset = StreamingDataset(folder, item_loader=TokensLoader(block_size=seq_length + 1), shuffle=True,
                                   drop_last=True, seed=seed)
        batch = next(iter(StreamingDataLoader(dataset, batch_size=batch_size, num_workers=0)))
        inputs, targets = batch[:, :seq_length].contiguous().long(), batch[:, 1:seq_length + 1].contiguous().long()
    '''),
}


def first_batch_table(prefix: str, folder: Path, args) -> None:
    """Seconds from a new Python process's start to its first batch (imports included), ours and LitData's in
    turn, round after round; ours with the index cache as a second run of a script finds it (a first run
    writes it)."""
    arguments = [prefix, str(folder), str(args.batch_size), str(args.seq_length), str(args.seed)]
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]  # and wherever LitData was put on it
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "PYTHONWARNINGS": "ignore"}
    subprocess.run([sys.executable, "-c", FIRST_BATCH["ours"], *arguments], env=env, check=True,
                   capture_output=True)
    seconds: dict[str, list[float]] = {name: [] for name in FIRST_BATCH}
    for _ in range(max(args.rounds, 5)):
        for name, script in FIRST_BATCH.items():
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", script, *arguments], env=env, check=True, capture_output=True)
            seconds[name].append(time.perf_counter() - start)
    print(f"\na new process to its first batch, imports included (median of {len(seconds['ours'])} rounds, range)")
    for name, values in seconds.items():
        print(f"  {name:<10} {statistics.median(values):6.2f} s  ({min(values):.2f}-{max(values):.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefix", help="Megatron prefix with a sidecar (default: the corpus, tokenized now)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-length", type=int, default=2048)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--h100-tokens-per-s", type=float, default=None,
                        help="tokens/s a training run consumes, to compare with")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the LitData table (its median is shown)")
    parser.add_argument("--litdata", action="store_true", help="add LitData and the copy limit (see above)")
    parser.add_argument("--only-litdata", action="store_true", help="only the LitData table")
    parser.add_argument("--copies", type=int, default=4,
                        help="the corpus this many times over, so that the batches measured fit in one epoch (past "
                             "it, megatron-core shuffles its epochs together and the loader each on its own; "
                             "LitData restarts its workers each epoch)")
    args = parser.parse_args()
    if (args.litdata or args.only_litdata) and importlib.util.find_spec("litdata") is None:
        sys.exit("error: --litdata needs LitData, which is not installed; fix: pip install --no-deps "
                 "litdata==0.2.76 and pip install lightning-utilities filelock obstore boto3 tifffile")
    load_now()  # the steady state of a run past its first batches (a new process's first batch: its own table)
    if args.only_litdata:
        work = Path(tempfile.mkdtemp(prefix="loader-bench-"))
        litdata_table(args.prefix or corpus_prefix(work, args.copies), args, work)
        return

    prefix = args.prefix or corpus_prefix(Path(tempfile.mkdtemp(prefix="loader-bench-")), args.copies)
    B, S = args.batch_size, args.seq_length
    num_samples = (args.batches + 1) * B
    tokens = int(IndexedDataset(prefix).sequence_lengths.sum(dtype=np.int64))
    if num_samples * S + 1 > tokens:
        sys.exit(f"error: {args.batches + 1} batches of {B} x {S} need {num_samples * S + 1:,} tokens, more than the "
                 f"{tokens:,} of {prefix}: past one epoch megatron-core shuffles its epochs together and the loader "
                 "each on its own, so their samples differ; fix: raise --copies or give a larger --prefix")
    ours = make_dataloader([prefix], split="100,0,0", seq_length=S, batch_size=B, num_samples=num_samples,
                           seed=args.seed, cache_dir=None)
    # the mixing's cost: two datasets (the same prefix twice, each in its own order) whose weights change 10 times
    phases = [(round(step), [1 + k % 3, 1 + (k + 1) % 2]) for k, step in enumerate(np.linspace(0, args.batches, 10))]
    scheduled = make_dataloader([prefix, prefix], schedule=phases, split="100,0,0", seq_length=S, batch_size=B,
                                num_samples=num_samples, seed=args.seed, cache_dir=None)
    blended = make_dataloader(["0.5", prefix, "0.5", prefix], split="100,0,0", seq_length=S, batch_size=B,
                              num_samples=num_samples, seed=args.seed, cache_dir=None)
    # the machinery's cost alone: a schedule whose phases all weigh the two alike draws the fixed blend's samples
    even = make_dataloader([prefix, prefix], schedule=[(step, [1, 1]) for step, _ in phases], split="100,0,0",
                           seq_length=S, batch_size=B, num_samples=num_samples, seed=args.seed, cache_dir=None)
    collate = torch.utils.data.default_collate
    megatron = {mask: megatron_dataset(prefix, S, num_samples, args.seed, mask) for mask in (True, False)}

    for step in range(3):  # the same samples, in the same order
        theirs = collate([megatron[False][step * B + b] for b in range(B)])
        assert torch.equal(ours.batch_at(step)["input_ids"], theirs["tokens"].long()), "samples differ"
        assert torch.equal(even.batch_at(step)["input_ids"], blended.batch_at(step)["input_ids"]), "samples differ"

    def measure() -> dict[str, float]:
        results = {OURS: rate(ours.batch_at, args.batches), BLENDED: rate(blended.batch_at, args.batches),
                   SCHEDULED: rate(scheduled.batch_at, args.batches), EVEN: rate(even.batch_at, args.batches)}
        for mask, dataset in megatron.items():
            name = f"megatron-core GPTDataset + default_collate (create_attention_mask={mask})"
            results[name] = rate(lambda step, d=dataset: collate([d[step * B + b] for b in range(B)]),
                                 args.batches if not mask else max(args.batches // 4, 10))
        return results

    print(f"batches of {B} x {S} tokens from {prefix}, one process, no workers, torch with its default "
          f"{torch.get_num_threads()} threads")
    def medians(rounds: list[dict[str, float]]) -> dict[str, float]:
        return {name: statistics.median(measured[name] for measured in rounds) for name in rounds[0]}

    def paired(rounds: list[dict[str, float]], name: str) -> float:
        """The median over the rounds of a row's rate over the fixed blend's (each round one moment)."""
        return statistics.median(measured[name] / measured[BLENDED] for measured in rounds)

    idle_rounds = [measure() for _ in range(3)]
    with busy_process():
        busy_rounds = [measure() for _ in range(3)]
    idle, busy = medians(idle_rounds), medians(busy_rounds)
    for condition, results in (("machine idle", idle), ("beside one busy process", busy)):
        print(condition)
        for name, value in results.items():
            print(f"  {name:<72} {value:8.1f} batches/s  {value * B * S / 1e6:8.2f} M tokens/s"
                  f"  ratio {results[OURS] / value:6.2f}")
    print(f"ours beside a busy process / ours idle: {busy[OURS] / idle[OURS]:.2f}; the schedule / the fixed blend "
          f"(the median of each round's): {paired(idle_rounds, SCHEDULED):.2f} idle, "
          f"{paired(busy_rounds, SCHEDULED):.2f} beside a busy process (other samples); the schedule of even weights "
          f"/ the fixed blend, the same samples: {paired(idle_rounds, EVEN):.2f} idle, "
          f"{paired(busy_rounds, EVEN):.2f} beside a busy process")
    if args.h100_tokens_per_s:
        print(f"ours / training consumption ({args.h100_tokens_per_s:,.0f} tokens/s): "
              f"{idle[OURS] * B * S / args.h100_tokens_per_s:.1f}x")
    if args.litdata:
        litdata_table(prefix, args, Path(tempfile.mkdtemp(prefix="loader-bench-")))


if __name__ == "__main__":
    main()
