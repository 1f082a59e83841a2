"""`helpers.audit`: no finding on the loader's real batches (every tokenizer of the zoo, each domain and a
blend, packed and not, with and without EOD, short and long rows, one row and 64), and each planted bug
named, from the first step where it shows."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
import torch

from helpers.audit import CODES, DataBugError, audit, audit_ranks
from helpers.audit.statistics import WRAP_TOKENS
from helpers.audit.stream import AuditSettings, StreamAudit
from helpers.common.errors import UserError
from helpers.datasets.layout import IGNORE_INDEX
from helpers.loading.loader import make_dataloader
from helpers.preprocess import preprocess
from helpers.tokenizers.zoo import load_tokenizer

TOKENIZERS = ("llama3", "mistral", "cl100k", "bytes", "bpe")
DOCUMENTS = {"literature": 40, "docs": 25, "code": 12}  # about 300 KB of each domain


@pytest.fixture(scope="module")
def prefixes(kept_for_mutants, corpus_dir):
    """Per tokenizer, one Megatron dataset per domain (with EOD) and one of literature without."""

    def build(folder):
        out: dict[str, dict[str, str]] = {}
        for name in TOKENIZERS:
            out[name] = {}
            for domain, count in DOCUMENTS.items():
                lines = (corpus_dir / f"{domain}.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:count]
                source = folder / f"{domain}.jsonl"
                source.write_text("".join(lines), encoding="utf-8")
                for eod in (True, False) if domain == "literature" else (True,):
                    key = domain if eod else f"{domain}-no-eod"
                    out[name][key] = str(preprocess(source, folder / f"{name}-{key}", name, append_eod=eod,
                                                    progress=False).outputs["text"])
        return out

    return kept_for_mutants("audit", build)


def _vocab(name: str) -> tuple[int, int]:
    tokenizer = load_tokenizer(name)
    return tokenizer.vocab_size, tokenizer.eod_id


def _shapes(name: str):
    yield 128, 64, None
    yield 4096 if name != "bytes" else 2048, 1, None  # bytes: the 300 KB of docs hold few 4,096-byte rows
    yield 512, 4, "best_fit_decreasing"


@pytest.mark.parametrize("name", TOKENIZERS)
def test_no_finding_on_real_batches(prefixes, name, tmp_path):
    vocab, eod = _vocab(name)
    data = prefixes[name]
    sources = {**{domain: [data[domain]] for domain in data},
               "blend": ["0.5", data["literature"], "0.3", data["code"], "0.2", data["docs"]]}
    for label, path in sources.items():
        for seq_length, batch_size, packing in _shapes(name):
            if packing and label == "literature-no-eod":
                continue  # packing cuts at EODs
            loader = make_dataloader(path, seq_length=seq_length, batch_size=batch_size, num_samples=None,
                                     packing=packing, tokenizer=name, split="1,0,0", cache_dir=tmp_path)
            report = audit(loader, vocab_size=vocab, labels="shifted", eod_id=eod, max_steps=60)
            assert report.ok, f"{name} {label} {seq_length}x{batch_size} {packing}: {report.summary()}"
            assert report.statistics[0]["labels"] == "shifted"


@pytest.fixture(scope="module")
def real(prefixes, tmp_path_factory):
    """Twelve real llama3 batches of 8 x 512 from the blend."""
    data = prefixes["llama3"]
    loader = make_dataloader(["0.6", data["literature"], "0.4", data["code"]], seq_length=512, batch_size=8,
                             split="1,0,0", cache_dir=tmp_path_factory.mktemp("cache"))
    return [loader.batch_at(step) for step in range(12)]


VOCAB, EOD = 128_256, 128_001


def _first(report, code: str):
    found = [f for f in report.findings if f.code == code]
    assert found, f"{code} not found: {report.summary()}"
    assert all(f.code in CODES for f in report.findings)
    return found[0]


def _with(batches, step_from: int, change):
    for step, batch in enumerate(batches):
        yield change(dict(batch)) if step >= step_from else batch


def test_random_ids_are_named_from_the_first_random_step(real):
    randomize = lambda b: {**b, "input_ids": torch.randint(0, VOCAB, b["input_ids"].shape)}  # noqa: E731
    finding = _first(audit(_with(real, 3, randomize), vocab_size=VOCAB, labels="shifted"), "random-tokens")
    assert finding.step == 3 and "unigram entropy" in finding.message and "ln V 11.76" in finding.message
    assert audit(real[:3], vocab_size=VOCAB, labels="shifted").ok


def test_a_partly_replaced_batch_is_named(real):
    def some_rows(batch):
        ids = batch["input_ids"].clone()
        ids[5] = torch.randint(0, VOCAB, ids[5].shape)
        return {**batch, "input_ids": ids}

    def half_of_each_row(batch):
        ids = batch["input_ids"].clone()
        ids[:, 256:] = torch.randint(0, VOCAB, ids[:, 256:].shape)
        return {**batch, "input_ids": ids}

    for change in (some_rows, half_of_each_row):
        assert _first(audit(_with(real, 2, change), vocab_size=VOCAB), "random-tokens").step == 2


def test_the_same_batch_on_two_ranks_is_named(real):
    finding = _first(audit_ranks([real, real], vocab_size=VOCAB), "same-batch-across-ranks")
    assert (finding.step, finding.rank) == (0, 1)
    assert audit_ranks([real[0::2], real[1::2]], vocab_size=VOCAB).ok


def test_a_stream_that_loops_after_k_batches_is_named(real):
    finding = _first(audit(real[:4] + real[:4], vocab_size=VOCAB), "repeated-batch")
    assert finding.step == 4 and "step 0" in finding.message


def test_a_sampler_whose_epoch_never_advances_replays_its_batches(real):
    samples = [{k: v[i] for k, v in batch.items()} for batch in real[:6] for i in range(8)]
    sampler = torch.utils.data.DistributedSampler(samples, num_replicas=1, rank=0, shuffle=True, seed=0)

    def epochs():
        for _epoch in range(2):  # sampler.set_epoch(epoch) is never called
            yield from torch.utils.data.DataLoader(samples, batch_size=8, sampler=sampler)

    finding = _first(audit(epochs(), vocab_size=VOCAB, labels="shifted"), "repeated-batch")
    assert finding.step == 6


def _rows_of(batches) -> list[dict]:
    return [{key: value[row] for key, value in batch.items()} for batch in batches
            for row in range(len(batch["input_ids"]))]


def _batched(rows: list[dict], order, size: int = 8) -> list[dict]:
    return [{key: torch.stack([rows[i][key] for i in order[at:at + size]]) for key in rows[0]}
            for at in range(0, len(order), size)]


def test_a_replay_is_named_and_a_new_epoch_is_not(real):
    """A replay takes samples again in the order they came (here from sample 3 on: batch boundaries move, no
    batch repeats whole); a new epoch takes the same samples in a new order, which is training."""
    rows = _rows_of(real[:4])
    finding = _first(audit(_batched(rows, [*range(32), *range(3, 32)]), vocab_size=VOCAB), "repeated-samples")
    assert finding.step == 4 and "trained on at step 0" in finding.message
    assert "helpers.clean --exact" in finding.message
    epochs = [*range(32), *np.random.default_rng(0).permutation(32), *np.random.default_rng(1).permutation(32)]
    assert audit(_batched(rows, epochs), vocab_size=VOCAB, labels="shifted").ok


def test_half_a_batch_replayed_is_named_and_one_duplicate_is_not(real):
    rows = _rows_of(real)
    half = _batched(rows, [*range(64), *range(16, 24), *range(80, 88)], size=16)  # step 4: step 1's rows again
    assert _first(audit(half, vocab_size=VOCAB), "repeated-samples").step == 4
    fewer = _batched(rows, [*range(64), *range(16, 23), *range(80, 89)], size=16)  # seven of sixteen
    assert audit(fewer, vocab_size=VOCAB).ok
    last_of_two = _batched(rows[:40], [*range(32), 35, 7])  # a last partial batch of 2 holding one duplicate
    assert audit(last_of_two, vocab_size=VOCAB).ok


def test_labels_shifted_twice_or_not_at_all_are_named(real):
    twice = [{"input_ids": b["input_ids"][:, :-1], "labels": b["labels"][:, 1:]} for b in real]
    same = [{"input_ids": b["input_ids"], "labels": b["input_ids"]} for b in real]
    assert _first(audit(twice, vocab_size=VOCAB, labels="shifted"), "labels-misaligned").step == 0
    assert "shifted twice 1.00" in _first(audit(twice, vocab_size=VOCAB), "labels-misaligned").message
    assert _first(audit(same, vocab_size=VOCAB, labels="shifted"), "labels-misaligned").step == 0
    assert _first(audit(real, vocab_size=VOCAB, labels="same"), "labels-misaligned").step == 0  # shifted twice in HF
    assert audit(same, vocab_size=VOCAB, labels="same").ok


def test_pad_ids_in_the_loss_are_named(real):
    def padded(batch, masked: bool):
        ids, labels = batch["input_ids"].clone(), batch["input_ids"].clone()
        ids[:, 400:] = EOD
        labels[:, 400:] = IGNORE_INDEX if masked else EOD
        mask = (torch.arange(512) < 400).long().expand_as(ids)
        return {"input_ids": ids, "labels": labels, "attention_mask": mask}

    assert audit([padded(b, True) for b in real], vocab_size=VOCAB, labels="same").ok
    finding = _first(audit([padded(b, False) for b in real], vocab_size=VOCAB, labels="same"), "padding-in-loss")
    assert finding.step == 0
    unmasked = [{k: v for k, v in padded(b, False).items() if k != "attention_mask"} for b in real]
    assert _first(audit(unmasked, vocab_size=VOCAB, pad_id=EOD, eod_id=EOD), "padding-in-loss").step == 0


def test_ids_past_the_vocabulary_are_named(real):
    finding = _first(audit(real, vocab_size=32_000), "id-out-of-range")
    assert finding.step == 0 and "32,000" in finding.message


def test_a_large_vocabulary_wrapped_by_uint16_is_named(real):
    wrapped = [{**b, "input_ids": b["input_ids"] % 65_536, "labels": b["labels"] % 65_536} for b in real]
    assert _first(audit(wrapped, vocab_size=VOCAB), "id-wraparound").step == WRAP_TOKENS // 4096 - 1  # 4,096 a batch
    as_uint16 = [b["input_ids"].numpy().astype(np.uint16) for b in real]
    assert _first(audit(as_uint16, vocab_size=VOCAB), "id-wraparound").step == 0
    assert audit(real, vocab_size=VOCAB).ok


def test_an_all_zero_batch_is_named(real):
    zero = lambda b: {**b, "input_ids": torch.zeros_like(b["input_ids"])}  # noqa: E731
    finding = _first(audit([*real[:2], zero(real[2]), *real[3:]], vocab_size=VOCAB), "constant-batch")
    assert finding.step == 2


def test_a_resume_that_replays_batches_is_named(real):
    settings = AuditSettings(vocab_size=VOCAB, labels="shifted")
    first = StreamAudit(settings)
    for batch in real[:6]:
        assert not first.look(batch)
    resumed = StreamAudit(settings, seen=first.seen)  # the digests travel with the checkpoint
    resumed.step = first.step
    assert not resumed.look(real[6])  # resumed where it stopped: nothing
    replayed = resumed.look(real[4])  # a resume that starts two batches early
    assert [f.code for f in replayed] == ["repeated-batch"] and "step 4" in replayed[0].message


@pytest.mark.parametrize("bug", ["random-fallback", "partly-random", "stream-loops", "epoch-not-advanced",
                                 "resume-replays", "double-shift", "no-shift", "padding-in-loss", "uint16-wrap",
                                 "zero-batch"])
def test_a_bug_planted_step_by_step_is_named_where_it_first_shows(real, bug):
    """The live planter (`--plant-bug` of the training commands) does its bug one batch at a time; the audit
    names it at the step it starts (from the first step for the labels' bugs, once WRAP_TOKENS ids have
    been seen for uint16), as it names the same bug planted into the whole stream at once."""
    from helpers.audit.planting import BUGS, PLANTED_AT, Planter
    from helpers.workshop.explore.batch_bugs import planted

    planter = Planter(bug, vocab_size=VOCAB)
    stream = [planter(batch) for batch in real]
    report = audit(stream, vocab_size=VOCAB, labels="shifted")
    offline = planted(bug, real, vocab_size=VOCAB, at=PLANTED_AT)
    assert (report.findings[0].code, report.findings[0].step) == (BUGS[bug][0], offline.step), report.summary()
    assert len(stream) == len(real) and all(batch["input_ids"].shape[0] == 8 for batch in stream)
    assert audit(real, vocab_size=VOCAB, labels="shifted").ok  # the planter changed copies only


def test_the_planted_bugs_of_the_set_up_refuse_data_they_cannot_show_in():
    from helpers.audit.planting import Planter, loader_rank, model_vocab_size

    assert (loader_rank("rank-not-set", 1, 2), loader_rank(None, 1, 2)) == (0, 1)
    assert (model_vocab_size("past-vocab", VOCAB), model_vocab_size(None, VOCAB)) == (32_000, VOCAB)
    for refused in (lambda: loader_rank("rank-not-set", 0, 1), lambda: model_vocab_size("past-vocab", 258),
                    lambda: Planter("uint16-wrap", vocab_size=50_257), lambda: Planter("no-such-bug", vocab_size=258)):
        with pytest.raises(UserError, match="fix: "):
            refused()


def test_bad_input_is_one_line():
    ids = torch.arange(40).reshape(2, 20)
    for bad, expected in (({"labels": ids}, "without input_ids"), ([[1, 2, 3], [4, 5]], "ragged"),
                          (ids.float() + 0.5, "not whole numbers"),
                          ({"input_ids": ids, "labels": ids[:, :5]}, "same shape")):
        with pytest.raises(UserError, match=expected):
            audit([bad], vocab_size=100)
    with pytest.raises(UserError, match="empty"):
        audit([], vocab_size=100)
    with pytest.raises(UserError, match="labels="):
        audit([ids], vocab_size=100, labels="next")


def test_the_settings_come_whole_or_as_keywords(real):
    """`AuditSettings` handed whole gives what its fields as keywords give, offline and live; a keyword beside it
    takes that field's place; a keyword that names no setting is refused as Python refuses it."""
    from helpers.audit import AuditCallback, AuditSettings, Auditor

    settings = AuditSettings(vocab_size=VOCAB, labels="same")
    whole, named = audit(real[:4], settings), audit(real[:4], vocab_size=VOCAB, labels="same")
    assert whole.summary() == named.summary() and not whole.ok
    assert audit(real[:4], settings, labels="shifted").ok
    assert audit_ranks([real[:4]], settings=settings).summary() == whole.summary()
    assert Auditor(settings, labels="shifted").settings == AuditSettings(vocab_size=VOCAB, labels="shifted")
    with pytest.warns(UserWarning, match="labels-misaligned"):
        assert Auditor(settings, on_finding="warn").step(real[0])[0].code == "labels-misaligned"
    for refused in (lambda: audit(real[:1], vocab_sise=VOCAB), lambda: Auditor(settings, pad=0),
                    lambda: AuditCallback(labels="same"), lambda: audit(real[:1])):
        with pytest.raises(TypeError, match="unexpected keyword argument|missing 1 required"):
            refused()


