"""Training a Llama from scratch on batches in THE layout: presets, the loop, MFU and data-wait accounting.

A preset is one row of `PRESETS`: the model's shape and the training settings that go with it.
`cpu-tiny` runs 60 steps in about half a minute on a 2-core laptop; `h100` is a ~125M-parameter model
(the GPT-2 small / Pythia-160M class) sized for one H100.

    config = llama_config("cpu-tiny", vocab_size=tokenizer.vocab_size)
    settings = train_settings("cpu-tiny", steps=200)
    model = build_model(config, device, seed=settings.seed)
    result = train(model, batches, settings, device, eval_batches=held_out)

`batches` is any iterable of dicts in `helpers.datasets.layout`'s layout. Labels there are already shifted,
so the loss is computed here from the logits, never by transformers (which would shift them again).

MFU (model FLOPs utilisation) uses PaLM's count (Chowdhery et al. 2022, appendix B): per token,
6·N for the matrix multiplies of forward and backward, plus 12·L·H·Q·T for attention scores.
"""

from __future__ import annotations

import contextlib
import csv
import math
import numbers
import time
import warnings
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

import torch
import torch.nn.functional as F

from ..common.errors import UserError
from ..common.files import written_atomically
from ..common.progress import progress_bar
from ..datasets.layout import IGNORE_INDEX
from .checkpoints import latest_checkpoint, load_checkpoint, run_identity, save_checkpoint
from .distributed import all_sum, gradient_sync, join_ranks, local_value, parallel_model, rank_device
from .fused_loss import LOSS_KERNELS, check_loss_kernel, fused_linear_loss
from .llama_shape import LlamaShape, TransformersLayout
from .run_length import RunLength, resumed_length
from .staging import staged_batches
from .step_log import PendingSteps, StepClock

if TYPE_CHECKING:
    from transformers import LlamaConfig

# The training settings every preset shares; each preset puts its own in over them.
COMMON_TRAINING: dict[str, Any] = dict(weight_decay=0.1, grad_clip=1.0, compile_mode="default", loss_kernel="torch",
                                       seed=0)
# The model shape and the training settings of each preset, side by side.
PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "cpu-tiny": {
        "model": dict(vocab_size=8192, hidden_size=192, intermediate_size=512, num_hidden_layers=3,
                      num_attention_heads=6, tie_word_embeddings=False),
        "train": dict(COMMON_TRAINING, seq_length=128, batch_size=16, steps=60, lr=3e-3, min_lr=3e-4, warmup_steps=10,
                      eval_every=50, eval_batches=4, dtype="float32", compile=False, fused_adamw=False, log_every=5),
    },
    "h100": {
        "implementation": "fast",
        "model": dict(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                      num_attention_heads=12, tie_word_embeddings=False),
        "train": dict(COMMON_TRAINING, seq_length=1024, batch_size=32, steps=500, lr=6e-4, min_lr=6e-5,
                      warmup_steps=100, eval_every=200, eval_batches=20, dtype="bfloat16", compile=True,
                      fused_adamw=True, log_every=10),
    },
}

IMPLEMENTATIONS = ("transformers", "fast")
GPU_WORKERS_PER_RANK = 4  # loader processes beside each GPU's training process; on a CPU they would compete with it
# Model fields an override may set; those a preset leaves out take these defaults
# (key/value heads = attention heads, i.e. plain multi-head attention; positions = the preset's seq_length).
MODEL_DEFAULTS: dict[str, Any] = {"num_key_value_heads": None, "max_position_embeddings": None}
DTYPES = ("float32", "bfloat16", "float64")
# torch.compile's modes; "max-autotune-no-cudagraphs" tunes the matmul and Triton kernels (a longer first
# compile) without CUDA graphs, which would pin the staged batches' memory.
COMPILE_MODES = ("default", "max-autotune-no-cudagraphs", "max-autotune", "reduce-overhead")
ADAM_BETAS = (0.9, 0.95)
TIMING_WARMUP_STEPS = 5  # first steps (allocation, compilation) left out of steady-state throughput
# One row per step. `tokens`: input tokens of this step (batch × sequence); `step_s`: from asking for the
# batch to the end of the optimizer step, `data_wait_s` included; `eval_loss` only where evaluated.
LOG_COLUMNS = ("step", "loss", "lr", "grad_norm", "tokens", "step_s", "data_wait_s", "tokens_per_s", "mfu",
               "eval_loss")

