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

from helpers.audit import CODES, audit, audit_ranks
from helpers.audit.stream import AuditSettings, StreamAudit
from helpers.common.errors import UserError
from helpers.datasets.layout import IGNORE_INDEX
from helpers.loading.loader import make_dataloader
from helpers.preprocess import preprocess
from helpers.tokenizers.zoo import load_tokenizer

TOKENIZERS = ("llama3", "mistral", "cl100k", "bytes", "bpe")
DOCUMENTS = {"literature": 40, "docs": 25, "code": 12}  # about 300 KB of each domain


@pytest.fixture(scope="module")
def prefixes(tmp_path_factory, corpus_dir):
    """Per tokenizer, one Megatron dataset per domain (with EOD) and one of literature without."""
    folder = tmp_path_factory.mktemp("audit")
    out: dict[str, dict[str, str]] = {}
    for name in TOKENIZERS:
        out[name] = {}
        for domain, count in DOCUMENTS.items():
            lines = (corpus_dir / f"{domain}.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:count]
            source = folder / f"{domain}.jsonl"
            source.write_text("".join(lines), encoding="utf-8")
            for eod in (True, False) if domain == "literature" else (True,):
                key = domain if eod else f"{domain}-no-eod"
                out[name][key] = preprocess(source, folder / f"{name}-{key}", name, append_eod=eod,
                                            progress=False).outputs["text"]
    return out


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


def test_samples_replayed_in_another_order_are_named(real):
    shuffled = [{k: v[torch.randperm(8, generator=torch.Generator().manual_seed(s))] for k, v in b.items()}
                for s, b in enumerate(real[:3])]
    finding = _first(audit(real[:3] + shuffled, vocab_size=VOCAB), "repeated-samples")
    assert finding.step == 3


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
    assert _first(audit(wrapped, vocab_size=VOCAB), "id-wraparound").step == 0  # 4,096 tokens a batch
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
    names it at the step it starts (from the first step for the labels' bugs, once 4,096 ids have been
    seen for uint16), as it names the same bug planted into the whole stream at once."""
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
                          (ids.float(), "float32"), ({"input_ids": ids, "labels": ids[:, :5]}, "same shape")):
        with pytest.raises(UserError, match=expected):
            audit([bad], vocab_size=100)
    with pytest.raises(UserError, match="empty"):
        audit([], vocab_size=100)
    with pytest.raises(UserError, match="labels="):
        audit([ids], vocab_size=100, labels="next")


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
json.dump(result, open(f"{out}/rank{dist.get_rank()}.json", "w"))
dist.destroy_process_group()
"""


@pytest.mark.parametrize("told", ["told", "not-told"])
def test_the_live_auditor_compares_ranks_under_torch_distributed(prefixes, tmp_path, told):
    import json
    import os

    script = tmp_path / "live.py"
    script.write_text(LIVE_SCRIPT)
    result = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port",
                             "29541" if told == "told" else "29542", str(script), prefixes["llama3"]["literature"],
                             str(tmp_path / "cache"), str(tmp_path), told],
                            capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    ranks = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in range(2)]
    if told == "told":
        assert [r["error"] for r in ranks] == [None, None] and ranks[0]["steps"] == 10
    else:  # both ranks stop at step 0, each naming the other
        assert [r["error"][:2] for r in ranks] == [["same-batch-across-ranks", 0]] * 2


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


def test_the_trainer_callback_names_a_resume_that_replays(prefixes, tmp_path):
    from helpers.audit import AuditCallback, DataBugError

    _trainer(prefixes["llama3"]["literature"], tmp_path, AuditCallback(), steps=2, save_strategy="steps",
             save_steps=2).train()
    assert (tmp_path / "run" / "checkpoint-2" / "audit_state.json").is_file()
    resumed = AuditCallback()
    _trainer(prefixes["llama3"]["literature"], tmp_path, resumed, steps=4).train(
        resume_from_checkpoint=str(tmp_path / "run" / "checkpoint-2"))
    assert resumed.auditor.report.ok and resumed.auditor.stream.step == 4  # it went on from batch 2
    with pytest.raises(DataBugError, match="repeated-batch .*step 2.*equals the one at step 0"):
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
        list(early)


def test_window_pairs_counts_equal_pairs_in_every_window():
    from helpers.audit.statistics import window_pairs

    windows = np.random.default_rng(0).integers(0, 20, (50, 30))
    expected = [int(sum(c * (c - 1) // 2 for c in np.unique(w, return_counts=True)[1])) for w in windows]
    assert window_pairs(windows).tolist() == expected