@pytest.mark.heavy
def test_what_the_audit_holds_grows_by_digests_only():
    rng = np.random.default_rng(0)
    words = rng.zipf(1.3, size=(32, 2048)) % 50_000  # text-like frequencies
    auditor = StreamAudit(AuditSettings(vocab_size=50_000))
    auditor.look(words)
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for step in range(100):
        auditor.look(np.roll(words, step + 1, axis=1))
    grown = sum(stat.size_diff for stat in tracemalloc.take_snapshot().compare_to(before, "filename"))
    tracemalloc.stop()
    assert grown / 100 * 10_000 < 200e6, f"{grown / 100:.0f} bytes a step"


@pytest.mark.heavy
def test_the_command_line_reads_saved_batches(real, tmp_path):
    torch.save(real[:4], tmp_path / "clean.pt")
    buggy = [*real[:2], *[{**b, "input_ids": torch.randint(0, VOCAB, b["input_ids"].shape)} for b in real[2:4]]]
    torch.save(buggy, tmp_path / "buggy.pt")
    np.save(tmp_path / "ids.npy", np.stack([b["input_ids"].numpy() for b in real[:3]]))
    (tmp_path / "junk.pt").write_text("not a batch")
    run = lambda *args: subprocess.run([sys.executable, "-m", "helpers.audit", *map(str, args), "--vocab-size",  # noqa
                                        str(VOCAB)], capture_output=True, text=True)
    clean = run(tmp_path / "clean.pt", "--labels", "shifted")
    assert clean.returncode == 0 and "no finding" in clean.stdout
    assert run(tmp_path / "ids.npy").returncode == 0
    found = run(tmp_path / "buggy.pt")
    assert found.returncode == 1 and "random-tokens (rank 0, step 2)" in found.stdout
    ranks = run(tmp_path / "clean.pt", tmp_path / "clean.pt", "--ranks")
    assert ranks.returncode == 1 and "same-batch-across-ranks" in ranks.stdout
    junk = run(tmp_path / "junk.pt")
    assert junk.returncode == 2 and junk.stderr.count("\n") == 1 and "junk.pt" in junk.stderr


