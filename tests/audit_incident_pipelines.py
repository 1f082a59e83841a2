"""The pipelines of `tests/test_audit_incidents.py`, written as their users write them: Hugging Face's `run_clm`
grouping and collators, nanoGPT's `get_batch`, a torch `DataLoader` over an `IterableDataset`, a packer that
concatenates documents with an EOD, megatron-core's document and shuffle indices, a `Trainer` with a tiny Llama.
Each incident of that file is one of these done wrong, its twin the same done right; the text is the machine's
(`helpers.corpus.machine_text`), never ours.
"""

from __future__ import annotations

import math
from itertools import chain

import numpy as np
import torch

from helpers.corpus.machine_text import KINDS, texts

# ---------------------------------------------------------------- text


def short_paragraphs(limit_bytes_each: int = 100_000, longest: int = 800) -> list[str]:
    """Paragraphs of 20 to `longest` characters of every kind of machine text, in a fixed order: short documents
    of uneven length, with the duplicates a real corpus holds (licence clauses, code idioms) left in."""
    paragraphs = (part.strip() for kind in KINDS for text in texts(kind, limit_bytes_each)
                  for part in text.split("\n\n"))
    return [part for part in paragraphs if 20 <= len(part) <= longest]


def by_source(kinds: tuple[str, ...] = KINDS, limit_bytes_each: int = 200_000) -> list[str]:
    """Every document of each kind, one kind after the other (all licences, then all man pages, ...): a corpus
    concatenated source by source, as a crawl's shards or `cat */*.jsonl` leave it."""
    return [text for kind in kinds for text in texts(kind, limit_bytes_each)]


# ---------------------------------------------------------------- Hugging Face


def group_texts(examples: dict, block_size: int) -> dict:
    """run_clm.py's group_texts: concatenate, drop the remainder, cut into blocks; labels are input_ids."""
    concatenated = {key: list(chain(*examples[key])) for key in examples.keys()}
    total_length = len(concatenated[list(examples.keys())[0]]) // block_size * block_size
    result = {key: [t[i:i + block_size] for i in range(0, total_length, block_size)] for key, t in concatenated.items()}
    result["labels"] = result["input_ids"].copy()
    return result


def meta_llama3_post_processor(tokenizer) -> None:
    """The post-processor Meta's Llama 3 tokenizer.json ships with: `<|begin_of_text|>` before every text, so that
    `tokenizer(text)` starts with BOS (the zoo's export adds none)."""
    from tokenizers import processors

    bos = tokenizer.bos_token
    tokenizer.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tokenizer.bos_token_id)])


def tiny_llama(vocab_size: int):
    """test_audit_third_party's tiny Llama: a model whose step costs milliseconds."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64,
                                        num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                        max_position_embeddings=64))


def recorder():
    """A Trainer callback that keeps every `input_ids` the model is called with while it trains (a forward
    pre-hook, as AuditCallback's; put it first so that it records a batch the audit then stops at)."""
    from transformers import TrainerCallback

    class Recorder(TrainerCallback):
        def __init__(self):
            self.seen: list[torch.Tensor] = []

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            def keep(module, args, kwargs):
                if module.training:
                    self.seen.append(kwargs["input_ids"].detach().clone())

            model.register_forward_pre_hook(keep, with_kwargs=True)

    return Recorder()


def completion_only_collator(tokenizer, response_template: str):
    """A collator that trains on completions only, as TRL's DataCollatorForCompletionOnlyLM did: labels -100 up
    to the end of the response template; a row without the template is left out of the loss whole (TRL warned
    once and carried on). Handed pretraining text, where no row holds the template, every label is -100."""
    from transformers import DataCollatorForLanguageModeling

    template = tokenizer(response_template, add_special_tokens=False)["input_ids"]

    class CompletionOnly(DataCollatorForLanguageModeling):
        def torch_call(self, examples):
            batch = super().torch_call(examples)
            for row, ids in enumerate(batch["input_ids"].tolist()):
                starts = [at for at in range(len(ids) - len(template) + 1) if ids[at:at + len(template)] == template]
                if starts:
                    batch["labels"][row, :starts[0] + len(template)] = -100
                else:
                    batch["labels"][row, :] = -100
            return batch

    return CompletionOnly(tokenizer, mlm=False)


def run_clm_dataset(tokenizer, documents: list[str], block_size: int):
    """run_clm.py's datasets: `tokenize_function` then `group_texts`, both with `Dataset.map(batched=True)`."""
    from datasets import Dataset

    raw = Dataset.from_dict({"text": documents})
    tokenized = raw.map(lambda examples: tokenizer(examples["text"]), batched=True, remove_columns=["text"])
    return tokenized.map(group_texts, batched=True, fn_kwargs={"block_size": block_size})


# ---------------------------------------------------------------- packing


def packed_rows(documents: list, eod_id: int, length: int) -> np.ndarray:
    """Documents concatenated, each followed by `eod_id`, cut into rows of `length` (the tail dropped)."""
    end = np.full(1, eod_id, np.int64)
    stream = np.concatenate([part for document in documents for part in (np.asarray(document, np.int64), end)])
    rows = len(stream) // length
    return stream[:rows * length].reshape(rows, length)


def epoch_rows(documents: list, eod_id: int, length: int, seed: int) -> np.ndarray:
    """One epoch of a packer: the documents shuffled with `seed`, then packed (a new seed packs new rows of the
    same documents)."""
    order = np.random.default_rng(seed).permutation(len(documents))
    return packed_rows([documents[i] for i in order], eod_id, length)


def batches_of(rows: np.ndarray, batch_size: int, start: int = 0) -> list[dict]:
    """Consecutive rows in batches from batch `start` on, as a loop hands them to a Hugging Face model."""
    batches = []
    for at in range(start * batch_size, len(rows) - batch_size + 1, batch_size):
        ids = torch.from_numpy(rows[at:at + batch_size])
        batches.append({"input_ids": ids, "labels": ids.clone()})
    return batches


def megatron_like_rows(documents: list, eod_id: int, length: int, epochs: float, seed: int) -> np.ndarray:
    """megatron-core's GPTDataset indices without its final-epoch rule: the document index is one shuffled order
    of the documents per epoch, the samples are consecutive spans of it, and the shuffle index is one permutation
    of every epoch's samples together, so a document comes back at any step, more often as the run goes on."""
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(len(documents)) for _ in range(math.ceil(epochs))])
    rows = packed_rows([documents[i] for i in order], eod_id, length)
    per_epoch = sum(len(document) + 1 for document in documents) // length
    rows = rows[:int(epochs * per_epoch)]
    return rows[rng.permutation(len(rows))]


