"""Training: presets and overrides, PaLM's FLOP count by hand, loss that falls on real text and stays at
ln V on random tokens, the per-step log and its CSV, and (on a GPU) bf16 + torch.compile with MFU."""

from __future__ import annotations

import csv
import math
import time

import numpy as np
import pytest
import torch

from helpers.common.errors import UserError
from helpers.datasets.layout import from_windows
from helpers.tokenizers.zoo import load_tokenizer
from helpers.training.step_log import model_flops_utilisation
from helpers.training.train import (
    LOG_COLUMNS,
    PRESETS,
    build_model,
    flops_per_token,
    learning_rate,
    llama_config,
    matmul_parameters,
    peak_flops,
    peak_flops_of,
    preset_implementation,
    train,
    train_settings,
)


def windows_from(tokens: np.ndarray, batch_size: int, seq_length: int, rng: np.random.Generator) -> dict:
    """One batch of random windows of `seq_length + 1` consecutive tokens."""
    starts = rng.integers(0, len(tokens) - seq_length - 1, size=batch_size)
    return from_windows(np.stack([tokens[s:s + seq_length + 1] for s in starts]), eod_id=None)


def text_batches(tokens: np.ndarray, batch_size: int, seq_length: int, seed: int = 0):
    """Endless batches of windows from `tokens`."""
    rng = np.random.default_rng(seed)
    while True:
        yield windows_from(tokens, batch_size, seq_length, rng)


def random_batches(vocab_size: int, batch_size: int, seq_length: int, seed: int = 0):
    """Endless batches of uniformly random ids: nothing to learn."""
    generator = torch.Generator().manual_seed(seed)
    while True:
        yield from_windows(torch.randint(0, vocab_size, (batch_size, seq_length + 1), generator=generator), None)


@pytest.fixture(scope="module")
def real_bytes() -> np.ndarray:
    """About 40 kB of real English (the Python language reference, in every CPython) as byte ids."""
    from pydoc_data.topics import topics

    text = "\n\n".join(topics[name] for name in sorted(topics))[:40_000]
    return np.array(load_tokenizer("bytes").encode(text), dtype=np.int64)


def tiny(preset: str = "cpu-tiny", vocab_size: int = 258, **train_overrides):
    """A small model of `preset` and its settings with `train_overrides`."""
    config = llama_config(preset, vocab_size=vocab_size, hidden_size=64, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=128)
    settings = train_settings(preset, **train_overrides)
    return build_model(config, "cpu", seed=settings.seed), settings


# ---- presets and overrides ----


def test_presets_hold_a_model_and_training_settings():
    for name in PRESETS:
        config, settings = llama_config(name), train_settings(name)
        assert config.hidden_size % config.num_attention_heads == 0
        assert config.max_position_embeddings == settings.seq_length
    assert train_settings("h100").dtype == "bfloat16" and train_settings("h100").compile
    assert train_settings("cpu-tiny").dtype == "float32" and not train_settings("cpu-tiny").compile


def test_overrides_apply_and_unknown_names_are_refused():
    assert llama_config("cpu-tiny", vocab_size=1234).vocab_size == 1234
    assert train_settings("cpu-tiny", steps=7).steps == 7
    with pytest.raises(UserError, match="hidden_size"):  # the message lists the valid names
        llama_config("cpu-tiny", hiden_size=64)
    with pytest.raises(UserError, match="warmup_steps"):
        train_settings("cpu-tiny", warmup=3)
    with pytest.raises(UserError, match="cpu-tiny"):
        train_settings("a100")
    with pytest.raises(UserError, match="num_attention_heads"):
        llama_config("h100", hidden_size=64)  # 12 heads do not divide 64
    with pytest.raises(UserError, match="dtype"):
        train_settings("cpu-tiny", dtype="float16")
    assert train_settings("h100", compile_mode="max-autotune-no-cudagraphs").compile_mode == "max-autotune-no-cudagraphs"
    with pytest.raises(UserError, match="max-autotune-no-cudagraphs"):  # the message lists torch.compile's modes
        train_settings("h100", compile_mode="fastest")