LIVE_SCRIPT = """
import json, sys, torch.distributed as dist
from helpers.audit.live import Auditor, DataBugError
from helpers.loading.loader import make_dataloader
from helpers.training.distributed import finish_ranks
dist.init_process_group("gloo")
prefix, cache, out, told = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "told"
ranks = {} if told else {"rank": 0, "world_size": 1}  # a loader never told its rank
loader = make_dataloader([prefix], split="1,0,0", seq_length=128, batch_size=2, num_samples=40, cache_dir=cache,
                         **ranks)
auditor = Auditor(vocab_size=128256, labels="shifted")
result = {"steps": 0, "error": None}
try:
    for batch in loader:
        auditor.step(batch)
        result["steps"] += 1
except DataBugError as error:
    result["error"] = [error.finding.code, error.finding.step, str(error)]
with open(f"{out}/rank{dist.get_rank()}.json", "w") as file:
    json.dump(result, file)
finish_ranks()  # leave together, and end without finalizing (helpers.common.process_exit)
"""


@pytest.mark.heavy
@pytest.mark.parametrize("told", ["told", "not-told"])
def test_the_live_auditor_compares_ranks_under_torch_distributed(prefixes, tmp_path, told):
    import json
    import os

    script = tmp_path / "live.py"
    script.write_text(LIVE_SCRIPT)
    result = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                             str(script), prefixes["llama3"]["literature"],
                             str(tmp_path / "cache"), str(tmp_path), told],
                            capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    ranks = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in range(2)]
    if told == "told":
        assert [r["error"] for r in ranks] == [None, None] and ranks[0]["steps"] == 10
    else:  # both ranks stop at step 0, each naming the other
        assert [r["error"][:2] for r in ranks] == [["same-batch-across-ranks", 0]] * 2