# Dense bf16 peak of each accelerator (no sparsity), matched against the CUDA device name in this order.
PEAK_BF16_FLOPS: tuple[tuple[str, float], ...] = (
    ("H100 PCIe", 756e12),
    ("H100 NVL", 835e12),
    ("H100", 989e12),   # SXM, "NVIDIA H100 80GB HBM3"
    ("H200", 989e12),
    ("A100", 312e12),
)


@dataclass(frozen=True)
class TrainSettings:
    """Everything the loop needs besides the model and the data, in one object."""

    seq_length: int
    batch_size: int
    steps: int
    lr: float
    min_lr: float
    warmup_steps: int
    weight_decay: float
    grad_clip: float  # 0 = measure the gradient norm, clip nothing
    eval_every: int  # 0 = evaluate only at the end
    eval_batches: int  # batches per evaluation
    dtype: str  # "float32"; "bfloat16" = bf16 autocast (CUDA only); "float64" = double weights (exactness checks)
    compile: bool  # torch.compile the model and loss, training and evaluation (CUDA only)
    compile_mode: str  # torch.compile's mode, one of COMPILE_MODES
    fused_adamw: bool  # fused AdamW kernel (CUDA only)
    loss_kernel: str  # "torch" (logits, then cross-entropy) or a fused output layer + loss: "liger", "cut"
    seed: int
    log_every: int  # steps between progress-bar updates


def preset_entry(preset: str) -> dict[str, dict[str, Any]]:
    """The row of `PRESETS` called `preset`, or a UserError naming the presets."""
    if preset not in PRESETS:
        raise UserError(f"unknown preset {preset!r}; fix: use one of {', '.join(PRESETS)}")
    return PRESETS[preset]


def merge_overrides(defaults: dict[str, Any], overrides: dict[str, Any], what: str) -> dict[str, Any]:
    """`defaults` updated with `overrides`; an override name not in `defaults` is a UserError."""
    unknown = sorted(set(overrides) - set(defaults))
    if unknown:
        raise UserError(f"unknown {what} override {', '.join(unknown)}; fix: use one of {', '.join(sorted(defaults))}")
    return {**defaults, **overrides}


def model_shape(preset: str = "cpu-tiny", **overrides) -> LlamaShape:
    """The Llama shape of `preset` with `overrides`, as plain data (`build_model` takes it; no transformers)."""
    entry = preset_entry(preset)
    fields = merge_overrides({**MODEL_DEFAULTS, **entry["model"]}, overrides, "model")
    if fields["max_position_embeddings"] is None:
        fields["max_position_embeddings"] = entry["train"]["seq_length"]
    check_heads(fields)
    return LlamaShape(**fields)


def llama_config(preset: str = "cpu-tiny", **overrides) -> LlamaConfig:
    """A `transformers.LlamaConfig` for random initialisation (nothing downloaded), shaped by `preset`."""
    return model_shape(preset, **overrides).transformers_config()


def check_heads(fields: dict[str, Any]) -> None:
    """Refuse a width that the attention heads do not divide (transformers fails later, less clearly)."""
    hidden, heads = fields["hidden_size"], fields["num_attention_heads"]
    kv_heads = fields["num_key_value_heads"] or heads
    if hidden % heads:
        raise UserError(f"hidden_size {hidden} is not a multiple of num_attention_heads {heads}; "
                        "fix: override num_attention_heads too")
    if heads % kv_heads:
        raise UserError(f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}; "
                        "fix: pick heads divisible by the key-value heads")


def of_kind(value: Any, default: Any) -> bool:
    """Whether `value` can stand where the preset has `default`: a bool for a bool, an integer for an int,
    any real number for a float, a string for a string."""
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    kind = {int: numbers.Integral, float: numbers.Real}.get(type(default), type(default))
    return isinstance(value, kind)


