"""What the live audit costs a training step: `Auditor.step` against one step of notebook 06's CPU model
(the `cpu-tiny` Llama, 16 x 128 tokens of the bpe-4096 tokenizer, AdamW), on the same real batches,
timed in turns in one run.

    python benchmarks/audit_overhead.py [--steps 30] [--batch-size 16] [--seq-length 128]

Prints the median seconds of each and the audit's share of a step (the goal: under 1%).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helpers.audit.live import Auditor  # noqa: E402
from helpers.common.paths import RAW_DIR  # noqa: E402
from helpers.corpus.build import corpus_paths  # noqa: E402
from helpers.loading.loader import make_dataloader  # noqa: E402
from helpers.preprocess import preprocess  # noqa: E402
from helpers.tokenizers.zoo import load_tokenizer  # noqa: E402
from helpers.training.train import build_model, llama_config  # noqa: E402

TOKENIZER = "bpe-4096"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--seq-length", type=int, default=128)
    args = parser.parse_args()
    torch.set_num_threads(2)
    tokenizer = load_tokenizer(TOKENIZER)
    with tempfile.TemporaryDirectory(prefix="audit-overhead-") as folder:
        source = corpus_paths(RAW_DIR)["literature"]
        prefix = preprocess(source, Path(folder) / "literature", TOKENIZER, append_eod=True,
                            progress=False).outputs["text"]
        loader = make_dataloader([prefix], split="1,0,0", seq_length=args.seq_length, batch_size=args.batch_size,
                                 num_samples=(args.steps + 1) * args.batch_size, cache_dir=folder)
        model = build_model(llama_config("cpu-tiny", vocab_size=tokenizer.vocab_size), seed=0)
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
        auditor = Auditor(vocab_size=tokenizer.vocab_size, labels="shifted", eod_id=tokenizer.eod_id)
        audit_seconds, step_seconds = [], []
        for step, batch in enumerate(loader):
            started = time.perf_counter()
            auditor.step(batch)
            audited = time.perf_counter()
            logits = model(input_ids=batch["input_ids"]).logits
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(), ignore_index=-100)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            finished = time.perf_counter()
            if step:  # the first of each is warm-up
                audit_seconds.append(audited - started)
                step_seconds.append(finished - audited)
    audit, train = statistics.median(audit_seconds), statistics.median(step_seconds)
    print(f"{len(step_seconds)} steps of {args.batch_size} x {args.seq_length} ({TOKENIZER}, cpu-tiny Llama, "
          f"{torch.get_num_threads()} threads)")
    print(f"training step  {train * 1e3:8.2f} ms (median)")
    print(f"Auditor.step   {audit * 1e3:8.3f} ms (median)")
    print(f"audit / step   {audit / train:8.2%}")


if __name__ == "__main__":
    main()