PLANTED_SCRIPT = """
import json, sys, warnings, torch.distributed as dist
from helpers.audit.live import Auditor
from helpers.audit.planting import BUGS, SETUP_BUGS, PlantedBatches, Planter
from helpers.loading.loader import make_dataloader
from helpers.training.distributed import finish_ranks
dist.init_process_group("gloo")
prefix, cache, out, steps, rows, seq = sys.argv[1], sys.argv[2], sys.argv[3], *map(int, sys.argv[4:7])
first = {}
for bug in [bug for bug in BUGS if bug not in SETUP_BUGS]:
    loader = make_dataloader([prefix], split="1,0,0", seq_length=seq, batch_size=rows, num_samples=steps * rows * 2,
                             cache_dir=cache)
    auditor = Auditor(vocab_size=128256, labels="shifted", on_finding="warn")  # every rank goes on to the end
    first[bug] = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for batch in PlantedBatches(loader, Planter(bug, vocab_size=128256)):
            found = auditor.step(batch)
            if found and first[bug] is None:
                first[bug] = [auditor.stream.step - 1, found[0].code]  # the one a raising auditor names
with open(f"{out}/rank{dist.get_rank()}.json", "w") as file:
    json.dump(first, file)
finish_ranks()
"""


@pytest.mark.heavy
def test_every_bug_of_the_stream_is_named_on_two_ranks_at_the_step_it_first_shows(prefixes, tmp_path):
    """The training commands' planter and live auditor (`batches_for_the_model`, here warning instead of raising so
    that both ranks go on) on 2 processes under torchrun: each bug of the stream is first named, by a rank that
    sees it, at the step the launches of test_examples stop at, under its own code."""
    import json
    import math
    import os

    from helpers.audit.planting import BUGS, PLANTED_AT, REPLAYED, REPLAYS, SETUP_BUGS, replay_named_at
    from helpers.audit.statistics import WRAP_TOKENS

    steps, rows, seq = 16, 4, 256
    script = tmp_path / "planted.py"
    script.write_text(PLANTED_SCRIPT)
    result = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                             str(script), prefixes["llama3"]["literature"], str(tmp_path / "cache"), str(tmp_path),
                             str(steps), str(rows), str(seq)],
                            capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    ranks = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in range(2)]
    for bug in [bug for bug in BUGS if bug not in SETUP_BUGS]:
        due = {"double-shift": 0, "no-shift": 0, "uint16-wrap": math.ceil(WRAP_TOKENS / (rows * seq)) - 1}.get(bug)
        if bug in REPLAYS:
            due = replay_named_at(PLANTED_AT, rows, 2, REPLAYED * rows if bug == "resume-replays" else None)
        due = PLANTED_AT if due is None else due
        seen = [rank[bug] for rank in ranks if rank[bug] is not None]
        assert seen and min(step for step, _ in seen) == due, (bug, ranks)
        assert {code for step, code in seen if step == due} == {BUGS[bug][0]}, (bug, ranks)