def train_settings(preset: str = "cpu-tiny", **overrides) -> TrainSettings:
    """The preset's `TrainSettings`, with `overrides` applied by name; each must be of its field's kind."""
    defaults = preset_entry(preset)["train"]
    for name, value in overrides.items():
        if name in defaults and not of_kind(value, defaults[name]):
            raise UserError(f"training setting {name}={value!r}: expected {type(defaults[name]).__name__}; fix: "
                            f"give it as the preset does, e.g. {name}={defaults[name]!r}")
    settings = TrainSettings(**merge_overrides(defaults, overrides, "training"))
    if settings.dtype not in DTYPES:
        raise UserError(f"dtype {settings.dtype!r} is not supported; fix: use one of {', '.join(DTYPES)}")
    if settings.compile_mode not in COMPILE_MODES:
        raise UserError(f"compile_mode {settings.compile_mode!r} is not one of torch.compile's; "
                        f"fix: use one of {', '.join(COMPILE_MODES)}")
    if settings.loss_kernel not in LOSS_KERNELS:
        raise UserError(f"loss_kernel {settings.loss_kernel!r}; fix: use one of {', '.join(LOSS_KERNELS)}")
    return settings


def build_model(config: LlamaConfig | LlamaShape, device: str | torch.device = "cpu", seed: int = 0,
                implementation: str = "transformers") -> torch.nn.Module:
    """A randomly initialised Llama on `device`; the same seed gives the same weights in either
    implementation: transformers' `LlamaForCausalLM`, or `"fast"`, the plain-PyTorch `FastLlama`
    (`helpers.training.llama`) given those same weights (drawn without transformers from a `LlamaShape`)."""
    if implementation not in IMPLEMENTATIONS:
        raise UserError(f"model implementation {implementation!r}; fix: use one of {', '.join(IMPLEMENTATIONS)}")
    torch.manual_seed(seed)
    if implementation == "fast":
        from .llama import from_transformers

        with torch.device(device):
            weights = TransformersLayout(config) if isinstance(config, LlamaShape) else transformers_llama(config)
        return from_transformers(weights)
    with torch.device(device):
        return transformers_llama(config.transformers_config() if isinstance(config, LlamaShape) else config)


def transformers_llama(config: LlamaConfig) -> torch.nn.Module:
    """transformers' `LlamaForCausalLM`, drawn from torch's generator as it stands."""
    from transformers import LlamaForCausalLM

    return LlamaForCausalLM(config)


def default_num_workers(device: str | torch.device) -> int:
    """Loader worker processes per rank: `GPU_WORKERS_PER_RANK` on a GPU, none on a CPU."""
    return GPU_WORKERS_PER_RANK if torch.device(device).type == "cuda" else 0


def preset_implementation(preset: str) -> str:
    """The model implementation a preset trains with (`fast` where speed is the point)."""
    return preset_entry(preset).get("implementation", "transformers")


# ---- FLOPs and MFU ----------------------------------------------------------------------------------


def matmul_parameters(config) -> int:
    """Weights that take part in matrix multiplies: every projection and the output head.

    The input embedding is a table lookup, not a multiply, so it is left out; a tied output head is
    the same matrix, counted once, as the head. Norm weights (elementwise) are left out too.
    """
    hidden, heads = config.hidden_size, config.num_attention_heads
    kv_heads = config.num_key_value_heads or heads
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    attention = hidden * head_dim * (2 * heads + 2 * kv_heads)  # q, o; k, v
    mlp = 3 * hidden * config.intermediate_size  # gate, up, down
    return config.num_hidden_layers * (attention + mlp) + config.vocab_size * hidden


def flops_per_token(config, seq_length: int) -> int:
    """Training FLOPs per token, PaLM's count: 6·N + 12·L·H·Q·T (forward + backward)."""
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    attention = 12 * config.num_hidden_layers * heads * head_dim * seq_length
    return 6 * matmul_parameters(config) + attention


def flops_per_token_llmc(model: torch.nn.Module, seq_length: int) -> int:
    """Training FLOPs per token as llm.c counts them: 6 · every parameter (the input embedding and norms
    included) + 6·L·C·T for attention (half of PaLM's term). Printed beside PaLM's count for comparison."""
    config = model.config
    parameters = sum(p.numel() for p in model.parameters())
    return 6 * parameters + 6 * config.num_hidden_layers * config.hidden_size * seq_length


def peak_flops_of(device_name: str) -> float | None:
    """Dense bf16 peak FLOP/s of the accelerator called `device_name`, None when not in the table."""
    for key, flops in PEAK_BF16_FLOPS:
        if key.lower() in device_name.lower():
            return flops
    return None


