"""Short training runs on a mixture of domains, scored on each domain's held-out documents.

A mixing law is fitted on a swarm of such runs (`helpers.runs.fit_mix`): each trains the same small Llama
on another mixture and reports every domain's held-out loss and the tokens each domain gave (the loader's
ledger, so the mixture is the one read, not only the one asked for). The sizes are written once here;
notebook 10 and its grids name them:

    run = mixture_run(prefixes, names, [0.2] * 5, size="proxy", seed=0)
    run.held_out_loss["docs"], run.tokens["docs"]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

from ..audit.ledger import ledger
from ..common.errors import UserError
from ..datasets.sidecar import data_facts
from ..loading.loader import make_dataloader
from .train import build_model, evaluate, llama_config, train, train_settings

SPLIT = "95,4,1"  # train, held-out (valid) and test documents of each domain, Megatron's split
SMALL_LLAMA = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4)
MIXTURE_SIZES: dict[str, dict[str, Any]] = {
    # a first look, and the tests: under a second a run, too small and short to rank mixtures well
    "tiny": {"preset": "cpu-tiny",
             "model": dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2),
             "train": dict(steps=120, batch_size=8, seq_length=64, lr=1e-2, min_lr=1e-3, warmup_steps=5,
                           eval_batches=4)},
    # tiny's second size, half as wide again and half as long again (as larger is proxy's): a first look at a
    # proof at two sizes, and the tests'
    "tiny-larger": {"preset": "cpu-tiny",
                    "model": dict(hidden_size=48, intermediate_size=96, num_hidden_layers=1, num_attention_heads=2),
                    "train": dict(steps=180, batch_size=8, seq_length=64, lr=1e-2, min_lr=1e-3, warmup_steps=8,
                                  eval_batches=4)},
    # the swarm's proxy, about 0.1M parameters: about 4.5 s a run on 2 CPU cores with the bytes tokenizer
    "proxy": {"preset": "cpu-tiny", "model": SMALL_LLAMA,
              "train": dict(steps=300, batch_size=8, seq_length=128, lr=3e-3, min_lr=3e-4, warmup_steps=10,
                            eval_batches=16)},
    # about 0.3M parameters, half as wide again and half as long again: does the proxy's ranking hold?
    "larger": {"preset": "cpu-tiny",
               "model": dict(hidden_size=96, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4),
               "train": dict(steps=450, batch_size=8, seq_length=128, lr=3e-3, min_lr=3e-4, warmup_steps=15,
                             eval_batches=16)},
    # the same pair on one H100: a proxy of about 20M parameters (above the ~15M where Olmix found proxies rank
    # mixtures well), and the h100 preset's 12 layers of 768 (about 85M parameters with bytes for tokens)
    "h100-proxy": {"preset": "h100",
                   "model": dict(hidden_size=512, intermediate_size=1536, num_hidden_layers=6, num_attention_heads=8),
                   "train": dict(steps=500, batch_size=32, seq_length=512, lr=1e-3, min_lr=1e-4, warmup_steps=50,
                                 eval_batches=16, compile=False)},
    "h100-larger": {"preset": "h100", "model": {},
                    "train": dict(steps=1000, batch_size=32, seq_length=1024, lr=6e-4, min_lr=6e-5, warmup_steps=100,
                                  eval_batches=16, compile=False)},
}


@dataclass(frozen=True)
class MixtureRun:
    """What one run measured: each domain's held-out loss (nats per token), the tokens it read of each
    (the ledger's count), the tokens each domain's training split holds, and the whole ledger."""
    held_out_loss: dict[str, float]
    tokens: dict[str, int]
    available_tokens: dict[str, int]
    ledger: dict

    def metrics(self) -> dict[str, float | int]:
        """The run as flat metrics (`held_out_loss.docs`, `tokens.docs`, ...), as a swarm's summary keeps them."""
        flat: dict[str, float | int] = {}
        for field in ("held_out_loss", "tokens", "available_tokens"):
            flat.update({f"{field}.{name}": value for name, value in getattr(self, field).items()})
        return flat


def size_entry(size: str) -> dict[str, Any]:
    """The row of `MIXTURE_SIZES` called `size`, or a UserError naming the sizes."""
    if size not in MIXTURE_SIZES:
        raise UserError(f"unknown mixture-run size {size!r}; fix: use one of {', '.join(MIXTURE_SIZES)}")
    return MIXTURE_SIZES[size]


def proof_sizes(size: str, larger_size: str) -> tuple[str, str]:
    """The two sizes a proposal is proved at, checked before anything trains: each a row of `MIXTURE_SIZES`, and
    two different rows (the same one twice proves nothing at a second size, and its tables would have one column
    where they need two)."""
    for name in (size, larger_size):
        size_entry(name)  # refuses a size that is no row
    if larger_size == size:
        raise UserError(f"larger_size {larger_size!r} is the swarm's own size; fix: give a larger row of "
                        f"MIXTURE_SIZES for the proof's second size (e.g. 'larger' beside 'proxy', 'tiny-larger' "
                        f"beside 'tiny')")
    return size, larger_size


def size_settings(size: str, seed: int = 0):
    """The training settings of a size (no evaluation during the run: every domain is scored at its end)."""
    entry = size_entry(size)
    return train_settings(entry["preset"], eval_every=0, seed=seed, **entry["train"])


def held_out_batches(prefixes: Sequence[str], names: Sequence[str], size: str) -> dict[str, list]:
    """Each domain's held-out batches at `size`: the same documents for every run, whatever its mixture."""
    settings = size_settings(size)
    return {name: list(make_dataloader([prefix], split=SPLIT, split_name="valid", seq_length=settings.seq_length,
                                       batch_size=settings.batch_size, seed=0,
                                       num_samples=settings.eval_batches * settings.batch_size))
            for name, prefix in zip(names, prefixes)}


def mixture_loader(prefixes: Sequence[str], weights=None, *, size: str = "proxy", seed: int = 0, schedule=None):
    """The training batches of one run: `weights` (one per prefix) throughout, or a `schedule` of
    `(step, weights)` phases (`helpers.loading.schedule`)."""
    settings = size_settings(size, seed)
    data = [x for weight, prefix in zip(weights, prefixes) for x in (str(weight), prefix)] if schedule is None \
        else list(prefixes)
    return make_dataloader(data, schedule=schedule, split=SPLIT, seq_length=settings.seq_length,
                           batch_size=settings.batch_size, num_samples=settings.steps * settings.batch_size,
                           seed=seed)


def mixture_run(prefixes: Sequence[str], names: Sequence[str], weights=None, *, size: str = "proxy", seed: int = 0,
                schedule=None, held_out: dict[str, list] | None = None, device: str = "cpu") -> MixtureRun:
    """Train a fresh model of `size` on one mixture of the domains `prefixes` (named `names`) and score it on
    each domain's held-out documents. `seed` sets the model's start and the order the samples are read in."""
    given = 0 if weights is None else len(weights)
    if len(prefixes) != len(names) or (schedule is None and given != len(prefixes)):
        raise UserError(f"{len(prefixes)} domains, {len(names)} names and {given} weights; fix: give one name and "
                        "one weight per domain")
    held_out = held_out or held_out_batches(prefixes, names, size)
    settings = size_settings(size, seed)
    facts = data_facts(prefixes[0])
    entry = size_entry(size)
    config = llama_config(entry["preset"], vocab_size=facts.vocab_size, max_position_embeddings=settings.seq_length,
                          **entry["model"])
    loader = mixture_loader(prefixes, weights, size=size, seed=seed, schedule=schedule)
    model = build_model(config, device=device, seed=seed)
    train(model, loader, settings, device, progress=False)
    losses = {name: evaluate(model, batches, settings, torch.device(device)) for name, batches in held_out.items()}
    book = ledger(loader.state_dict())
    read = dict(zip(names, book["datasets"]))  # the ledger's entry of each domain, in the order of `prefixes`
    tokens = {name: int(dataset["tokens"]) for name, dataset in read.items()}
    available = {name: int(dataset["samples_per_epoch"]) * settings.seq_length for name, dataset in read.items()}
    return MixtureRun(held_out_loss=losses, tokens=tokens, available_tokens=available, ledger=book)