def test_the_live_auditor_state_outlives_a_restart(real):
    from helpers.audit.live import Auditor, DataBugError

    first = Auditor(vocab_size=VOCAB, labels="shifted")
    for batch in real[:6]:
        first.step(batch)
    state = pickle_round_trip(first.state_dict())
    resumed = Auditor(vocab_size=VOCAB, labels="shifted")
    resumed.load_state_dict(state)
    resumed.step(real[6])
    with pytest.raises(DataBugError, match="repeated-batch .*step 7.*equals the one at step 3"):
        resumed.step(real[3])
    warned = Auditor(vocab_size=VOCAB, on_finding="warn")
    warned.step(real[0]), warned.step(real[1])
    with pytest.warns(UserWarning, match="repeated-batch"):
        warned.step(real[0])
    warned.step(real[1])  # the same code again: counted, not listed twice
    assert [f.code for f in warned.report.findings] == ["repeated-batch"]
    assert warned.report.steps_with[("repeated-batch", 0)] == 2


def pickle_round_trip(state):
    import pickle

    return pickle.loads(pickle.dumps(state))


def _trainer(prefix: str, folder, callback, steps: int, **overrides):
    from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

    from helpers.loading.loader import samples_for_transformers

    loader = make_dataloader([prefix], split="1,0,0", seq_length=64, batch_size=4, num_samples=64, seed=3,
                             cache_dir=folder / "cache")
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64))
    settings = dict(output_dir=str(folder / "run"), max_steps=steps, per_device_train_batch_size=4, report_to=[],
                    save_strategy="no", use_cpu=True, disable_tqdm=True, remove_unused_columns=False,
                    train_sampling_strategy="sequential", logging_steps=1, seed=0)
    return Trainer(model=model, args=TrainingArguments(**{**settings, **overrides}),
                   train_dataset=samples_for_transformers(loader), callbacks=[callback])


