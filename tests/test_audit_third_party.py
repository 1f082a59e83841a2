"""`helpers.audit` under third-party pipelines: batches made the way other projects make them (Hugging Face's
`run_clm` and its collators, a `Trainer` run, torch's `DistributedSampler` on two ranks, megatron-core's
`GPTDataset`, padding-free packing, nanoGPT's `get_batch`), not with this project's loader.

The text is real text this project did not write: `helpers.corpus.machine_text` (licences, man pages,
translations in many scripts, C headers, JSON, base64, hex dumps, logs, Python's standard library), tokenized
by every tokenizer of the zoo. On each healthy pipeline the audit must find nothing; each bug planted into the
nanoGPT pipeline must be named by its code at the step where it first shows.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from audit_incident_pipelines import run_clm_dataset

from helpers.audit import Audited, Auditor, audit, audit_ranks
from helpers.audit.planting import (
    BUGS,
    PLANTED_AT,
    REPLAYED,
    REPLAYS,
    SETUP_BUGS,
    SMALL_MODEL_VOCAB,
    Planter,
    replay_named_at,
)
from helpers.audit.statistics import WRAP_TOKENS
from helpers.corpus.machine_text import mixed
from helpers.tokenizers.zoo import load_tokenizer

TOKENIZERS = ("llama3", "mistral", "cl100k", "bytes", "bpe")
SEED = 1337  # nanoGPT's torch.manual_seed(1337)
LABELS_BUGS = {"double-shift", "no-shift"}


def first_finding(report) -> tuple:
    """(code, step, rank) of the report's first finding, or None when it found nothing."""
    return None if report.ok else (report.findings[0].code, report.findings[0].step, report.findings[0].rank)


def codes(report) -> list[str]:
    return [finding.code for finding in report.findings]


# ---------------------------------------------------------------- shared data


@pytest.fixture(scope="module")
def documents() -> list[str]:
    """Every kind of machine text, interleaved, about 850 KB."""
    return mixed()


def nanogpt_prepare(tokenizer, documents: list[str]) -> np.ndarray:
    """nanoGPT's prepare.py: each document's ids then the end-of-text id, all in one array, uint16 where the
    vocabulary fits (its choice for GPT-2), else uint32."""
    ids = [token for encoded in tokenizer.encode_batch(documents) for token in [*encoded, tokenizer.eod_id]]
    return np.array(ids, dtype=np.uint16 if tokenizer.vocab_size <= 1 << 16 else np.uint32)


@pytest.fixture(scope="module")
def train_bin(documents, corpus_dir):
    """nanoGPT's train.bin per tokenizer, made on first use (`bpe` is trained on the corpus in corpus_dir)."""
    made: dict[str, np.ndarray] = {}

    def tokens(name: str) -> np.ndarray:
        if name not in made:
            made[name] = nanogpt_prepare(load_tokenizer(name), documents)
        return made[name]

    return tokens


@pytest.fixture(scope="module")
def hf_tokenizers(tmp_path_factory):
    """A zoo tokenizer as a user has it, by name: a folder loaded by `AutoTokenizer`, pad = eos."""
    from transformers import AutoTokenizer

    loaded: dict = {}

    def tokenizer(name: str):
        if name not in loaded:
            folder = load_tokenizer(name).export(tmp_path_factory.mktemp("tokenizer") / name)
            loaded[name] = AutoTokenizer.from_pretrained(str(folder))
            loaded[name].pad_token = loaded[name].eos_token  # the most common setup
        return loaded[name]

    return tokenizer


@pytest.fixture(scope="module")
def hf_tokenizer(hf_tokenizers):
    """Llama 3's tokenizer, loaded by `AutoTokenizer` from its folder, pad = eos."""
    return hf_tokenizers("llama3")


# ---------------------------------------------------------------- 1. Hugging Face run_clm


@pytest.fixture(scope="module")
def grouped_blocks(hf_tokenizer, documents):
    """run_clm's dataset of the machine text: 128-token llama3 blocks."""
    return run_clm_dataset(hf_tokenizer, documents, block_size=128)


