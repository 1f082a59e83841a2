"""The framework examples under `examples/` run as a user runs them (the distributed ones on 2 processes
under torchrun): on real data their loss falls below what random tokens give on the same steps, random
tokens come only by name and say so, missing data is one line and exit 2 in every one; and every framework
learns from the same global batches and, from the same weights with the same optimizer, draws the same
loss curve as `helpers.training` does."""

from __future__ import annotations

import math
import re

import pytest
import torch

from helpers.audit.planting import BUGS, PLANTED_AT, REPLAYED, REPLAYS, replay_named_at
from helpers.audit.statistics import WRAP_TOKENS
from helpers.loading.loader import make_dataloader
from helpers.preprocess import preprocess
from helpers.training.framework_runs import global_batch_digest
from helpers.workshop.frameworks import model_flags, run_framework

# Each example and the number of processes it runs on here.
EXAMPLES = {"trainer": 1, "deepspeed": 2, "megatron": 2}
STEPS, GLOBAL_BATCH, SEQ = 20, 8, 64
SHAPE = model_flags({"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4})
TINY = ["--steps", str(STEPS), "--global-batch-size", str(GLOBAL_BATCH), "--seq-length", str(SEQ), *SHAPE]
# helpers.training's launches below train the plain-PyTorch Llama (transformers' weights and function,
# tests/test_fast_llama.py), which starts without importing transformers; `real_runs` trains the preset's own model
PLAIN_MODEL = ["--implementation", "fast"]
FINAL_LOSS = re.compile(r"loss [0-9.]+ -> ([0-9.]+)")
SAME_CURVE = 1e-4  # float32 on CPU: the frameworks sum in different orders


@pytest.fixture(scope="module")
def prefix(docs_bytes_prefix) -> str:
    return docs_bytes_prefix


@pytest.fixture(scope="module")
def large_vocab_prefix(corpus_dir, tmp_path_factory) -> str:
    """The docs domain as llama3's ids (128,256 of them): the data of the vocabulary bugs."""
    made = preprocess(corpus_dir / "docs.jsonl", tmp_path_factory.mktemp("examples") / "docs", "llama3",
                      append_eod=True, workers=2, progress=False)
    return made.outputs["text"]


@pytest.fixture(scope="module")
def real_runs(prefix, tmp_path_factory) -> dict:
    """Each example's per-step log on the real data, and `helpers.training`'s on 2 processes with DDP; every
    batch audited where the command takes `--audit` (all but megatron): real batches raise no finding."""
    folder = tmp_path_factory.mktemp("example-logs")
    logs = {}
    for name, processes in {**EXAMPLES, "helpers.training": 2}.items():
        audit = [] if name == "megatron" else ["--audit"]
        run = run_framework(name, [*audit, "--data-path", prefix, *TINY], processes, csv=folder / f"{name}.csv")
        assert run.returncode == 0 and "real data:" in run.stderr, run.stderr[-3000:]
        assert run.log is not None and len(run.log) == STEPS
        if name in EXAMPLES:
            assert float(FINAL_LOSS.search(run.stdout)[1]) == pytest.approx(run.log["loss"].iloc[-1], abs=1e-4)
        assert "shm_comm" not in run.stdout + run.stderr  # DeepSpeed built or loaded no inference op
        logs[name] = run.log
    return logs


@pytest.mark.parametrize("name", EXAMPLES)
def test_real_data_beats_random_tokens_on_the_same_steps(name, real_runs):
    """On uniform random ids the loss cannot fall below ln V (notebook 06): the real run ends over a nat below it.
    Random ids come only by name: Megatron's run on them is here; the others' are audited below (and stopped)."""
    assert real_runs[name]["loss"].iloc[-1] < math.log(258) - 1.0, real_runs[name]
    if name == "megatron":  # the one example without --audit, so without the audited random run below
        synthetic = run_framework(name, ["--synthetic", "--vocab-size", "258", *TINY], EXAMPLES[name]).check()
        assert "SYNTHETIC DATA, asked for by name" in synthetic.stderr
        assert float(FINAL_LOSS.search(synthetic.stdout)[1]) > 0.95 * math.log(258)


def test_every_framework_learns_from_the_loaders_global_batches(real_runs, prefix):
    loader = make_dataloader([prefix], split="100,0,0", seq_length=SEQ, batch_size=GLOBAL_BATCH,
                             num_samples=STEPS * GLOBAL_BATCH, seed=0, cache_dir=None)
    expected = [global_batch_digest(batch["input_ids"]) for batch in loader]
    assert len(set(expected)) == STEPS  # the batches differ from step to step, so equal digests mean something
    for name in EXAMPLES:
        assert list(real_runs[name]["batch_digest"]) == expected, name


def test_every_framework_draws_the_same_loss_curve(real_runs):
    reference = list(real_runs["helpers.training"]["loss"])
    assert reference[-1] < reference[0] - 1.0
    for name in EXAMPLES:
        assert list(real_runs[name]["loss"]) == pytest.approx(reference, abs=SAME_CURVE), name


def test_trainer_under_torchrun_takes_the_steps_it_takes_on_one_process(real_runs, prefix, tmp_path):
    """Trainer cuts each global batch over the ranks itself: on 2 processes the same batches, the same curve."""
    run = run_framework("trainer", ["--data-path", prefix, *TINY], 2, csv=tmp_path / "trainer.csv").check()
    assert "Trainer on 2 process(es)" in run.stdout
    assert list(run.log["batch_digest"]) == list(real_runs["trainer"]["batch_digest"])
    assert list(run.log["loss"]) == pytest.approx(list(real_runs["trainer"]["loss"]), abs=SAME_CURVE)
    # its sampler, not the loader, gives each rank its slice: a loader never told its rank cannot be planted
    refused = run_framework("trainer", ["--plant-bug", "rank-not-set", "--data-path", prefix, *TINY], 2)
    assert refused.returncode != 0 and "rank-not-set cannot be planted in Trainer" in refused.stderr, refused.stderr


@pytest.mark.parametrize("stage", [1, 3])
def test_every_zero_stage_takes_the_same_steps(stage, real_runs, prefix, tmp_path):
    run = run_framework("deepspeed", ["--zero-stage", str(stage), "--data-path", prefix, *TINY], 2,
                        csv=tmp_path / "zero.csv").check()
    assert list(run.log["loss"]) == pytest.approx(list(real_runs["deepspeed"]["loss"]), abs=SAME_CURVE)


@pytest.mark.parametrize("name", [*EXAMPLES, "helpers.training"])
def test_missing_data_is_one_line_and_exit_2(name):
    """No --data-path at all; a --data-path that names nothing is notebook 08's deep dive 5, for every framework."""
    run = run_framework(name, TINY)
    assert run.returncode == 2 and "fix:" in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_megatron_runs_its_own_attention_and_rotary_on_a_gpu(prefix):
    """On CUDA the example builds megatron-core's local spec as it ships; it learns as on the CPU."""
    run = run_framework("megatron", ["--data-path", prefix, *TINY, "--device", "cuda"]).check()
    assert float(FINAL_LOSS.search(run.stdout)[1]) < 4.5


@pytest.mark.parametrize("name, processes, flags", [
    ("helpers.training", 2, ["--parallel", "ddp", *PLAIN_MODEL]),
    ("helpers.training", 2, ["--parallel", "fsdp", *PLAIN_MODEL]),
    ("deepspeed", 2, []), ("trainer", 1, [])], ids=["ddp", "fsdp", "deepspeed", "trainer"])
def test_audit_passes_real_batches_and_stops_a_random_fallback_at_step_0(name, processes, flags, prefix):
    if "fsdp" in flags:  # real_runs audits the others' real batches, 20 steps each
        short = ["--steps", "4", *TINY[2:]]
        healthy = run_framework(name, ["--audit", "--data-path", prefix, *short, *flags], processes)
        assert healthy.returncode == 0, healthy.stderr[-3000:]
    # rows of 128 tokens: random ids are named at their first step (shorter rows wait for 1,024 pooled ids)
    wide = ["--steps", "4", "--global-batch-size", str(GLOBAL_BATCH), "--seq-length", "128", *SHAPE]
    fallback = run_framework(name, ["--audit", "--synthetic", "--vocab-size", "258", *wide, *flags], processes)
    assert "SYNTHETIC DATA, asked for by name" in fallback.stderr, fallback.stderr[-3000:]
    errors = [line for line in fallback.stderr.splitlines() if line.startswith("error: ")]
    # one line from each rank that got to say it (torchrun stops the others once one has failed)
    assert 1 <= len(errors) <= processes, fallback.stderr[-3000:]
    assert all(re.match(r"error: random-tokens \(rank \d, step 0\): .*fix: ", line) for line in errors), errors
    if processes == 1:
        assert fallback.returncode == 2 and "Traceback" not in fallback.stderr, fallback.stderr[-3000:]
    else:  # torchrun reports its failed ranks in a block of its own
        assert fallback.returncode != 0, fallback.stderr[-3000:]


def test_an_audited_run_resumes_from_its_checkpoint_without_a_finding(prefix, tmp_path):
    flags = ["--audit", "--data-path", prefix, "--checkpoint-dir", str(tmp_path / "ckpt"), *TINY[:1], "6", *TINY[2:],
             *PLAIN_MODEL]
    stopped = run_framework("helpers.training", [*flags, "--until-step", "3", "--checkpoint-every", "3"])
    assert stopped.returncode == 0, stopped.stderr[-3000:]
    # a resume put back two batches before its checkpoint: the auditor's digests came through the restart
    replayed = run_framework("helpers.training", [*flags, "--resume", "--plant-bug", "resume-replays"])
    assert findings(replayed) == {("repeated-batch", 0, 3)}, replayed.stderr[-3000:]
    assert "equals the one at step 1" in replayed.stderr
    resumed = run_framework("helpers.training", [*flags, "--resume"], csv=tmp_path / "resumed.csv")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert list(resumed.log["step"]) == [3, 4, 5]


AUDITED = {"ddp": ("helpers.training", 2, ["--parallel", "ddp", *PLAIN_MODEL]),
           "deepspeed": ("deepspeed", 2, []), "trainer": ("trainer", 1, [])}
FINDING = re.compile(r"^error: ([a-z-]+) \(rank (\d+), step (\d+)\): .*; fix: ", re.MULTILINE)


def findings(run) -> set[tuple[str, int, int]]:
    """(code, rank, step) of every finding a run's processes stopped on."""
    return {(code, int(rank), int(step)) for code, rank, step in FINDING.findall(run.stderr)}


def due_step(bug: str, tokens_per_step: int, rows: int, ranks: int) -> int:
    """The first step at which the planted bug can be seen."""
    if bug in ("rank-not-set", "double-shift", "no-shift", "past-vocab"):
        return 0
    if bug == "uint16-wrap":  # named once a rank's stream has held WRAP_TOKENS ids and none of the top half
        return math.ceil(WRAP_TOKENS / tokens_per_step) - 1
    if bug in REPLAYS:  # once the replayed run is longer than a reshuffle makes by chance
        return replay_named_at(PLANTED_AT, rows, ranks, REPLAYED * rows if bug == "resume-replays" else None)
    return PLANTED_AT


# The planter and the live auditor are one code path in every framework (`batches_for_the_model`, or Trainer's
# collator and callback around the same two); each bug of the stream is named through them on two ranks in
# test_audit, and the set-up bugs' switches are tested there too. Launched here, for each framework, is what it
# wires itself: the loader's rank (rank-not-set), the model's vocabulary (past-vocab), a stop several steps in with
# the steps counted over the ranks (resume-replays); in helpers.training also the labels it hands the auditor
# (double-shift) and a finding on one rank alone (partly-random); in Trainer, whose collator plants and whose
# callback audits what the model is called with, the labels' bugs, a loop and uint16-wrap (16,384 ids of a 128k
# vocabulary before it shows: one step's worth on Trainer's one process). helpers.training wires the loader, the
# vocabulary and the auditor the same way under --parallel ddp and fsdp (the flag reaches only the training loop):
# its bugs are launched with DDP, and FSDP2's audited runs are the real and the random ones above. What no rank
# changes, the model's vocabulary and the labels, is launched on one process (no torchrun), as a script is run alone.
WIRED = ["rank-not-set", "past-vocab", "resume-replays"]
ONE_PROCESS_BUGS = ("past-vocab", "double-shift")
PLANTED_IN = {"ddp": [*WIRED, "double-shift", "partly-random"], "deepspeed": WIRED,
              "trainer": [*WIRED, "double-shift", "no-shift", "padding-in-loss", "stream-loops", "uint16-wrap"]}


@pytest.mark.parametrize("framework, bug", [(framework, bug) for framework, bugs in PLANTED_IN.items()
                                            for bug in bugs])
def test_each_framework_wires_its_planted_bugs_to_the_audit(framework, bug, prefix, large_vocab_prefix):
    """The bug done to the real batches by name, as a broken script would; the audit names it, on the
    step it first shows, and the run stops there (exit 2, or torchrun's failure on 2 processes)."""
    name, processes, flags = AUDITED[framework]
    if bug in ONE_PROCESS_BUGS:
        processes, flags = 1, PLAIN_MODEL if name == "helpers.training" else []
    data = large_vocab_prefix if bug in ("past-vocab", "uint16-wrap") else prefix
    # the audit sees a random row among real ones in rows of 128 tokens or more; uint16 once 16,384 ids came: one
    # step of 8 x 2,048, named before the 128k-vocabulary model's first forward
    steps, seq = {"uint16-wrap": (2, 2048), "random-fallback": (6, 128), "partly-random": (6, 128)}.get(bug, (6, SEQ))
    run = run_framework(name, ["--audit", "--plant-bug", bug, "--data-path", data, "--steps", str(steps),
                               "--global-batch-size", str(GLOBAL_BATCH), "--seq-length", str(seq), *SHAPE, *flags],
                        processes)
    # no traceback from a rank; torchrun's own (ending in ChildFailedError) is its report of the failed ranks
    assert run.returncode != 0 and run.stderr.count("Traceback") == (processes > 1), run.stderr[-3000:]
    if bug == "rank-not-set" and processes == 1:  # one process has no other rank to repeat: said, not ignored
        assert run.returncode == 2 and run.stderr_line.startswith("error: rank-not-set needs two processes")
        return
    assert f"PLANTED BUG, asked for by name: {bug}" in run.stderr
    due = due_step(bug, GLOBAL_BATCH // processes * seq, GLOBAL_BATCH // processes, processes)
    found = findings(run)
    assert found and {(code, step) for code, _, step in found} == {(BUGS[bug][0], due)}, run.stderr[-3000:]
    assert "terminate called" not in run.stderr, run.stderr[-3000:]  # every rank left by its own exit