@pytest.mark.heavy
def test_the_trainer_callback_names_labels_shifted_twice(prefixes, tmp_path):
    from helpers.audit import AuditCallback, DataBugError

    healthy = AuditCallback()
    _trainer(prefixes["llama3"]["literature"], tmp_path, healthy, steps=3).train()
    assert healthy.auditor.report.ok and healthy.auditor.stream.step == 3
    assert healthy.auditor.settings.labels == "shifted"  # it read shift_labels
    # Trainer's default drops every column forward() does not name, shift_labels among them: the model then
    # shifts labels that were already shifted
    with pytest.raises(DataBugError, match="labels-misaligned .*step 0.*they are one token ahead"):
        _trainer(prefixes["llama3"]["literature"], tmp_path, AuditCallback(), steps=3,
                 remove_unused_columns=True).train()


@pytest.mark.heavy
def test_the_trainer_callback_names_a_resume_that_replays(prefixes, tmp_path):
    from helpers.audit import AuditCallback, DataBugError

    _trainer(prefixes["llama3"]["literature"], tmp_path, AuditCallback(), steps=2, save_strategy="steps",
             save_steps=2).train()
    assert (tmp_path / "run" / "checkpoint-2" / "audit_state.json").is_file()
    resumed = AuditCallback()
    _trainer(prefixes["llama3"]["literature"], tmp_path, resumed, steps=4).train(
        resume_from_checkpoint=str(tmp_path / "run" / "checkpoint-2"))
    assert resumed.auditor.report.ok and resumed.auditor.stream.step == 4  # it went on from batch 2
    # batches of 4 over the 8 samples seen: the second replayed batch makes the run a shuffle would not
    with pytest.raises(DataBugError, match="repeated-batch .*step 3.*equals the one at step 1"):
        _trainer(prefixes["llama3"]["literature"], tmp_path, AuditCallback(), steps=4,
                 ignore_data_skip=True).train(resume_from_checkpoint=str(tmp_path / "run" / "checkpoint-2"))


def test_an_audited_loader_carries_the_auditor_through_a_checkpoint(prefixes, tmp_path):
    import json

    from helpers.audit import Audited, Auditor, DataBugError

    def audited():
        loader = make_dataloader([prefixes["llama3"]["literature"]], split="1,0,0", seq_length=128, batch_size=4,
                                 num_samples=40, cache_dir=tmp_path)
        return Audited(loader, Auditor(vocab_size=VOCAB, labels="shifted"))

    first = audited()
    for _ in zip(range(4), first):
        pass
    state = json.loads(json.dumps(first.state_dict(unused=1)))  # as run.json keeps it; one batch staged ahead
    assert state["samples_consumed"] == 12 and state["audit"]["step"] == 3
    resumed = audited()
    resumed.load_state_dict(state)
    assert len(list(resumed)) == 7  # batches 3 to 9, the staged one again: no finding
    early = audited()  # a resume that starts two batches early
    early.load_state_dict({**state, "samples_consumed": state["samples_consumed"] - 8})
    with pytest.raises(DataBugError, match="repeated-batch .*step 3.*equals the one at step 1"):
        list(early)  # named at its first replayed batch of 4: a whole batch dealt again in order, 12 samples seen