def short_documents(documents: list[str], count: int) -> list[str]:
    """Paragraphs of the machine text of 20 to 800 characters: short documents of uneven length."""
    paragraphs = (part.strip() for text in documents for part in text.split("\n\n"))
    return [part for part in paragraphs if 20 <= len(part) <= 800][:count]


def test_run_clm_grouped_blocks_raise_no_finding(hf_tokenizer, grouped_blocks):
    """Hugging Face run_clm.py: tokenize, group_texts into 128-token blocks, default_data_collator, shuffled."""
    from transformers import default_data_collator

    loader = torch.utils.data.DataLoader(grouped_blocks, batch_size=8, shuffle=True, collate_fn=default_data_collator,
                                         generator=torch.Generator().manual_seed(SEED))
    report = audit(loader, vocab_size=len(hf_tokenizer), labels="same", pad_id=hf_tokenizer.eos_token_id)
    assert report.ok, report.summary()
    assert report.statistics[0]["steps"] == len(loader) and report.statistics[0]["labels"] == "same"


@pytest.mark.parametrize("name", ["llama3", "mistral"])
def test_padded_short_documents_with_pad_equal_to_eos_raise_no_finding(hf_tokenizers, documents, name):
    """Hugging Face DataCollatorForLanguageModeling(mlm=False) with pad_token = eos_token: short documents,
    truncated to 128 tokens, padded per batch, padding labelled -100 by the collator."""
    from transformers import DataCollatorForLanguageModeling

    hf_tokenizer = hf_tokenizers(name)
    features = [hf_tokenizer(text, truncation=True, max_length=128) for text in short_documents(documents, 480)]
    collator = DataCollatorForLanguageModeling(hf_tokenizer, mlm=False)
    loader = torch.utils.data.DataLoader(features, batch_size=8, shuffle=True, collate_fn=collator,
                                         generator=torch.Generator().manual_seed(SEED))
    report = audit(loader, vocab_size=len(hf_tokenizer), labels="same", pad_id=hf_tokenizer.eos_token_id)
    assert report.ok, report.summary()
    first = next(iter(loader))
    assert (first["attention_mask"] == 0).any() and (first["labels"] == -100).any()  # padding was there


# ---------------------------------------------------------------- 2. Trainer with AuditCallback


def tiny_llama(vocab_size: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64,
                                        num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                        max_position_embeddings=64))


def test_trainer_with_audit_callback_runs_three_epochs(hf_tokenizers, documents, tmp_path):
    """Hugging Face Trainer (default random sampler, 3 epochs, batch 4) on run_clm's grouped 64-token blocks of
    Mistral's tokenizer (32,000 ids: a tiny model's logits stay cheap), AuditCallback on."""
    from transformers import Trainer, TrainingArguments

    from helpers.audit import AuditCallback

    tokenizer = hf_tokenizers("mistral")
    blocks = run_clm_dataset(tokenizer, documents[:20], block_size=64).select(range(48))
    callback = AuditCallback()
    args = TrainingArguments(output_dir=str(tmp_path / "run"), num_train_epochs=3, per_device_train_batch_size=4,
                             use_cpu=True, report_to=[], save_strategy="no", disable_tqdm=True, seed=0)
    trainer = Trainer(model=tiny_llama(len(tokenizer)), args=args, train_dataset=blocks, callbacks=[callback])
    trainer.train()  # a DataBugError would stop it
    assert trainer.state.global_step == 3 * 48 // 4
    assert callback.auditor.stream.step == trainer.state.global_step and callback.auditor.report.ok


def llama3_windows(train_bin, count: int, length: int = 129) -> torch.Tensor:
    """The first `count` windows of `length` llama3 tokens of nanoGPT's train.bin, as int64 rows."""
    return torch.from_numpy(train_bin("llama3")[:count * length].astype(np.int64)).reshape(count, length)