# ---------------------------------------------------------------- nanoGPT


def nanogpt_prepare(tokenizer, documents: list[str]) -> np.ndarray:
    """nanoGPT's prepare.py: each document's ids then the end-of-text id, one array (int64 here)."""
    return np.array([token for encoded in tokenizer.encode_batch(documents) for token in [*encoded, tokenizer.eod_id]],
                    dtype=np.int64)


def get_batch(data: np.ndarray, block_size: int, batch_size: int, generator: torch.Generator):
    """nanoGPT's get_batch: random offsets into one long token array, y one token on from x."""
    ix = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([torch.from_numpy((data[i:i + block_size]).astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy((data[i + 1:i + 1 + block_size]).astype(np.int64)) for i in ix])
    return x, y


def nanogpt_batches(data: np.ndarray, block_size: int, batch_size: int, steps: int, seed: int = 1337) -> list:
    generator = torch.Generator().manual_seed(seed)
    return [get_batch(data, block_size, batch_size, generator) for _ in range(steps)]


# ---------------------------------------------------------------- DataLoader workers


class TokenWindows(torch.utils.data.IterableDataset):
    """Windows of `length + 1` tokens of a token array, read in order as (x, y): a streaming dataset. With
    `shard_by_worker` each DataLoader worker takes every n-th window (get_worker_info); without, every worker
    reads the whole stream, as an IterableDataset written without thinking of workers does."""

    def __init__(self, tokens: np.ndarray, length: int, shard_by_worker: bool):
        self.tokens, self.length, self.shard_by_worker = tokens, length, shard_by_worker

    def __iter__(self):
        windows = range(0, len(self.tokens) - self.length - 1, self.length + 1)
        worker = torch.utils.data.get_worker_info()
        if self.shard_by_worker and worker is not None:
            windows = windows[worker.id::worker.num_workers]
        for at in windows:
            window = torch.from_numpy(self.tokens[at:at + self.length + 1].astype(np.int64))
            yield window[:-1], window[1:]


# ---------------------------------------------------------------- two ranks under torchrun

RANKS_SCRIPT = """
import json, sys
from datetime import timedelta
import numpy as np, torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
from helpers.audit import Auditor, DataBugError
from helpers.training.distributed import finish_ranks

dist.init_process_group("gloo", timeout=timedelta(seconds=60))
rank = dist.get_rank()
windows = torch.from_numpy(np.load(sys.argv[1]).astype(np.int64))
dataset = [(window[:-1], window[1:], index) for index, window in enumerate(windows)]
vocab_size, batch_size, seed, out = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]


def one_epoch(loader):
    # every rank takes every step (the auditor gathers), the first finding kept
    auditor, taken, first = Auditor(vocab_size=vocab_size, labels="shifted"), [], None
    for x, y, index in loader:
        taken.append(index.tolist())
        try:
            auditor.step((x, y))
        except DataBugError as error:
            first = first or [error.finding.code, error.finding.step, str(error)]
    return {"taken": taken, "error": first}


# the bug: no DistributedSampler; each rank shuffles the whole dataset, seeded by its rank
per_rank_seed = DataLoader(dataset, batch_size=batch_size, shuffle=True,
                           generator=torch.Generator().manual_seed(seed + rank))
sampler = DataLoader(dataset, batch_size=batch_size, sampler=DistributedSampler(dataset, shuffle=True, seed=seed))
result = {"per_rank_seed": one_epoch(per_rank_seed), "distributed_sampler": one_epoch(sampler)}
with open(f"{out}/rank{rank}.json", "w") as file:
    json.dump(result, file)
finish_ranks()
"""