def test_window_pairs_counts_equal_pairs_in_every_window():
    from helpers.audit.statistics import window_pairs

    windows = np.random.default_rng(0).integers(0, 20, (50, 30))
    expected = [int(sum(c * (c - 1) // 2 for c in np.unique(w, return_counts=True)[1])) for w in windows]
    assert window_pairs(windows).tolist() == expected


def test_uniform_draws_stay_within_the_bound_whatever_the_values():
    """The bound holds for sparse draws (many values, few ids: Poisson-like) and dense ones (few values: a
    chi-square with a long right tail), at the row and pooled sizes the audit uses."""
    from helpers.audit.statistics import uniform_bound, window_pairs

    rng = np.random.default_rng(7)
    for length in (128, 256, 1024):
        for values in (16, 100, 258, 4096, 128_256):
            most = int(window_pairs(rng.integers(0, values, (4000, length))).max())
            assert most <= uniform_bound(length, values)[1], (length, values, most)


def test_short_rows_of_real_text_pass_and_random_ones_are_named_once_pooled(real):
    rows = torch.cat([b["input_ids"] for b in real]).reshape(-1, 16)  # 16-token rows of real llama3 text,
    rows = rows[torch.randperm(len(rows), generator=torch.Generator().manual_seed(0))]  # shuffled, as a loader does
    healthy = [rows[at:at + 8] for at in range(0, 8 * 60, 8)]
    assert audit(healthy, vocab_size=VOCAB).ok
    fallback = healthy[:10] + [torch.randint(0, VOCAB, (8, 16)) for _ in range(10)]
    finding = _first(audit(fallback, vocab_size=VOCAB), "random-tokens")
    assert 10 <= finding.step <= 10 + 1024 // 128 - 1 and "over" in finding.message
    one_row = healthy[:10] + [torch.randint(0, VOCAB, (1, 16)) for _ in range(80)]
    assert _first(audit(one_row, vocab_size=VOCAB), "random-tokens").step <= 10 + 1024 // 16 - 1


def test_a_fallback_over_a_few_ids_is_random_tokens_not_wraparound(real):
    """torch.randint(0, 100) under a 128k vocabulary: its equal pairs look like text against V, not against
    the 100 ids it spans; coming first, it is named for what it is, not as wrapped ids."""
    small = lambda b: {**b, "input_ids": torch.randint(0, 100, b["input_ids"].shape)}  # noqa: E731
    assert _first(audit(_with(real, 3, small), vocab_size=VOCAB), "random-tokens").step == 3
    first = audit([small(b) for b in real], vocab_size=VOCAB)
    assert [f.code for f in first.findings] == ["random-tokens"], first.summary()
    assert "over ids 0 to 99" in first.findings[0].message


def test_pad_equal_to_eos_is_padding_only_where_it_ends_a_row(real):
    """Hugging Face's pad_token = eos_token: the end-of-document ids inside a packed row are text; the run
    ending a padded row is padding, less its first id (the document's own end)."""
    packed = [{"input_ids": b["input_ids"], "labels": b["input_ids"]} for b in real]  # EODs inside, in the loss
    assert audit(packed, vocab_size=VOCAB, labels="same", pad_id=EOD).ok

    def padded(batch, keep_first: bool):
        ids = batch["input_ids"].clone()
        ids[:, 400:] = EOD
        labels = ids.clone()
        labels[:, 401 if keep_first else 400:] = IGNORE_INDEX
        return {"input_ids": ids, "labels": labels}

    assert audit([padded(b, keep_first=True) for b in real], vocab_size=VOCAB, labels="same", pad_id=EOD).ok
    leaked = [{**padded(b, True), "labels": padded(b, True)["input_ids"]} for b in real]
    assert _first(audit(leaked, vocab_size=VOCAB, labels="same", pad_id=EOD), "padding-in-loss").step == 0


def test_one_duplicated_document_on_two_ranks_is_not_a_shared_batch(real):
    mine = [b["input_ids"] for b in real[:6]]
    other = [b["input_ids"].clone() for b in real[6:]]
    for step, ids in enumerate(other):
        ids[2] = mine[step][5]  # one sample both ranks hold, as a corpus's duplicates make
    assert audit_ranks([mine, other], vocab_size=VOCAB).ok
    half = [torch.cat([mine[step][:4], ids[4:]]) for step, ids in enumerate(other)]
    finding = _first(audit_ranks([mine, half], vocab_size=VOCAB), "same-batch-across-ranks")
    assert finding.step == 0 and "4 of 8 samples equal to rank 0's" in finding.message


def test_one_row_of_one_id_is_a_ruler_two_in_a_row_a_constant_batch():
    ruler = np.full((1, 64), 61)
    text = np.arange(64)[None, :] % 50
    assert audit([text, ruler, text, ruler], vocab_size=258).ok
    finding = _first(audit([text, ruler, ruler], vocab_size=258), "constant-batch")
    assert finding.step == 2


def test_the_digests_kept_stay_within_the_bound_and_a_recent_replay_is_still_named(real):
    from helpers.audit.live import Auditor

    auditor = Auditor(vocab_size=VOCAB, remember=1024, on_finding="warn")
    rng = np.random.default_rng(0)
    for step in range(400):  # 3,200 distinct samples of real rows, shuffled
        ids = real[step % 12]["input_ids"].clone()
        ids[:, 0] = torch.from_numpy(rng.integers(0, VOCAB, 8))
        auditor.step({"input_ids": ids})
        assert len(auditor.stream.seen.samples) <= 1024
    assert auditor.report.ok
    state = auditor.state_dict()
    assert len(state["samples"][0]) <= 1024
    resumed = Auditor(vocab_size=VOCAB, remember=1024)
    resumed.load_state_dict(pickle_round_trip(state))
    with pytest.raises(DataBugError, match="repeated-batch"):
        resumed.step({"input_ids": ids})  # the last batch again, as a resume that goes back one step
    with pytest.raises(UserError, match="remember="):
        Auditor(vocab_size=VOCAB, remember=10)


def test_batches_as_pipelines_hand_them_over(real):
    from transformers import BatchEncoding

    batch = real[0]
    as_float = {"input_ids": batch["input_ids"], "attention_mask": torch.ones_like(batch["input_ids"]).float(),
                "labels": batch["input_ids"]}
    megatron = {"tokens": batch["input_ids"], "labels": batch["labels"], "loss_mask": torch.ones(8, 512),
                "attention_mask": torch.ones(8, 1, 512, 512, dtype=torch.bool), "position_ids": torch.arange(512)}
    triple = (batch["input_ids"], batch["labels"], torch.ones(8, 512))
    for stream, labels in (([BatchEncoding(as_float)], "same"), ([megatron], "shifted"), ([triple], "shifted")):
        report = audit(stream, vocab_size=VOCAB, labels=labels)
        assert report.ok and report.statistics[0]["labels"] == labels, report.summary()
    padded = {**megatron, "tokens": megatron["tokens"].clone(), "loss_mask": torch.ones(8, 512)}
    padded["tokens"][:, 400:] = EOD
    padded["labels"] = torch.cat([padded["tokens"][:, 1:], torch.full((8, 1), EOD)], dim=1)
    assert _first(audit([padded], vocab_size=VOCAB, pad_id=EOD, eod_id=EOD), "padding-in-loss").step == 0
    padded["loss_mask"][:, 399:] = 0  # Megatron's own masking of the padding
    assert audit([padded], vocab_size=VOCAB, pad_id=EOD, eod_id=EOD).ok
    with pytest.raises(UserError, match="other than 0 and 1"):
        audit([{**as_float, "attention_mask": torch.full((8, 512), 0.5)}], vocab_size=VOCAB)


def test_an_audited_torch_dataloader_keeps_the_auditor_state(real):
    from helpers.audit import Audited, Auditor

    loader = torch.utils.data.DataLoader(_rows_of(real[:2]), batch_size=8)
    audited = Audited(loader, Auditor(vocab_size=VOCAB))
    assert len(list(audited)) == 2
    assert audited.state_dict()["audit"]["step"] == 2


@pytest.mark.heavy
def test_the_command_line_reads_saved_batch_encodings_and_says_what_it_refuses(real, tmp_path):
    from transformers import BatchEncoding

    torch.save([BatchEncoding({"input_ids": b["input_ids"], "labels": b["input_ids"]}) for b in real[:3]],
               tmp_path / "collated.pt")
    run = lambda *args: subprocess.run([sys.executable, "-m", "helpers.audit", *map(str, args), "--vocab-size",  # noqa
                                        str(VOCAB)], capture_output=True, text=True)
    ok = run(tmp_path / "collated.pt", "--labels", "same")
    assert ok.returncode == 0 and "no finding" in ok.stdout, ok.stderr
    torch.save([{"input_ids": real[0]["input_ids"], "when": np.datetime64("2024-01-01")}], tmp_path / "odd.pt")
    refused = run(tmp_path / "odd.pt")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "\x1b" not in refused.stderr
    assert "odd.pt" in refused.stderr and "fix: " in refused.stderr


def test_a_step_with_ids_and_labels_out_of_range_counts_once(real):
    report = audit(real[:5], vocab_size=32_000)
    assert report.steps_with[("id-out-of-range", 0)] == 5