@pytest.mark.parametrize("batch_size", [4, 8])
def test_shuffled_epochs_of_a_torch_data_loader_raise_no_finding(train_bin, batch_size):
    """torch DataLoader(shuffle=True) (the RandomSampler a Trainer uses) over 48 samples for 3 epochs, for 20
    seeds: every epoch is the same samples in a new order, which is training, not a replay."""
    tokenizer = load_tokenizer("llama3")
    samples = [(window[:-1], window[1:]) for window in llama3_windows(train_bin, 48)]
    alarms = {}
    for seed in range(20):
        loader = torch.utils.data.DataLoader(samples, batch_size=batch_size, shuffle=True,
                                             generator=torch.Generator().manual_seed(seed))
        report = audit((batch for _epoch in range(3) for batch in loader), vocab_size=tokenizer.vocab_size,
                       labels="shifted")
        if not report.ok:
            alarms[seed] = report.findings[0].line()
    assert not alarms, f"{len(alarms)} of 20 seeds: " + "\n".join(f"seed {s}: {line}" for s, line in alarms.items())


# ---------------------------------------------------------------- 3. DistributedSampler on two ranks

SAMPLER_SCRIPT = """
import json, sys
from datetime import timedelta
import numpy as np, torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
from helpers.audit import Auditor, DataBugError
from helpers.training.distributed import finish_ranks

dist.init_process_group("gloo", timeout=timedelta(seconds=60))
windows = torch.from_numpy(np.load(sys.argv[1]).astype(np.int64))
dataset = [(window[:-1], window[1:]) for window in windows]
vocab_size, batch_size, out = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]


def two_epochs(set_epoch):
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    auditor, steps = Auditor(vocab_size=vocab_size, labels="shifted"), 0
    try:
        for epoch in range(2):
            if set_epoch:
                sampler.set_epoch(epoch)
            for batch in loader:
                auditor.step(batch)
                steps += 1
    except DataBugError as error:
        return {"steps": steps, "error": [error.finding.code, error.finding.step, str(error)]}
    return {"steps": steps, "error": None, "steps_per_epoch": len(loader)}


result = {"set_epoch": two_epochs(True), "no_set_epoch": two_epochs(False)}
with open(f"{out}/rank{dist.get_rank()}.json", "w") as file:
    json.dump(result, file)
finish_ranks()  # leave together, and end without finalizing (helpers.common.process_exit)
"""


def test_distributed_sampler_replays_an_epoch_without_set_epoch(train_bin, tmp_path):
    """torch DistributedSampler(shuffle=True) on 2 gloo ranks over 2 epochs, a live Auditor per rank: with
    sampler.set_epoch(epoch) nothing; without it, repeated-batch at the first step of epoch 2 on each rank."""
    windows, batch_size = llama3_windows(train_bin, 80), 4
    np.save(tmp_path / "windows.npy", windows.numpy())
    (tmp_path / "sampler.py").write_text(SAMPLER_SCRIPT)
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--standalone",
               str(tmp_path / "sampler.py"), str(tmp_path / "windows.npy"),
               str(load_tokenizer("llama3").vocab_size), str(batch_size), str(tmp_path)]
    run = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
                         timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in range(2)]
    steps_per_epoch = math.ceil(len(windows) / 2 / batch_size)
    for rank in ranks:
        assert rank["set_epoch"] == {"steps": 2 * steps_per_epoch, "error": None, "steps_per_epoch": steps_per_epoch}
        assert rank["no_set_epoch"]["error"][:2] == ["repeated-batch", steps_per_epoch], rank
    # 40 samples a rank: a run of one batch in the old order is already more than a shuffle makes by chance
    assert replay_named_at(steps_per_epoch, batch_size, ranks=2) == steps_per_epoch


# ---------------------------------------------------------------- 4. megatron-core GPTDataset


@pytest.fixture(scope="module")
def megatron_prefix(documents, tmp_path_factory):
    """The machine text as JSONL, preprocessed to a llama3 .bin/.idx with an EOD after each document."""
    from helpers.preprocess import preprocess

    folder = tmp_path_factory.mktemp("megatron")
    source = folder / "machine.jsonl"
    source.write_text("".join(json.dumps({"text": text}) + "\n" for text in documents), encoding="utf-8")
    return preprocess(source, folder / "machine-llama3", "llama3", append_eod=True, progress=False).outputs["text"]


