"""Notebook 07's quality-stage deep dive: what the filters removed, by rule, and a tiny model trained on the text
before and after the stage, measured per domain on documents neither run trained on.

    from helpers.workshop.explore.quality_stage import rule_rows, held_out_losses
    rows = rule_rows(report, names)                       # (domain, step, rule, documents) of every removal
    losses = held_out_losses({"before": raw_rows, "after": kept_rows}, held_out, work_dir, steps=40)

The texts are tokenized as bytes (258 ids, so the model stays tiny), each run trains the same small Llama from the
same seed for the same steps on its own text, and both are measured on the same held-out documents of each domain.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import torch

from ...loading.loader import make_dataloader
from ...preprocess import output_prefix, preprocess
from ...training.train import build_model, evaluate, llama_config, train, train_settings

MODEL = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4}


def rule_rows(report: dict, names: list[str]) -> list[dict]:
    """Every rule that removed documents, per domain: (domain, step, rule, documents)."""
    return [{"domain": name, "step": row["step"], "rule": rule, "documents": count}
            for name, item in zip(names, report["inputs"]) for row in item["steps"] if "rules" in row
            for rule, count in row["rules"].items()]


def _tokenized(texts: list[str], folder: Path, name: str) -> str:
    """`texts` as one Megatron dataset of bytes (an EOD after each document); its prefix."""
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / f"{name}.jsonl"
    source.write_text("".join(json.dumps({"text": text}, ensure_ascii=False) + "\n" for text in texts),
                      encoding="utf-8")
    preprocess(source, folder / name, "bytes", append_eod=True, workers=1, progress=False)
    return str(output_prefix(folder / name, "text"))


def held_out_losses(training: dict[str, list[str]], held_out: dict[str, list[str]], folder: Path, *, steps: int,
                    seq_length: int = 128, batch_size: int = 8, seed: int = 0) -> dict[str, dict[str, float]]:
    """Per run (name: its training texts), the mean loss per byte of a model trained `steps` steps on them, on
    each domain's held-out texts (domain: texts). The loader's line naming each dataset it opens is left out: these
    are the datasets made here."""
    loader_log = logging.getLogger("helpers.loading.loader")
    level = loader_log.level
    loader_log.setLevel(logging.WARNING)
    try:
        return _losses(training, held_out, Path(folder), steps=steps, seq_length=seq_length, batch_size=batch_size,
                       seed=seed)
    finally:
        loader_log.setLevel(level)


def _losses(training: dict[str, list[str]], held_out: dict[str, list[str]], folder: Path, *, steps: int,
            seq_length: int, batch_size: int, seed: int) -> dict[str, dict[str, float]]:
    settings = train_settings("cpu-tiny", steps=steps, seq_length=seq_length, batch_size=batch_size, lr=1e-2,
                              min_lr=1e-3, warmup_steps=5, eval_every=0, seed=seed)
    config = llama_config("cpu-tiny", vocab_size=258, max_position_embeddings=seq_length, **MODEL)
    measured = {domain: list(make_dataloader([_tokenized(texts, folder, f"held-out-{domain}")], split="100,0,0",
                                             seq_length=seq_length, batch_size=batch_size, seed=seed,
                                             num_samples=settings.eval_batches * batch_size))
                for domain, texts in held_out.items()}
    losses = {}
    for run, texts in training.items():
        model = build_model(config, seed=seed)
        batches = make_dataloader([_tokenized(texts, folder, f"train-{run}")], split="100,0,0", seq_length=seq_length,
                                  batch_size=batch_size, num_samples=steps * batch_size, seed=seed)
        train(model, batches, settings, "cpu", progress=False)
        losses[run] = {domain: evaluate(model, batches_of, settings, torch.device("cpu"))
                       for domain, batches_of in measured.items()}
    return losses