def peak_flops(device: str | torch.device) -> float | None:
    """Dense bf16 peak FLOP/s of `device`; None for a CPU or an accelerator not in the table."""
    device = torch.device(device)
    if device.type != "cuda":
        return None
    return peak_flops_of(torch.cuda.get_device_name(device))


# ---- the loop ---------------------------------------------------------------------------------------


@dataclass
class TrainResult:
    """What a run did: one dict per step, and the summary numbers a notebook reports."""

    log: list[dict[str, Any]]
    final_loss: float  # mean loss over the last ~10% of steps
    eval_loss: float | None  # held-out loss at the end
    tokens_per_s: float  # steady state: the first compile/warm-up steps left out
    mfu: float | None  # steady state, time-weighted; None where the peak is unknown
    data_wait_fraction: float  # share of steady-state step time spent waiting for the next batch

    def to_csv(self, path: str | Path) -> Path:
        """Write the log, one row per step, `LOG_COLUMNS` as header; atomically (temporary name, then rename)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with written_atomically(path, newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=LOG_COLUMNS, restval="")
            writer.writeheader()
            writer.writerows({k: ("" if v is None else v) for k, v in row.items()} for row in self.log)
        return path


def learning_rate(step: int, settings: TrainSettings) -> float:
    """Linear warm-up to `lr` over `warmup_steps`, then a cosine down to `min_lr` at the last step."""
    if step < settings.warmup_steps:
        return settings.lr * (step + 1) / settings.warmup_steps
    decay_steps = max(settings.steps - settings.warmup_steps - 1, 1)
    progress = min((step - settings.warmup_steps) / decay_steps, 1.0)
    return settings.min_lr + 0.5 * (settings.lr - settings.min_lr) * (1 + math.cos(math.pi * progress))


def make_optimizer(model: torch.nn.Module, settings: TrainSettings, device: torch.device) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices only (not norms), fused into one kernel on CUDA when asked."""
    parameters = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in parameters if p.dim() >= 2], "weight_decay": settings.weight_decay},
        {"params": [p for p in parameters if p.dim() < 2], "weight_decay": 0.0},
    ]
    fused = settings.fused_adamw and device.type == "cuda"
    return torch.optim.AdamW(groups, lr=settings.lr, betas=ADAM_BETAS, fused=fused)


def next_token_loss(model: torch.nn.Module, batch: dict[str, torch.Tensor], reduction: str = "mean",
                    loss_kernel: str = "torch") -> torch.Tensor:
    """Cross-entropy of the logits against the (already shifted) labels, positions at -100 left out; in
    float32 at least (half-precision logits are upcast, float64 ones kept). A model that masks documents
    itself gets the batch's `document_ids` when it carries them (`to_device` keeps them for packed rows only).
    `loss_kernel` "liger" or "cut" (summed loss only) applies the output layer and the loss in one library
    kernel to the model's last hidden states (`helpers.training.fused_loss`): no logits are made."""
    if loss_kernel != "torch":
        total = fused_linear_loss(loss_kernel, final_hidden_states(model, batch), output_weight(model), batch["labels"])
        return total if reduction == "sum" else total / (batch["labels"] != IGNORE_INDEX).sum()
    logits = model(**model_inputs(model, batch), use_cache=False).logits
    if logits.dtype in (torch.bfloat16, torch.float16):
        logits = logits.float()
    return F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(), ignore_index=IGNORE_INDEX,
                           reduction=reduction)