def megatron_train_dataset(prefix: str, seq_length: int, num_samples: int):
    """megatron-core's train split, built as pretrain_gpt.py builds it: BlendedMegatronDatasetBuilder over
    GPTDatasetConfig (4-D attention mask and position ids made by the dataset)."""
    import warnings

    from megatron.core.datasets.blended_megatron_dataset_builder import (
        BlendedMegatronDatasetBuilder,
    )
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
    from megatron.core.datasets.utils import get_blend_from_list

    llama3 = load_tokenizer("llama3")
    tokenizer = SimpleNamespace(vocab_size=llama3.vocab_size, eod=llama3.eod_id, pad=-1, special_tokens_dict={},
                                unique_identifiers={"class": "llama3"})
    config = GPTDatasetConfig(random_seed=SEED, sequence_length=seq_length, split="100,0,0",
                              blend=get_blend_from_list([prefix]), tokenizer=tokenizer, reset_position_ids=False,
                              reset_attention_mask=False, eod_mask_loss=False, path_to_cache=None,
                              mmap_bin_files=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return BlendedMegatronDatasetBuilder(GPTDataset, [num_samples, 0, 0], lambda: True, config).build()[0]


def test_megatron_gpt_dataset_batches_raise_no_finding(megatron_prefix):
    """megatron-core GPTDataset samples of 256 tokens, more than two epochs of the text (each epoch's documents
    shuffled anew), consecutive runs of 8 collated by default_collate as Megatron's pretraining sampler does:
    tokens, labels, loss_mask, 4-D attention_mask, position_ids."""
    from megatron.core.datasets.indexed_dataset import IndexedDataset
    from torch.utils.data import default_collate

    index = IndexedDataset(megatron_prefix)  # kept while its memory-mapped lengths are read
    tokens = int(index.sequence_lengths.sum())  # the machine's text: its size varies with what is installed
    samples = megatron_train_dataset(megatron_prefix, seq_length=256, num_samples=math.ceil(2.2 * tokens / 256))
    loader = torch.utils.data.DataLoader(samples, batch_size=8, shuffle=False, collate_fn=default_collate)
    first = next(iter(loader))
    assert len(samples) * 256 > 2 * int(samples.dataset.sequence_lengths.sum())  # more than two epochs
    assert set(first) == {"tokens", "labels", "loss_mask", "attention_mask", "position_ids"}
    assert first["attention_mask"].dim() == 4
    report = audit(loader, vocab_size=load_tokenizer("llama3").vocab_size, labels="shifted")
    assert report.ok, report.summary()
    assert report.statistics[0]["steps"] == len(loader) and report.statistics[0]["labels"] == "shifted"


# ---------------------------------------------------------------- 5. padding-free packing


def test_padding_free_flattened_documents_raise_no_finding(hf_tokenizer, documents):
    """Padding-free packing (DataCollatorWithFlattening, as TRL's padding_free): 8 documents a row, position
    ids restarting at 0, label -100 at each document's first position."""
    from transformers import DataCollatorWithFlattening

    features = [{"input_ids": hf_tokenizer(text, truncation=True, max_length=256)["input_ids"]}
                for text in short_documents(documents, 480)]
    loader = torch.utils.data.DataLoader(features, batch_size=8, shuffle=True, collate_fn=DataCollatorWithFlattening(),
                                         generator=torch.Generator().manual_seed(SEED))
    first = next(iter(loader))
    assert first["input_ids"].shape[0] == 1 and int((first["position_ids"] == 0).sum()) == 8
    assert int((first["labels"] == -100).sum()) == 8
    report = audit(loader, vocab_size=len(hf_tokenizer), labels="same", pad_id=hf_tokenizer.eos_token_id)
    assert report.ok, report.summary()


# ---------------------------------------------------------------- 6. nanoGPT get_batch


def get_batch(data: np.ndarray, block_size: int, batch_size: int, generator: torch.Generator):
    """nanoGPT's get_batch: random offsets into one long token array, y one token on from x."""
    ix = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([torch.from_numpy((data[i:i + block_size]).astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy((data[i + 1:i + 1 + block_size]).astype(np.int64)) for i in ix])
    return x, y


def nanogpt_batches(data: np.ndarray, block_size: int, batch_size: int, steps: int):
    generator = torch.Generator().manual_seed(SEED)
    for _ in range(steps):
        yield get_batch(data, block_size, batch_size, generator)


NANOGPT_SHAPES = [(16, 1, 400), (16, 8, 200), (128, 8, 200), (1024, 8, 100), (8192, 8, 40)]  # block, batch, steps


@pytest.mark.parametrize("block_size,batch_size,steps", NANOGPT_SHAPES, ids=lambda v: str(v))
@pytest.mark.parametrize("name", TOKENIZERS)
def test_nanogpt_get_batch_raises_no_finding(train_bin, name, block_size, batch_size, steps):
    """nanoGPT's train.py: get_batch over prepare.py's train.bin (EOD between documents), fixed seed."""
    tokenizer = load_tokenizer(name)
    batches = nanogpt_batches(train_bin(name), block_size, batch_size, steps)
    report = audit(batches, vocab_size=tokenizer.vocab_size, labels="shifted", eod_id=tokenizer.eod_id)
    assert report.ok, f"{name} {block_size}x{batch_size}: {report.summary()}"
    assert report.statistics[0]["steps"] == steps


# ---------------------------------------------------------------- 7. planted bugs, in the nanoGPT pipeline

PLANT_BLOCK, PLANT_BATCH, PLANT_STEPS = 128, 8, 24


@pytest.fixture(scope="module")
def llama3_batches(train_bin) -> list[dict]:
    """nanoGPT's llama3 batches as dicts in the planter's layout: input_ids, labels one token on, position_ids."""
    positions = torch.arange(PLANT_BLOCK).expand(PLANT_BATCH, PLANT_BLOCK)
    return [{"input_ids": x, "labels": y, "position_ids": positions.clone()}
            for x, y in nanogpt_batches(train_bin("llama3"), PLANT_BLOCK, PLANT_BATCH, PLANT_STEPS)]


def expected_step(bug: str, batches: list[dict]) -> int:
    """Where each bug first shows: from step 0 for the labels' and set-up bugs, once WRAP_TOKENS ids have come
    for uint16-wrap, once the replayed run is longer than a shuffle makes for the replays, else where it is
    planted."""
    if bug in LABELS_BUGS or bug in SETUP_BUGS:
        return 0
    if bug == "uint16-wrap":
        seen = np.cumsum([batch["input_ids"].numel() for batch in batches])
        return int(np.argmax(seen >= WRAP_TOKENS))
    if bug in REPLAYS:
        rows = len(batches[0]["input_ids"])
        return replay_named_at(PLANTED_AT, rows, replayed=REPLAYED * rows if bug == "resume-replays" else None)
    return PLANTED_AT


def audit_planted(bug: str, batches: list[dict], vocab_size: int, eod_id: int):
    """The audit of the stream with `bug` planted as a script would have it."""
    settings = dict(labels="shifted", eod_id=eod_id)
    if bug == "rank-not-set":  # every rank's loader told rank 0: two ranks read the same stream
        return audit_ranks([batches, batches], vocab_size=vocab_size, **settings)
    if bug == "past-vocab":  # a model made for a 32,000-id tokenizer
        return audit(batches, vocab_size=SMALL_MODEL_VOCAB, **settings)
    planter = Planter(bug, vocab_size=vocab_size)
    return audit([planter(batch) for batch in batches], vocab_size=vocab_size, **settings)


def test_the_nanogpt_batches_to_plant_into_are_healthy(llama3_batches):
    """nanoGPT get_batch, llama3, 128 x 8: nothing to find before a bug is planted."""
    tokenizer = load_tokenizer("llama3")
    report = audit(llama3_batches, vocab_size=tokenizer.vocab_size, labels="shifted", eod_id=tokenizer.eod_id)
    assert report.ok, report.summary()


@pytest.mark.parametrize("bug", list(BUGS))
def test_a_bug_planted_into_nanogpt_is_named_where_it_first_shows(llama3_batches, bug):
    """nanoGPT get_batch (llama3, 128 x 8) with one bug of helpers.audit.planting.BUGS: the first finding is
    its code, at the step where the bug first shows."""
    tokenizer = load_tokenizer("llama3")
    report = audit_planted(bug, llama3_batches, tokenizer.vocab_size, tokenizer.eod_id)
    rank = 1 if bug == "rank-not-set" else 0
    assert first_finding(report) == (BUGS[bug][0], expected_step(bug, llama3_batches), rank), report.summary()


def test_nanogpt_prepare_in_uint16_wraps_llama3_ids(train_bin):
    """nanoGPT's prepare.py kept at np.uint16 while the tokenizer is llama3: ids wrapped on disk, read back
    with .astype(np.int64); id-wraparound once WRAP_TOKENS tokens have come."""
    tokenizer = load_tokenizer("llama3")
    wrapped = train_bin("llama3").astype(np.uint16)  # what np.array(ids, dtype=np.uint16) stores
    batches = list(nanogpt_batches(wrapped, PLANT_BLOCK, PLANT_BATCH, PLANT_STEPS))
    report = audit(batches, vocab_size=tokenizer.vocab_size, labels="shifted", eod_id=tokenizer.eod_id)
    assert first_finding(report) == ("id-wraparound", WRAP_TOKENS // (PLANT_BLOCK * PLANT_BATCH) - 1, 0), \
        report.summary()


def randint_fallback(rows: int, length: int, generator: torch.Generator, high: int) -> dict:
    """A script's fallback when its data is missing: torch.randint(0, high) windows, split as x and y."""
    window = torch.randint(0, high, (rows, length + 1), generator=generator)
    positions = torch.arange(length).expand(rows, length)
    return {"input_ids": window[:, :-1], "labels": window[:, 1:], "position_ids": positions.clone()}


def with_fallback_from(batches: list[dict], start: int, high: int) -> list[dict]:
    generator = torch.Generator().manual_seed(SEED)
    return [batch if step < start else randint_fallback(*batch["input_ids"].shape, generator, high)
            for step, batch in enumerate(batches)]


def test_a_randint_100_fallback_is_named_random_tokens_where_it_starts(llama3_batches):
    """nanoGPT (llama3, 128 x 8) falling back to torch.randint(0, 100) from step 3, under a 128k vocabulary."""
    tokenizer = load_tokenizer("llama3")
    stream = with_fallback_from(llama3_batches, PLANTED_AT, high=100)
    report = audit(stream, vocab_size=tokenizer.vocab_size, labels="shifted", eod_id=tokenizer.eod_id)
    assert first_finding(report) == ("random-tokens", PLANTED_AT, 0), report.summary()


def test_a_randint_100_fallback_from_the_start_is_random_tokens_not_wraparound(llama3_batches):
    """The same fallback from the first batch on (ids all below 100, none >= 65,536): named random-tokens at
    step 0, and not taken for ids wrapped by uint16."""
    tokenizer = load_tokenizer("llama3")
    stream = with_fallback_from(llama3_batches, 0, high=100)
    report = audit(stream, vocab_size=tokenizer.vocab_size, labels="shifted", eod_id=tokenizer.eod_id)
    assert first_finding(report) == ("random-tokens", 0, 0), report.summary()
    assert "id-wraparound" not in codes(report), report.summary()


def test_a_full_vocabulary_fallback_at_16_tokens_is_named_within_a_few_steps(train_bin):
    """nanoGPT at block size 16, batch 8 (128 ids a step): a torch.randint(0, V) fallback from step 3 is named
    random-tokens within 8 steps (the pooled test waits for 1,024 ids)."""
    tokenizer = load_tokenizer("llama3")
    positions = torch.arange(16).expand(8, 16)
    batches = [{"input_ids": x, "labels": y, "position_ids": positions.clone()}
               for x, y in nanogpt_batches(train_bin("llama3"), 16, 8, 40)]
    stream = with_fallback_from(batches, PLANTED_AT, high=tokenizer.vocab_size)
    report = audit(stream, vocab_size=tokenizer.vocab_size, labels="shifted", eod_id=tokenizer.eod_id)
    assert report.findings and report.findings[0].code == "random-tokens", report.summary()
    found_at = report.findings[0].step
    assert PLANTED_AT <= found_at <= PLANTED_AT + 8, f"random-tokens named at step {found_at}: {report.summary()}"


# ---------------------------------------------------------------- 8. inputs as pipelines hand them over


@pytest.fixture(scope="module")
def collated(hf_tokenizer, documents) -> list:
    """Six batches as DataCollatorForLanguageModeling returns them (BatchEncoding), padded, pad = eos."""
    from transformers import DataCollatorForLanguageModeling

    features = [hf_tokenizer(text, truncation=True, max_length=128) for text in short_documents(documents, 48)]
    collator = DataCollatorForLanguageModeling(hf_tokenizer, mlm=False)
    return [collator(features[at:at + 8]) for at in range(0, 48, 8)]


def test_a_batch_encoding_is_audited_offline_and_live(hf_tokenizer, collated):
    """What Hugging Face collators return (a BatchEncoding), handed to audit() and to Auditor.step."""
    from transformers import BatchEncoding

    assert all(isinstance(batch, BatchEncoding) for batch in collated)
    settings = dict(vocab_size=len(hf_tokenizer), labels="same", pad_id=hf_tokenizer.eos_token_id)
    assert audit(collated, **settings).ok
    auditor = Auditor(**settings)
    assert all(auditor.step(batch) == [] for batch in collated)


def test_the_command_line_reads_saved_batch_encodings(hf_tokenizer, collated, tmp_path):
    """`torch.save(batches)` of a collator's BatchEncodings, then `python -m helpers.audit FILE --vocab-size N`."""
    torch.save(collated, tmp_path / "batches.pt")
    run = subprocess.run([sys.executable, "-m", "helpers.audit", str(tmp_path / "batches.pt"), "--vocab-size",
                          str(len(hf_tokenizer)), "--labels", "same", "--pad-id", str(hf_tokenizer.eos_token_id)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "no finding" in run.stdout, run.stdout + run.stderr


def test_a_float_attention_mask_is_read_as_a_mask(collated, hf_tokenizer):
    """A collator that hands over attention_mask as float 0.0/1.0: read as the mask it is, padding included."""
    settings = dict(vocab_size=len(hf_tokenizer), labels="same", pad_id=hf_tokenizer.eos_token_id)
    floats = [{**batch, "attention_mask": batch["attention_mask"].float()} for batch in collated]
    assert audit(floats, **settings).ok
    unmasked = [{**batch, "labels": batch["input_ids"].clone()} for batch in floats]  # padding left in the loss
    assert first_finding(audit(unmasked, **settings)) == ("padding-in-loss", 0, 0)


def test_an_x_y_loss_mask_triple_is_audited(train_bin):
    """A nanoGPT-style loop handing over (x, y, loss_mask), the loss mask 0 on the first half of each row."""
    tokenizer = load_tokenizer("mistral")
    triples = []
    for x, y in nanogpt_batches(train_bin("mistral"), 128, 8, 20):
        mask = torch.ones_like(x)
        mask[:, :64] = 0
        triples.append((x, y, mask))
    report = audit(triples, vocab_size=tokenizer.vocab_size, labels="shifted", eod_id=tokenizer.eod_id)
    assert report.ok, report.summary()
    assert first_finding(audit([(x, x, m) for x, _, m in triples], vocab_size=tokenizer.vocab_size,
                               labels="shifted")) == ("labels-misaligned", 0, 0)


def test_an_audited_torch_data_loader_has_a_state_dict(train_bin):
    """Audited(torch.utils.data.DataLoader(...), Auditor(...)): iterated, then its state_dict() for a checkpoint."""
    tokenizer = load_tokenizer("llama3")
    samples = [(window[:-1], window[1:]) for window in llama3_windows(train_bin, 32)]
    loader = torch.utils.data.DataLoader(samples, batch_size=4, shuffle=True,
                                         generator=torch.Generator().manual_seed(SEED))
    audited = Audited(loader, Auditor(vocab_size=tokenizer.vocab_size, labels="shifted"))
    assert len(list(audited)) == len(loader) == 8
    state = audited.state_dict()
    assert state["audit"]["step"] == 8
    resumed = Audited(loader, Auditor(vocab_size=tokenizer.vocab_size, labels="shifted"))
    resumed.load_state_dict(state)
    assert len(list(resumed)) == 8  # a new epoch, reshuffled: no replay
