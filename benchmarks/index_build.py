"""Index building at scale: a new process's first batch, ours against megatron-core's build of the same split.

    python benchmarks/index_build.py [--scales 1 10] [--seq-length 2048] [--repeats 3] [--folder DIR]

For each scale (billions of tokens) the benchmark writes a synthetic prefix on the fly: about 500 tokens a
document (2M documents per billion tokens, lengths drawn log-normal), its `.idx` in full and its `.bin` as a
sparse file of the right size (index building reads lengths, not tokens; the one batch read is zeros). This is
synthetic data, asked for by name here: no model learns from it. Each row is a fresh Python process, timed from
after its imports to its first batch (or, for megatron-core, to the end of its build), the median of
`--repeats`:

- megatron-core: `BlendedMegatronDatasetBuilder` building `GPTDataset`'s train split (one epoch; its index
  cache, which it always writes, removed before each run), and the same number of samples as a blend of two
  halves of the prefix, 0.5 each (two `GPTDataset`s and its blending index);
- ours, one prefix: `make_dataloader([prefix])` and `batch_at(0)`;
- ours, the same fixed blend of the two halves, and a ten-phase schedule over the same two (the schedule
  goal: within 2x the fixed blend).

Index caches are off on both sides: the cold start a new run or a changed dataset pays. Ours builds a sample index
of fewer than 8M document entries, and lays out a batch of fewer than 65,536 tokens, in numpy; above those sizes
its numba loops run, and the first of them pays numba's start-up in the process (`helpers.common.compiled`). A
blend's or a schedule's choice of dataset is made as far as batches read (`helpers.loading.schedule.Choice`):
the first 4,096 samples in Python, the rest compiled at the first read past them, so the first batch of a long
blend does not wait for numba (the run pays its start-up once, later).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helpers.datasets.indexed import CODE_OF_DTYPE, HEADER, MAGIC, VERSION, bin_path, idx_path  # noqa: E402

TOKENS_PER_DOCUMENT = 500
DTYPE = np.dtype(np.uint16)


def synthetic_prefix(prefix: Path, documents: int, seed: int) -> str:
    """A prefix of `documents` log-normal lengths (mean about TOKENS_PER_DOCUMENT), `.bin` sparse."""
    if idx_path(prefix).exists():
        return str(prefix)
    rng = np.random.default_rng(seed)
    lengths = np.maximum(rng.lognormal(np.log(TOKENS_PER_DOCUMENT) - 0.5, 1.0, documents), 1).astype(np.int32)
    pointers = np.zeros(documents, dtype=np.int64)
    np.cumsum(lengths[:-1].astype(np.int64) * DTYPE.itemsize, out=pointers[1:])
    with open(bin_path(prefix), "wb") as handle:
        handle.truncate(int(lengths.sum(dtype=np.int64)) * DTYPE.itemsize)
    with open(idx_path(prefix), "wb") as out:
        out.write(HEADER.pack(MAGIC, VERSION, CODE_OF_DTYPE[DTYPE], documents, documents + 1))
        out.write(lengths.astype("<i4").tobytes())
        out.write(pointers.astype("<i8").tobytes())
        out.write(np.arange(documents + 1, dtype="<i8").tobytes())
    return str(prefix)


OURS = """
import json, sys, time
sys.path.insert(0, {root!r})
from helpers.loading.loader import make_dataloader
data, schedule = json.loads({data!r}), json.loads({schedule!r})
start = time.perf_counter()
loader = make_dataloader(data, schedule=schedule, split="100,0,0", seq_length={seq}, batch_size=8, cache_dir=None,
                         tokenizer="bytes")  # no sidecar: the ids are zeros of a uint16 vocabulary
loader.batch_at(0)
print(time.perf_counter() - start)
"""

MEGATRON = """
import sys, time, warnings
from types import SimpleNamespace
warnings.simplefilter("ignore")
from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
start = time.perf_counter()
config = GPTDatasetConfig(random_seed=1234, sequence_length={seq}, split="100,0,0", blend=({blend!r}),
                          tokenizer=SimpleNamespace(vocab_size=32000, eod=0, pad=-1, special_tokens_dict={{}},
                                                    unique_identifiers={{"class": "synthetic"}}),
                          reset_position_ids=False, reset_attention_mask=False, eod_mask_loss=False,
                          path_to_cache=None, mmap_bin_files=True)
train = BlendedMegatronDatasetBuilder(GPTDataset, [{samples}, 0, 0], lambda: True, config).build()[0]
train[0]
print(time.perf_counter() - start)
"""


def timed(script: str, repeats: int, cache: Path | None = None) -> float:
    """Median seconds a fresh process prints for `script`; `cache`: a folder removed before each run."""
    runs = []
    for _ in range(repeats):
        if cache is not None:
            shutil.rmtree(cache, ignore_errors=True)
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONWARNINGS": "ignore"})
        runs.append(float(done.stdout.strip().splitlines()[-1]))
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", type=float, nargs="+", default=[1, 10], help="billions of tokens")
    parser.add_argument("--seq-length", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--folder", type=Path, default=None, help="where the synthetic prefixes go (a temp folder)")
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="index-build-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"synthetic prefixes (asked for by name: lengths only, zero tokens) in {folder}")
    print(f"{'scale':>6}  {'documents':>11}  {'megatron-core':>13}  {'ours':>6}  {'megatron-core blend':>19}  "
          f"{'fixed blend':>11}  {'10-phase schedule':>17}  {'schedule / blend':>16}")
    for scale in args.scales:
        documents = int(scale * 1e9 / TOKENS_PER_DOCUMENT)
        whole = synthetic_prefix(folder / f"whole-{scale:g}", documents, seed=1)
        halves = [synthetic_prefix(folder / f"half{k}-{scale:g}", documents // 2, seed=2 + k) for k in (0, 1)]
        tokens = int(np.fromfile(idx_path(whole), dtype="<i4", count=documents, offset=HEADER.size).sum(dtype=np.int64))
        samples = (tokens - 1) // args.seq_length
        # megatron-core always caches its indices, beside the prefix when no path is given: removed before each
        # run, so that it builds them (and saves them, as it always does) like ours
        def megatron(prefixes, weights=None) -> float:
            return timed(MEGATRON.format(seq=args.seq_length, blend=(prefixes, weights), samples=samples),
                         args.repeats, cache=Path(prefixes[0]) / "cache")

        theirs, theirs_blend = megatron([whole]), megatron(halves, [0.5, 0.5])

        def ours(data, schedule=None) -> float:
            return timed(OURS.format(root=str(ROOT), data=json.dumps(data), schedule=json.dumps(schedule),
                                     seq=args.seq_length), args.repeats)

        one = ours([whole])
        blend = ours(["0.5", halves[0], "0.5", halves[1]])
        phases = [[round(step), [1 + k % 3, 1 + (k + 1) % 2]] for k, step in
                  enumerate(np.linspace(0, samples // 8 - 1, 10))]
        schedule = ours(halves, phases)
        print(f"{scale:>5g}B  {documents:>11,}  {theirs:>12.2f}s  {one:>5.2f}s  {theirs_blend:>18.2f}s  {blend:>10.2f}s  "
              f"{schedule:>16.2f}s  {schedule / blend:>15.2f}x", flush=True)


if __name__ == "__main__":
    main()