def model_inputs(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The forward's inputs from `batch`: ids and positions, and `document_ids` for a model that takes them."""
    documents = {"document_ids": batch["document_ids"]} if "document_ids" in batch and takes_document_ids(model) else {}
    return {"input_ids": batch["input_ids"], "position_ids": batch["position_ids"], **documents}


def final_hidden_states(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The model's normed last hidden states (through any DDP wrapper, so its hooks still run)."""
    return model(**model_inputs(model, batch), final_hidden=True).hidden_states


def output_weight(model: torch.nn.Module) -> torch.Tensor:
    """The output layer's weight, `[vocab, hidden]`, of `model` or the model inside a DDP wrapper."""
    return getattr(model, "module", model).lm_head.weight


def loss_function(model: torch.nn.Module, settings: TrainSettings, device: torch.device) -> Callable:
    """`batch -> summed token loss`, compiled (model and loss together) when asked and on CUDA; training and
    evaluation call the same function (under `no_grad` it compiles once more, for inference). With a fused
    loss kernel the model up to its last hidden states is compiled, and the library's kernel runs as it ships."""
    compiled = settings.compile and device.type == "cuda"
    if settings.loss_kernel != "torch":
        hidden_of = (lambda batch: final_hidden_states(model, batch))
        if compiled:
            hidden_of = torch.compile(hidden_of, fullgraph=True, mode=settings.compile_mode)
        return lambda batch: fused_linear_loss(settings.loss_kernel, hidden_of(batch), output_weight(model),
                                               batch["labels"])

    def loss_of(batch):
        return next_token_loss(model, batch, reduction="sum")

    if compiled:
        # one graph: a break would fail loudly, not slow down
        return torch.compile(loss_of, fullgraph=True, mode=settings.compile_mode)
    return loss_of


def autocast_context(settings: TrainSettings, device: torch.device):
    """bf16 autocast on CUDA when asked; float32 everywhere else."""
    if settings.dtype == "bfloat16" and device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def warn_about_cuda_only_settings(settings: TrainSettings, device: torch.device) -> None:
    """Say once which asked-for settings this device will not use, rather than dropping them silently."""
    if device.type == "cuda":
        return
    ignored = [name for name, asked in (("bf16 autocast", settings.dtype == "bfloat16"),
                                        ("torch.compile", settings.compile),
                                        ("fused AdamW", settings.fused_adamw)) if asked]
    if ignored:
        warnings.warn(f"{', '.join(ignored)}: CUDA only; not used on {device.type} (float32, eager)", stacklevel=3)


def to_device(batch: dict[str, torch.Tensor], device: torch.device, model=None) -> dict[str, torch.Tensor]:
    """The tensors the loss needs, on `device`; a batch without them is a UserError. A model that masks
    documents itself (`FastLlama`) also gets `document_ids` where the rows are packed."""
    needed = ("input_ids", "labels", "position_ids")
    missing = [k for k in needed if k not in batch]
    if missing:
        raise UserError(f"a batch has no {', '.join(missing)} (keys: {', '.join(batch)}); "
                        "fix: yield dicts in the layout of helpers.datasets.layout")
    if "document_ids" in batch and takes_document_ids(model) and packed_rows(batch["position_ids"]):
        if device.type != "cuda":
            raise UserError("packed rows train with the fast Llama on CUDA only (FlexAttention has no backward "
                            "on CPU); fix: implementation='transformers' (--implementation transformers)")
        needed += ("document_ids",)
    return {k: batch[k].to(device, non_blocking=True) for k in needed}


def takes_document_ids(model) -> bool:
    """Whether `model` (or the model inside a DDP wrapper) masks documents from `document_ids` itself."""
    return getattr(getattr(model, "module", model), "takes_document_ids", False)


def returns_final_hidden(model) -> bool:
    """Whether `model` (or the model inside a wrapper) can return its last hidden states (`FastLlama`)."""
    return getattr(getattr(model, "module", model), "returns_final_hidden", False)


def packed_rows(position_ids: torch.Tensor) -> bool:
    """Whether positions restart inside a row (documents packed side by side), read on the loader's CPU
    tensors: no wait for the device."""
    return bool((position_ids[:, 1:] != position_ids[:, :-1] + 1).any())


def check_held_out(eval_batches) -> None:
    """Refuse a one-shot iterator as held-out data: it would run dry after the first evaluation."""
    if eval_batches is not None and not callable(eval_batches) and iter(eval_batches) is eval_batches:
        raise UserError("eval_batches is an iterator, which runs dry after one evaluation; "
                        "fix: pass a list, or a function that returns a fresh iterable")


def held_out_batches(eval_batches) -> Iterable:
    """A fresh iterable of held-out batches: call a callable, reuse a list (or any re-iterable)."""
    return eval_batches() if callable(eval_batches) else eval_batches


@torch.no_grad()
def evaluate(model: torch.nn.Module, eval_batches, settings: TrainSettings, device: torch.device, *,
             loss_of: Callable | None = None) -> float:
    """Mean loss per label token over the first `settings.eval_batches` held-out batches (of every rank);
    `loss_of` is the training loop's (compiled) summed loss, or the model's eager one."""
    loss_of = loss_of or (lambda batch: next_token_loss(model, batch, reduction="sum"))
    model.eval()
    total, count = 0.0, 0
    try:
        for batch in islice(held_out_batches(eval_batches), settings.eval_batches):
            batch = to_device(batch, device, model)
            with autocast_context(settings, device):
                total += loss_of(batch).to(torch.float64)
            count += (batch["labels"] != IGNORE_INDEX).sum()
    finally:
        model.train()
    total, count = float(all_sum(torch.as_tensor(total, dtype=torch.float64, device=device))), \
        int(all_sum(torch.as_tensor(count, device=device)))
    if count == 0:
        raise UserError("eval_batches gave no labelled token; fix: pass held-out batches with labels")
    return total / count


def steady_steps(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The log without its first warm-up/compile steps (at most half of a short run)."""
    return log[min(TIMING_WARMUP_STEPS, len(log) // 2):]


def summarise(log: list[dict[str, Any]]) -> TrainResult:
    """The run's summary numbers from its per-step log."""
    steady = steady_steps(log)
    seconds = sum(row["step_s"] for row in steady)
    last = log[-max(1, round(len(log) * 0.1)):]
    evaluated = [row["eval_loss"] for row in log if "eval_loss" in row]
    known_mfu = steady[0]["mfu"] is not None
    return TrainResult(
        log=log,
        final_loss=sum(row["loss"] for row in last) / len(last),
        eval_loss=evaluated[-1] if evaluated else None,
        tokens_per_s=sum(row["tokens"] for row in steady) / seconds,
        mfu=sum(row["mfu"] * row["step_s"] for row in steady) / seconds if known_mfu else None,
        data_wait_fraction=sum(row["data_wait_s"] for row in steady) / seconds,
    )


@dataclass(frozen=True)
class StepPlan:
    """How one optimizer step runs: the loss, the settings, the device, the ranks, and the micro-batch
    size of gradient accumulation (None: the rank's whole batch at once)."""

    loss_of: Callable
    settings: TrainSettings
    device: torch.device
    world_size: int = 1
    micro_batch_size: int | None = None


@dataclass(frozen=True, kw_only=True)
class CheckpointPlan:
    """Where and when a run checkpoints, and whether it continues from the latest checkpoint there."""

    folder: Path
    every: int = 0  # steps between checkpoints (0: only when the run ends)
    resume: bool = False  # continue from the latest complete checkpoint in `folder`, if any
    until_step: int | None = None  # end this run before this step (a job's time limit), checkpointed

    def due(self, done: int, last: int) -> bool:
        """Whether to checkpoint after `done` steps of a run that ends at `last`."""
        return done == last or (self.every > 0 and done % self.every == 0)


def micro_batches(batch: dict[str, torch.Tensor], size: int | None) -> list[dict[str, torch.Tensor]]:
    """`batch` cut into consecutive micro-batches of `size` rows (the last may be smaller)."""
    rows = batch["input_ids"].shape[0]
    if size is None or size >= rows:
        return [batch]
    return [{key: value[start:start + size] for key, value in batch.items()} for start in range(0, rows, size)]


def optimizer_step(model, optimizer, batch: dict[str, torch.Tensor], lr: float,
                   plan: StepPlan) -> tuple[torch.Tensor, torch.Tensor]:
    """One update at learning rate `lr` on this rank's `batch` of the global batch: forward and backward
    per micro-batch, gradients reduced over the ranks with the last, then clip and step. Every rank's
    summed loss is scaled by `world / labelled` (see `helpers.training.distributed`), so the update is the
    global batch's mean token loss's. Returns that loss and the gradient norm."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    labelled = all_sum((batch["labels"] != IGNORE_INDEX).sum().to(torch.float64))
    pieces = micro_batches(batch, plan.micro_batch_size)
    total = torch.zeros((), dtype=torch.float64, device=plan.device)
    for index, piece in enumerate(pieces):
        with gradient_sync(model, enabled=index == len(pieces) - 1):
            with autocast_context(plan.settings, plan.device):
                loss_sum = plan.loss_of(piece)
            (loss_sum * (plan.world_size / labelled)).backward()
        total += loss_sum.detach().to(torch.float64)
    grad_norm = local_value(torch.nn.utils.clip_grad_norm_(model.parameters(), plan.settings.grad_clip or math.inf))
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return all_sum(total) / labelled, grad_norm


def should_evaluate(step: int, settings: TrainSettings, last_step: bool) -> bool:
    """Every `eval_every` steps, and after the last one."""
    return last_step or (settings.eval_every > 0 and (step + 1) % settings.eval_every == 0)


def train(model, batches: Iterable[dict[str, torch.Tensor]], settings: TrainSettings,
          device: str | torch.device = "cpu", eval_batches=None, progress: bool = True,
          csv_path: str | Path | None = None, *, parallel: str = "none",
          micro_batch_size: int | None = None, checkpoints: CheckpointPlan | None = None) -> TrainResult:
    """Train `model` for `settings.steps` steps on `batches`; per-step log, held-out loss, throughput, MFU.

    Each step is timed from the end of the one before (asking the iterator for a batch included) to the end
    of its optimizer step, by CUDA events on a GPU, read with the loss and gradient norm once every
    `settings.log_every` steps (see `helpers.training.step_log`: no wait for the device at every step).
    `data_wait_s` is the time the host blocked on the loader. Evaluation and checkpoints are timed apart.
    An iterator that runs dry before `settings.steps` ends the run early, with a warning.

    Under `torchrun` every process calls this with its rank's `batches` (`make_dataloader(rank=,
    world_size=)`): `parallel` is "ddp" or "fsdp" (see `helpers.training.distributed`); `micro_batch_size`
    accumulates gradients over smaller pieces of the rank's batch. The log's loss and tokens are the
    global batch's; only rank 0 shows progress and writes `csv_path`.

    `checkpoints` saves the whole run (model, optimizer, step, RNG, the loader's state; see
    `helpers.training.checkpoints`) and resumes it, on this or another number of processes: the steps
    after a resume are the steps an uninterrupted run would have taken; with another global batch, its samples,
    at its learning rates (`helpers.training.run_length`). The log holds this run's steps.
    """
    check_held_out(eval_batches)
    run = start_run(model, settings, torch.device(device), parallel=parallel, micro_batch_size=micro_batch_size)
    run.batches, run.eval_batches, run.checkpoints = batches, eval_batches, checkpoints
    length = resume_point(checkpoints, (run.model, run.optimizer), batches, run.config, steps=settings.steps)
    last_step = length.last_step
    if checkpoints is not None and checkpoints.until_step is not None:
        last_step = min(last_step, checkpoints.until_step)
    staged = staged_batches(iter(batches), run.device, lambda batch: to_device(batch, run.device, run.model))
    bar = progress_bar(total=last_step - length.first_step, desc="training", unit="step",
                       disable=not progress or not run.ranks.main)
    try:
        log = run_steps(run, staged, length, last_step=last_step, bar=bar)
    finally:
        staged.close()
        bar.close()
    if not log:
        raise UserError("the batches gave no batch at all; fix: check the loader (path, split, blend)")
    if eval_batches is not None and "eval_loss" not in log[-1]:
        # a run cut short still ends evaluated
        log[-1]["eval_loss"] = evaluate(run.model, eval_batches, settings, run.device, loss_of=run.plan.loss_of)
    result = summarise(log)
    if csv_path is not None and run.ranks.main:
        result.to_csv(csv_path)
    return result


@dataclass
class TrainingRun:
    """What the steps of one `train` call share: the model (wrapped for `parallel`) and its optimizer, how a
    step runs, the ranks, the peak FLOP/s of them all, and the data, held-out data and checkpoints."""

    model: Any
    optimizer: torch.optim.Optimizer
    plan: StepPlan
    ranks: Any
    config: Any  # the model's own config, for FLOPs and the checkpoints' identity
    peak: float | None
    batches: Any = None
    eval_batches: Any = None
    checkpoints: CheckpointPlan | None = None

    @property
    def device(self) -> torch.device:
        return self.plan.device


def start_run(model, settings: TrainSettings, device: torch.device, *, parallel: str,
              micro_batch_size: int | None) -> TrainingRun:
    """`model` seeded, on this rank's device, in the settings' dtype and wrapped for `parallel`, with its
    optimizer and step plan."""
    ranks = join_ranks()
    device = rank_device(device, ranks)
    torch.manual_seed(settings.seed)
    model.to(device).train()
    if settings.dtype == "float64":
        model.to(torch.float64)
    config = model.config
    check_loss_kernel(settings.loss_kernel, device=device, implementation_fast=returns_final_hidden(model),
                      parallel=parallel)
    model = parallel_model(model, parallel, device)
    optimizer = make_optimizer(model, settings, device)
    plan = StepPlan(loss_function(model, settings, device), settings, device, world_size=ranks.world_size,
                    micro_batch_size=micro_batch_size)
    peak = peak_flops(device)
    peak = None if peak is None else peak * ranks.world_size
    warn_about_cuda_only_settings(settings, device)
    return TrainingRun(model=model, optimizer=optimizer, plan=plan, ranks=ranks, config=config, peak=peak)


def run_steps(run: TrainingRun, staged, length: RunLength, last_step: int, bar) -> list[dict[str, Any]]:
    """The steps from `length.first_step` to `last_step` on the `staged` batches; their log. Evaluation and
    checkpoints come where due, timed apart from the steps."""
    settings, device = run.plan.settings, run.device
    log: list[dict[str, Any]] = []
    pending = PendingSteps(StepClock(device))
    pending.clock.mark()
    for step in range(length.first_step, last_step):
        lr = learning_rate(length.schedule_step(step), settings)
        asked = time.perf_counter()
        batch = next(staged, None)  # on a GPU, already copied there while the last step ran
        data_wait_s = time.perf_counter() - asked  # the host blocked on the loader
        if batch is None:
            warnings.warn(f"the batches ran out after {step} of {length.last_step} steps", stacklevel=3)
            break
        loss, grad_norm = optimizer_step(run.model, run.optimizer, batch, lr=lr, plan=run.plan)
        tokens = batch["input_ids"].numel() * run.ranks.world_size
        pending.add({"step": step, "lr": lr, "tokens": tokens, "data_wait_s": data_wait_s,
                     "flops_per_token": flops_per_token(run.config, batch["input_ids"].shape[1])}, loss, grad_norm)
        evaluate_now = (run.eval_batches is not None
                        and should_evaluate(step, settings, step == length.last_step - 1))
        checkpoint_now = run.checkpoints is not None and run.checkpoints.due(step + 1, last_step)
        pause = evaluate_now or checkpoint_now or step == last_step - 1
        bar.update(1)
        if pause or (step + 1) % settings.log_every == 0:
            # one wait for the device per log_every steps; on a GPU, between pauses, it waits for the step
            # before the last, so the device still has the last one queued while the host prepares the next
            log += pending.flush(run.peak, keep_last=0 if pause or device.type != "cuda" else 1)
            if evaluate_now:
                log[-1]["eval_loss"] = evaluate(run.model, run.eval_batches, settings, device, loss_of=run.plan.loss_of)
            if checkpoint_now:
                save_checkpoint(run.checkpoints.folder, step + 1, (run.model, run.optimizer),
                                {"loader": staged.loader_state(run.batches),
                                 **run_identity(run.config, run.batches, run.model)})
            if evaluate_now or checkpoint_now:
                pending.clock.restart()  # evaluation and saving are no step's time
            if log:
                bar.set_postfix(progress_postfix(log[-1]), refresh=False)
    return log + pending.flush(run.peak)


def resume_point(checkpoints: CheckpointPlan | None, trained: tuple, batches, config, steps: int) -> RunLength:
    """The steps of this run of `steps`: all of them, or those after the latest checkpoint when resuming (loaded
    into `trained`, the model and optimizer, and into the loader `batches`), in the loader's global batch."""
    if checkpoints is None:
        return RunLength(0, steps)
    if not hasattr(batches, "state_dict"):
        raise UserError("checkpoints need the loader's state; fix: train on batches from make_dataloader")
    latest = latest_checkpoint(checkpoints.folder) if checkpoints.resume else None
    if latest is None:
        return RunLength(0, steps)
    run = load_checkpoint(latest, *trained, identity=run_identity(config, batches, trained[0]))
    batches.load_state_dict(run["loader"])
    return resumed_length(latest, run, batches, steps)


def progress_postfix(row: dict[str, Any]) -> dict[str, str]:
    """The numbers the progress bar shows for one step."""
    postfix = {"loss": f"{row['loss']:.3f}", "tok/s": f"{row['tokens_per_s']:,.0f}",
               "mfu": "n/a" if row["mfu"] is None else f"{row['mfu']:.1%}"}
    if "eval_loss" in row:
        postfix["eval"] = f"{row['eval_loss']:.3f}"
    return postfix