def test_h100_preset_is_about_125m_parameters():
    model = build_model(llama_config("h100"), "meta")
    parameters = sum(p.numel() for p in model.parameters())
    assert 100e6 <= parameters <= 160e6


def test_learning_rate_warms_up_then_decays_to_min_lr():
    settings = train_settings("cpu-tiny", steps=50, warmup_steps=10, lr=1e-3, min_lr=1e-4)
    rates = [learning_rate(s, settings) for s in range(settings.steps)]
    assert rates[0] == pytest.approx(1e-4) and rates[9] == pytest.approx(1e-3)
    assert all(a >= b for a, b in zip(rates[9:], rates[10:]))
    assert rates[-1] == pytest.approx(1e-4)


# ---- FLOPs and MFU ----


def test_flops_per_token_matches_a_hand_count():
    config = llama_config("cpu-tiny", vocab_size=100, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=2, intermediate_size=128)
    head_dim = 64 // 4
    q = o = 64 * 4 * head_dim  # 4096 each
    k = v = 64 * 2 * head_dim  # 2048 each (grouped-query: 2 key/value heads)
    mlp = 3 * 64 * 128  # gate, up, down: 24576
    head = 100 * 64  # the output head counts, the input embedding does not
    by_hand = 2 * (q + k + v + o + mlp) + head
    assert by_hand == 80_128 == matmul_parameters(config)
    assert flops_per_token(config, 32) == 6 * 80_128 + 12 * 2 * 4 * head_dim * 32 == 529_920

    model = build_model(config, "meta")
    linear_weights = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    assert linear_weights == by_hand
    tied = llama_config("cpu-tiny", vocab_size=100, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        num_key_value_heads=2, intermediate_size=128, tie_word_embeddings=True)
    assert matmul_parameters(tied) == by_hand  # the shared matrix counted once


def test_mfu_arithmetic_and_peak_table():
    assert model_flops_utilisation(529_920, 1e6, 989e12) == pytest.approx(529_920 * 1e6 / 989e12)
    assert model_flops_utilisation(529_920, 1e6, None) is None
    assert peak_flops_of("NVIDIA H100 80GB HBM3") == 989e12
    assert peak_flops_of("NVIDIA H100 PCIe") == 756e12
    assert peak_flops_of("NVIDIA H200") == 989e12
    assert peak_flops_of("NVIDIA A100-SXM4-80GB") == 312e12
    assert peak_flops_of("Quadro RTX 5000") is None
    assert peak_flops("cpu") is None


# ---- the loop ----


def test_loss_falls_on_real_text(real_bytes):
    model, settings = tiny(steps=60, seq_length=64, batch_size=8, warmup_steps=5, eval_every=30, eval_batches=2)
    held_out = [windows_from(real_bytes, 8, 64, np.random.default_rng(99)) for _ in range(2)]
    result = train(model, text_batches(real_bytes, 8, 64), settings, "cpu", eval_batches=held_out, progress=False)
    first = result.log[0]["loss"]
    assert first == pytest.approx(math.log(258), rel=0.1)  # a random model guesses uniformly
    assert result.final_loss < 0.65 * first
    assert result.eval_loss < 0.7 * first
    assert [row["step"] for row in result.log if "eval_loss" in row] == [29, 59]


def test_loss_stays_at_ln_v_on_random_tokens():
    vocab_size = 512
    model, settings = tiny(vocab_size=vocab_size, steps=40, seq_length=64, batch_size=8, warmup_steps=5)
    result = train(model, random_batches(vocab_size, 8, 64), settings, "cpu", progress=False)
    assert result.final_loss == pytest.approx(math.log(vocab_size), rel=0.05)


def test_h100_preset_runs_on_cpu_with_tiny_overrides():
    config = llama_config("h100", hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
    settings = train_settings("h100", seq_length=32, batch_size=4, steps=2, compile=False, dtype="float32")
    model = build_model(config, "cpu", seed=settings.seed)
    with pytest.warns(UserWarning, match="fused AdamW"):  # asked for, CUDA only: said, not silently dropped
        result = train(model, random_batches(config.vocab_size, 4, 32), settings, "cpu", progress=False)
    assert len(result.log) == 2 and math.isfinite(result.final_loss)
    assert result.mfu is None and result.log[0]["mfu"] is None  # no known peak on a CPU


def test_log_columns_and_csv(tmp_path):
    model, settings = tiny(steps=4, seq_length=16, batch_size=2, eval_every=2, eval_batches=1)
    held_out = lambda: random_batches(258, 2, 16, seed=1)  # noqa: E731  a callable gives a fresh iterable
    path = tmp_path / "runs" / "log.csv"
    result = train(model, random_batches(258, 2, 16), settings, "cpu", eval_batches=held_out, progress=False,
                   csv_path=path)
    assert set(result.log[1]) == set(LOG_COLUMNS)
    assert all(row["tokens"] == 2 * 16 for row in result.log)
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == LOG_COLUMNS and len(rows) == 4
    assert rows[0]["eval_loss"] == "" and float(rows[1]["eval_loss"]) > 0
    assert not list(tmp_path.glob("runs/*.tmp"))


def test_data_wait_is_measured():
    def slow(batches):
        for batch in batches:
            time.sleep(0.05)
            yield batch

    model, settings = tiny(steps=3, seq_length=16, batch_size=2)
    result = train(model, slow(random_batches(258, 2, 16)), settings, "cpu", progress=False)
    assert all(0.05 <= row["data_wait_s"] <= row["step_s"] for row in result.log)
    assert 0 < result.data_wait_fraction <= 1


def test_running_out_of_batches_warns_and_one_shot_eval_iterators_are_refused():
    model, settings = tiny(steps=5, seq_length=16, batch_size=2)
    few = [next(random_batches(258, 2, 16))] * 3
    with pytest.warns(UserWarning, match="ran out after 3 of 5"):
        assert len(train(model, few, settings, "cpu", progress=False).log) == 3
    with pytest.raises(UserError, match="iterator"):  # refused before any training step
        train(model, iter([]), settings, "cpu", eval_batches=iter(few), progress=False)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_h100_preset_on_cuda_with_bf16_and_compile():
    config = llama_config("h100")
    settings = train_settings("h100", steps=8, warmup_steps=2, eval_every=0, eval_batches=2)
    assert settings.dtype == "bfloat16" and settings.compile and settings.fused_adamw
    model = build_model(config, "cuda", seed=settings.seed, implementation=preset_implementation("h100"))
    batches = random_batches(config.vocab_size, settings.batch_size, settings.seq_length)
    held_out = [next(random_batches(config.vocab_size, 4, settings.seq_length, seed=1)) for _ in range(2)]
    result = train(model, batches, settings, "cuda", eval_batches=held_out, progress=False)
    assert math.isfinite(result.final_loss) and math.isfinite(result.eval_loss)
    if peak_flops("cuda") is None:  # a GPU missing from the peak table
        assert result.mfu is None
    else:
        assert result.mfu > 0


def test_command_line_settings_read_as_numbers_and_are_checked_by_kind():
    from helpers.training.command import assignments

    read = assignments(["lr=3e-3", "steps=40", "compile=false", "dtype=float64", "grad_clip=0"], "--train")
    assert read == {"lr": 0.003, "steps": 40, "compile": False, "dtype": "float64", "grad_clip": 0}
    settings = train_settings(**read, min_lr=np.float32(1e-4), warmup_steps=np.int64(2))
    assert settings.lr == 0.003 and settings.grad_clip == 0 and settings.warmup_steps == 2
    for wrong in ({"lr": "fast"}, {"steps": 2.5}, {"steps": True}, {"compile": 1}):
        with pytest.raises(UserError, match=f"{next(iter(wrong))}=.*expected"):
            train_settings(**wrong)


def test_the_log_is_read_from_the_device_once_every_log_every_steps(monkeypatch):
    from helpers.training import step_log

    reads = []
    original = step_log.PendingSteps.flush

    def counted(self, peak, keep_last=0):
        rows = original(self, peak, keep_last)
        reads.append(len(rows))
        return rows

    monkeypatch.setattr(step_log.PendingSteps, "flush", counted)
    config = llama_config("cpu-tiny", vocab_size=258, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                          num_attention_heads=4)
    settings = train_settings("cpu-tiny", steps=10, batch_size=2, seq_length=16, log_every=4, eval_every=0)
    result = train(build_model(config, seed=0), random_batches(258, 2, 16), settings, progress=False)
    assert [n for n in reads if n] == [4, 4, 2]  # steps 0-3, 4-7, then the last two at the end
    assert [row["step"] for row in result.log] == list(range(10))
    assert all(row["step_s"] >= row["data_wait_s"] >= 0 and math.isfinite(row["loss"]) for row in result.log)


def test_pending_steps_complete_their_rows_in_one_read():
    from helpers.training.step_log import PendingSteps, StepClock

    pending = PendingSteps(StepClock(torch.device("cpu")))
    pending.clock.mark()
    for step in range(3):
        pending.add({"step": step, "lr": 0.1, "tokens": 64, "data_wait_s": 0.0, "flops_per_token": 10},
                    torch.tensor(2.0 + step), torch.tensor(0.5))
    rows = pending.flush(peak=1e9)
    assert [row["loss"] for row in rows] == [2.0, 3.0, 4.0] and all(row["grad_norm"] == 0.5 for row in rows)
    assert all(row["step_s"] > 0 and row["mfu"] == pytest.approx(10 * row["tokens_per_s"] / 1e9) for row in rows)
    assert pending.flush(peak=None) == [] and len(pending.clock.marks) == 1


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA device")])])
def test_staged_batches_arrive_in_order_and_whole(device):
    from helpers.training.staging import staged_batches

    host = [next(random_batches(97, 2, 8, seed=seed)) for seed in range(4)]
    if device == "cuda":
        host = [{key: value.pin_memory() for key, value in batch.items()} for batch in host]
    prepared = []

    def prepare(batch):
        prepared.append(batch["input_ids"])
        return {key: value.to(device, non_blocking=True) for key, value in batch.items()}

    staged = list(staged_batches(iter(host), torch.device(device), prepare))
    assert len(staged) == 4 and len(prepared) == 4
    for ours, theirs in zip(staged, host):
        assert all(torch.equal(ours[key].cpu(), theirs[key]) for key in theirs)


def test_evaluation_runs_through_the_loops_loss_function(monkeypatch):
    """Held-out batches go through the same (on CUDA, compiled) loss function as the training steps."""
    import helpers.training.train as loop

    seen, original = [], loop.loss_function

    def counting_loss_function(model, settings, device):
        inner = original(model, settings, device)

        def loss_of(batch):
            seen.append("train" if model.training else "eval")
            return inner(batch)
        return loss_of

    monkeypatch.setattr(loop, "loss_function", counting_loss_function)
    settings = train_settings("cpu-tiny", steps=2, eval_every=0, eval_batches=2, seq_length=16, batch_size=2)
    model = build_model(llama_config("cpu-tiny", vocab_size=258, num_hidden_layers=1), seed=0)
    held_out = [next(random_batches(258, 2, 16, seed=1)) for _ in range(2)]
    result = train(model, random_batches(258, 2, 16), settings, "cpu", eval_batches=held_out, progress=False)
    assert seen == ["train", "train", "eval", "eval"] and math.isfinite(result.eval_loss)
