"""The one loader: every format gives the same layout and the same resume contract; no silent fallback."""

from __future__ import annotations

import json
import logging
import math
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers.common.errors import DataNotFoundError, UserError
from helpers.datasets.blending import build_datasets
from helpers.datasets.formats import indexed_to_npy, indexed_to_shards
from helpers.datasets.indexed import IndexedDataset
from helpers.datasets.layout import BATCH_KEYS, IGNORE_INDEX, batch_of
from helpers.loading.loader import STEPS_PER_ITEM, make_dataloader, samples_for_transformers
from helpers.loading.settings import LoaderSettings
from helpers.preprocess import preprocess

EOD = 128001


@pytest.fixture(scope="module")
def prefixes(tmp_path_factory, corpus_dir):
    """Two small llama3 datasets (with sidecars) from the real corpus."""
    folder = tmp_path_factory.mktemp("loader")
    out = {}
    for domain, count in (("literature", 40), ("docs", 15)):
        lines = (corpus_dir / f"{domain}.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:count]
        (folder / f"{domain}.jsonl").write_text("".join(lines), encoding="utf-8")
        out[domain] = preprocess(folder / f"{domain}.jsonl", folder / domain, "llama3", append_eod=True,
                                 progress=False).outputs["text"]
    return out


def _blend(prefixes):
    return ["0.7", prefixes["literature"], "0.3", prefixes["docs"]]


def _equal(a: dict, b: dict) -> bool:
    return set(a) == set(b) and all(torch.equal(a[k], b[k]) for k in a)


def _layout_holds(batch: dict, batch_size: int, seq_length: int) -> None:
    assert set(batch) == set(BATCH_KEYS)
    for key in BATCH_KEYS:
        assert batch[key].shape == (batch_size, seq_length) and batch[key].dtype == torch.int64, key


def test_megatron_batches_are_build_datasets_samples(prefixes, tmp_path):
    loader = make_dataloader(_blend(prefixes), split="90,10,0", seq_length=64, batch_size=4, num_samples=80,
                             cache_dir=tmp_path)
    train = build_datasets(_blend(prefixes), "90,10,0", (80, 10, None), 64, 1234, eod_id=EOD)[0]
    batches = list(loader)
    assert len(batches) == len(loader) == 20
    for step, batch in enumerate(batches):
        _layout_holds(batch, 4, 64)
        for b in range(4):
            sample = train[step * 4 + b]
            assert all(torch.equal(batch[k][b], sample[k]) for k in BATCH_KEYS)
    assert (torch.cat([b["input_ids"] for b in batches]) == EOD).any()  # documents do end inside samples


@pytest.mark.parametrize("workers", [0, 2])
def test_resume_yields_exactly_the_next_batches(prefixes, tmp_path, workers):
    arguments = dict(data_path=_blend(prefixes), split="90,10,0", seq_length=32, batch_size=3, num_samples=60,
                     cache_dir=tmp_path, num_workers=workers)
    reference = list(make_dataloader(**arguments))
    first = make_dataloader(**arguments)
    for step, batch in enumerate(first):
        if step == 6:
            break
    state = first.state_dict()
    assert state["samples_consumed"] == 7 * 3
    # small: counts and ranges per dataset, not a row per sample, so its size stays put as steps go by
    first.step = 17
    assert abs(len(json.dumps(first.state_dict())) - len(json.dumps(state))) <= 8 and len(json.dumps(state)) < 2_000
    resumed = make_dataloader(**arguments)
    resumed.load_state_dict(state)
    rest = list(resumed)
    assert len(rest) == len(reference) - 7
    assert all(_equal(a, b) for a, b in zip(rest, reference[7:]))


@pytest.mark.parametrize("workers", [0, 2])
def test_an_iteration_left_open_refuses_its_next_batch_once_another_has_begun(prefixes, tmp_path, workers):
    """Two iterations read at once would hand out the same batches and count each twice in the state: the older
    one refuses in one line; a new loop after a stopped one goes on where it stopped, as does one after a resume."""
    arguments = dict(data_path=_blend(prefixes), split="90,10,0", seq_length=32, batch_size=3, num_samples=60,
                     cache_dir=tmp_path, num_workers=workers)
    reference = list(make_dataloader(**arguments))
    loader = make_dataloader(**arguments)
    older, newer = iter(loader), iter(loader)
    assert _equal(next(older), reference[0]) and _equal(next(newer), reference[1])
    with pytest.raises(UserError, match="iterated again") as refused:
        next(older)
    assert "\n" not in str(refused.value) and "fix:" in str(refused.value)
    assert _equal(next(newer), reference[2]) and loader.state_dict()["samples_consumed"] == 3 * 3
    state = loader.state_dict()
    loader.load_state_dict(state)  # a resume ends the iteration still open too
    with pytest.raises(UserError, match="iterated again"):
        next(newer)
    assert all(_equal(a, b) for a, b in zip(loader, reference[3:], strict=True))


@pytest.mark.parametrize("ids, rows, shape, error, says", [
    ([0, 10**9], [0, 1], (4, 2, 32), IndexError, "samples 0..1000000000 out of range"),
    ([-1, 0], [0, 1], (4, 2, 32), IndexError, "samples -1..0 out of range"),
    ([0, 1], [0, 2], (4, 2, 32), IndexError, "rows 0..2 out of range for the 2 rows of out"),
    ([0, 1], [-1, 0], (4, 2, 32), IndexError, "rows -1..0 out of range"),
    ([0, 1], [0], (4, 2, 32), ValueError, "1 rows for 2 samples"),
    ([0, 1], [0, 1], (3, 2, 32), ValueError, "it must be int64 [4, B, 32]"),
    ([0, 1], [0, 1], (4, 2, 16), ValueError, "it must be int64 [4, B, 32]"),
])
def test_a_layout_asked_outside_its_samples_or_its_block_is_refused_before_a_write(prefixes, tmp_path, ids, rows,
                                                                                     shape, error, says):
    """The compiled gather-and-layout writes straight into the block: what lies outside the samples or the block is
    refused first, and the block is left as it was."""
    loader = make_dataloader([prefixes["literature"]], split="100,0,0", seq_length=32, batch_size=2, seed=5,
                             cache_dir=tmp_path)
    dataset = loader.source.orders[0].epoch(0)
    block = np.full(shape, -7, dtype=np.int64)
    with pytest.raises(error, match=re.escape(says)):
        dataset.lay_out(np.array(ids), np.array(rows), block)
    assert (block == -7).all()
    block = np.full((4, 2, 32), -7, dtype=np.int64)
    dataset.lay_out(np.array([0, 1]), np.array([1, 0]), block)
    assert _equal(batch_of(block[:, ::-1].copy()), loader.batch_at(0))


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a CUDA machine pinning is what pin_memory=True asks for")
def test_pinning_asked_for_on_a_machine_without_cuda_is_one_line(prefixes, tmp_path):
    with pytest.raises(UserError, match="pin_memory=True pins batches for a CUDA device's copies.*fix:"):
        make_dataloader([prefixes["literature"]], split="100,0,0", seq_length=32, batch_size=2, seed=5,
                        cache_dir=tmp_path, pin_memory=True)


def test_workers_whose_slots_exceed_dev_shm_are_refused_before_they_start(prefixes, tmp_path, monkeypatch):
    """A worker writing past what /dev/shm holds is killed by SIGBUS mid-run: the room is checked first, and the
    slots never outnumber the run's steps."""
    from helpers.loading import loader as loading

    arguments = dict(data_path=[prefixes["literature"]], split="100,0,0", seq_length=32, batch_size=2, seed=5,
                     cache_dir=tmp_path, num_samples=6)
    assert loading._StepWindows(make_dataloader(**arguments).source, 2, 0, 1, items_ahead=64).slots == 3
    room = type("Usage", (), {"free": 100})  # bytes: less than three steps of 2 x 33 ids
    monkeypatch.setattr(loading.shutil, "disk_usage", lambda path: room)
    with pytest.raises(UserError, match=r"MiB of shared memory .* /dev/shm has 0 MiB free; fix: fewer num_workers"):
        next(iter(make_dataloader(num_workers=2, **arguments)))


def test_ranks_together_equal_one_rank_with_the_global_batch(prefixes, tmp_path):
    arguments = dict(data_path=_blend(prefixes), split="90,10,0", seq_length=32, num_samples=48, cache_dir=tmp_path)
    single = make_dataloader(batch_size=4, **arguments)
    ranks = [make_dataloader(batch_size=2, rank=r, world_size=2, **arguments) for r in range(2)]
    for step in range(len(single)):
        together = {k: torch.cat([loader.batch_at(step)[k] for loader in ranks]) for k in BATCH_KEYS}
        assert _equal(together, single.batch_at(step))
    # and a state saved on two ranks resumes on one
    for _ in zip(range(3), ranks[0]):
        pass
    single.load_state_dict(ranks[0].state_dict())
    assert single.step == 3


TORCHRUN_SCRIPT = """
import sys, torch, torch.distributed as dist
from helpers.loading.loader import make_dataloader
from helpers.training.distributed import finish_ranks
dist.init_process_group("gloo")
blend, cache, out = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
loader = make_dataloader(blend, split="90,10,0", seq_length=32, batch_size=2, num_samples=40, cache_dir=cache)
assert loader.world_size == 2 and loader.rank == dist.get_rank()
for step, batch in enumerate(loader):
    gathered = [torch.empty_like(batch["input_ids"]) for _ in range(2)]
    dist.all_gather(gathered, batch["input_ids"])
    if dist.get_rank() == 0:
        torch.save(torch.cat(gathered), f"{out}/step{step}.pt")
finish_ranks()  # leave together, and end without finalizing (helpers.common.process_exit)
"""


def test_two_processes_under_torchrun(prefixes, tmp_path):
    script = tmp_path / "ranks.py"
    script.write_text(TORCHRUN_SCRIPT)
    blend = ",".join(_blend(prefixes))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                             "--standalone", str(script), blend, str(tmp_path / "cache"), str(tmp_path)],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert len(list((tmp_path / "cache").iterdir())) == 2  # rank 0 built the indices once (two datasets)
    single = make_dataloader(_blend(prefixes), split="90,10,0", seq_length=32, batch_size=4, num_samples=40,
                             cache_dir=tmp_path / "cache")
    for step in range(len(single)):
        assert torch.equal(torch.load(tmp_path / f"step{step}.pt"), single.batch_at(step)["input_ids"])


def test_a_state_of_samples_cut_otherwise_is_refused(prefixes, tmp_path):
    """Datasets and their mix may change at a resume (tests/test_schedules.py); how samples are cut may not."""
    one = make_dataloader([prefixes["docs"]], split="90,10,0", seq_length=32, batch_size=2, cache_dir=tmp_path)
    for other in (make_dataloader([prefixes["docs"]], split="90,10,0", seq_length=64, batch_size=2,
                                  cache_dir=tmp_path),
                  make_dataloader([prefixes["docs"]], split="80,20,0", seq_length=32, batch_size=2,
                                  cache_dir=tmp_path)):
        with pytest.raises(UserError, match="from other data"):
            other.load_state_dict(one.state_dict())
    with pytest.raises(UserError, match="seed"):
        one.load_state_dict({**one.state_dict(), "seed": 1})


def test_missing_data_raises_and_never_falls_back(tmp_path):
    missing = tmp_path / "absent_text_document"
    with pytest.raises(DataNotFoundError) as err:
        make_dataloader([str(missing)], seq_length=32, batch_size=2)
    assert isinstance(err.value, FileNotFoundError) and isinstance(err.value, UserError)
    assert str(missing) in str(err.value) and "python -m helpers.preprocess" in str(err.value)
    for path in (tmp_path / "absent.npy", None):
        with pytest.raises(DataNotFoundError):
            make_dataloader(path, seq_length=32, batch_size=2)


def test_synthetic_only_by_name_in_range_and_loud(caplog):
    with pytest.raises(UserError, match="vocab_size"):
        make_dataloader(source="synthetic", seq_length=16, batch_size=2, num_samples=8)
    logger = logging.getLogger("helpers.loading.loader")
    logger.addHandler(caplog.handler)
    try:
        loader = make_dataloader(source="synthetic", vocab_size=300, seq_length=16, batch_size=4, num_samples=40)
    finally:
        logger.removeHandler(caplog.handler)
    assert "SYNTHETIC" in caplog.text and f"{math.log(300):.3f}" in caplog.text
    batches = list(loader)
    ids = torch.cat([b["input_ids"] for b in batches])
    assert ids.min() >= 0 and ids.max() < 300 and len(torch.unique(ids)) > 250
    assert _equal(batches[3], loader.batch_at(3))


def test_the_settings_are_one_object_given_whole_or_as_keywords(prefixes, tmp_path):
    """Keywords, an object, an object in place of data_path: the same batches; keywords beside an object replace
    its fields; a keyword that is no setting is refused as Python refuses one."""
    keywords = dict(split="90,10,0", seq_length=32, batch_size=2, num_samples=20, cache_dir=tmp_path)
    settings = LoaderSettings(data_path=_blend(prefixes), **keywords)
    expected = list(make_dataloader(_blend(prefixes), **keywords))
    for loader in (make_dataloader(settings=settings), make_dataloader(settings),
                   make_dataloader(_blend(prefixes), settings=LoaderSettings(**keywords))):
        assert loader.settings.world_size == 1 and all(map(_equal, loader, expected))
    assert len(make_dataloader(settings=settings, batch_size=5)) == 4  # 20 samples
    with pytest.raises(TypeError, match="make_dataloader\\(\\) got an unexpected keyword argument 'batchsize'"):
        make_dataloader(_blend(prefixes), batchsize=2)
    assert LoaderSettings().batch_size == 8 and LoaderSettings().seq_length == 1024 and LoaderSettings().seed == 1234


def test_npy_windows_and_the_memmap_pitfall(prefixes, tmp_path):
    npy = indexed_to_npy(prefixes["literature"], tmp_path / "lit.npy", eod_id=EOD)
    flat = IndexedDataset(prefixes["literature"]).tokens
    # a plain np.memmap(dtype=...) reads the 128-byte npy header as tokens; np.load(mmap_mode="r") does not
    wrong = np.memmap(npy, dtype=flat.dtype, mode="r")
    assert wrong.size == flat.size + 128 // flat.dtype.itemsize and not np.array_equal(wrong[:flat.size], flat)
    assert np.array_equal(np.load(npy, mmap_mode="r"), flat)
    loader = make_dataloader(str(npy), split="100,0,0", seq_length=64, batch_size=4)
    windows = (flat.size - 1) // 64
    assert len(loader) == windows // 4
    for batch in loader:
        _layout_holds(batch, 4, 64)
        assert torch.equal(batch["input_ids"][:, 1:], batch["labels"][:, :-1])
    first = loader.batch_at(0)["input_ids"][0].numpy()
    matches = [w for w in range(windows) if np.array_equal(flat[w * 64:w * 64 + 64], first)]
    assert matches, "every sample is one window of the file"


def test_shards_resume_and_stay_inside_one_shard(prefixes, tmp_path):
    folder = indexed_to_shards(prefixes["literature"], tmp_path / "shards", tokens_per_shard=3_000,
                               val_fraction=0.25, eod_id=EOD)
    arguments = dict(data_path=str(folder), split_name="train", seq_length=50, batch_size=4, seed=3)
    reference = list(make_dataloader(**arguments))
    loader = make_dataloader(**arguments)
    next(iter(loader))
    resumed = make_dataloader(**arguments)
    resumed.load_state_dict(loader.state_dict())
    assert all(_equal(a, b) for a, b in zip(resumed, reference[1:]))
    shards = [np.fromfile(p, dtype=json.loads((folder / "dataset_metadata.json").read_text())["dtype"])
              for p in sorted((folder / "train").iterdir())]
    window = reference[0]["input_ids"][0].numpy()
    assert any(any(np.array_equal(s[i:i + 50], window) for i in range(0, s.size - 50, 50)) for s in shards)
    with pytest.raises(UserError, match="train/ and val/ only"):
        make_dataloader(str(folder), split_name="test", seq_length=50, batch_size=4)


def test_a_one_element_list_is_told_apart_by_what_is_on_disk(prefixes, tmp_path):
    """`["tokens.npy"]` and `["shards/"]`, given as Megatron prefixes are, open the file and the folder."""
    npy = indexed_to_npy(prefixes["literature"], tmp_path / "lit.npy", eod_id=EOD)
    folder = indexed_to_shards(prefixes["literature"], tmp_path / "shards", tokens_per_shard=3_000, eod_id=EOD)
    for path, kind in ((npy, "npy"), (folder, "shards")):
        arguments = dict(split="100,0,0", seq_length=50, batch_size=4, seed=3)
        listed, bare = make_dataloader([str(path)], **arguments), make_dataloader(str(path), **arguments)
        assert listed.source.kind == bare.source.kind == kind
        assert _equal(listed.batch_at(0), bare.batch_at(0))
        assert make_dataloader([Path(path)], **arguments).source.kind == kind
    beside = tmp_path / "prefix_text_document"
    for suffix in (".bin", ".idx", ".json"):
        (tmp_path / f"prefix_text_document{suffix}").write_bytes(Path(f"{prefixes['literature']}{suffix}").read_bytes())
    (beside / "cache").mkdir(parents=True)  # what megatron-core's GPTDataset makes with no path_to_cache
    assert make_dataloader([str(beside)], split="100,0,0", seq_length=50, batch_size=4).source.kind == "megatron"


def test_packed_rows_keep_documents_whole(prefixes):
    loader = make_dataloader(_blend(prefixes), split="90,10,0", seq_length=256, batch_size=4, num_samples=40,
                             packing="best_fit_decreasing")
    datasets = [IndexedDataset(p) for p in (prefixes["literature"], prefixes["docs"])]
    documents = [d.get(i).astype(np.int64) for d in datasets for i in range(len(d))]
    for batch in loader:
        _layout_holds(batch, 4, 256)
        for ids, labels, positions, docs in zip(*(batch[k] for k in ("input_ids", "labels", "position_ids",
                                                                        "document_ids"))):
            for d in torch.unique(docs[docs >= 0]):
                where = docs == d
                piece = ids[where]
                assert torch.equal(positions[where], torch.arange(piece.numel()))
                assert labels[where][-1] == IGNORE_INDEX and torch.equal(labels[where][:-1], piece[1:])
                assert any(_contains(document, piece.numpy()) for document in documents)
            assert (labels[docs < 0] == IGNORE_INDEX).all()


def _contains(document: np.ndarray, piece: np.ndarray) -> bool:
    starts = np.flatnonzero(document[: document.size - piece.size + 1] == piece[0])
    return any(np.array_equal(document[s:s + piece.size], piece) for s in starts)


def test_indexed_dataset_pickles_by_prefix(prefixes):
    dataset = IndexedDataset(prefixes["literature"])
    blob = pickle.dumps(dataset)
    assert len(blob) < 1_000 < dataset.bin_bytes
    again = pickle.loads(blob)
    assert np.array_equal(again.get(3), dataset.get(3))


def test_a_dataset_that_has_laid_out_a_batch_pickles_without_its_tokens(prefixes, tmp_path):
    """What the compiled layout keeps after its first batch (the tokens among it) stays in the process that made it:
    a worker started by pickling gets the dataset by its prefix, and lays out the same rows."""
    loader = make_dataloader([prefixes["literature"]], split="100,0,0", seq_length=32, batch_size=2, seed=5,
                             cache_dir=tmp_path)
    dataset = loader.source.orders[0].epoch(0)
    first = np.zeros((4, 2, 32), dtype=np.int64)
    dataset.lay_out(np.array([3, 4]), np.array([0, 1]), first)
    blob = pickle.dumps(dataset)
    assert len(blob) < dataset.dataset.bin_bytes
    again = np.zeros_like(first)
    pickle.loads(blob).lay_out(np.array([3, 4]), np.array([0, 1]), again)
    assert np.array_equal(first, again)


@pytest.mark.parametrize("columns, datasets, expected", [
    ([1, 0, 1, 2, 0], 4, [(0, [1, 4]), (1, [0, 2]), (2, [3])]),  # dataset 3 has no row: not named
    ([2, 2, 2], 3, [(2, [0, 1, 2])]),
    ([0], 1, [(0, [0])]),
    ([], 2, []),
])
def test_a_blends_rows_are_grouped_by_dataset_in_their_order(columns, datasets, expected):
    from helpers.loading.sources import rows_by_dataset

    found = [(k, rows.tolist()) for k, rows in rows_by_dataset(np.array(columns, dtype=np.int16), datasets)]
    assert found == expected


def test_transformers_trainer_takes_the_samples(prefixes, tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

    loader = make_dataloader([prefixes["docs"]], split="100,0,0", seq_length=32, batch_size=2, num_samples=16)
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=128_256, hidden_size=16, intermediate_size=32,
                                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2))
    samples = samples_for_transformers(loader)
    batch = {k: torch.stack([samples[i][k] for i in range(2)]) for k in samples[0]}
    with torch.no_grad():
        theirs = model(**batch).loss
        logits = model(input_ids=batch["input_ids"], position_ids=batch["position_ids"]).logits
    ours = torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten())
    assert torch.allclose(theirs, ours, atol=1e-5)  # labels were not shifted a second time
    args = TrainingArguments(output_dir=str(tmp_path / "trainer"), max_steps=3, per_device_train_batch_size=2,
                             report_to=[], logging_steps=1, save_strategy="no", use_cpu=True,
                             remove_unused_columns=False, train_sampling_strategy="sequential")
    trainer = Trainer(model=model, args=args, train_dataset=samples)
    result = trainer.train()
    assert result.global_step == 3 and math.isfinite(result.training_loss)
    # Trainer's first step learned from the same batch with the same loss: `shift_labels` reached the model
    # (with the default remove_unused_columns=True it drops them and the labels are shifted twice)
    assert math.isclose(trainer.state.log_history[0]["loss"], float(ours), rel_tol=1e-5)


@pytest.mark.parametrize("kind", ["megatron", "packed", "npy", "shards", "synthetic"])
def test_every_source_resumes_with_the_next_batches_and_another_global_batch(prefixes, tmp_path, kind):
    """A state taken after 3 steps of 4 resumes at sample 12: with batches of 4 the next batches are the
    reference's, with batches of 6 the first one holds samples 12 to 17, and batches of 5 are refused (12
    samples consumed is no whole number of steps of 5: resuming would replay or skip samples)."""
    paths = {"megatron": _blend(prefixes), "packed": _blend(prefixes),
             "npy": str(indexed_to_npy(prefixes["literature"], tmp_path / "lit.npy", eod_id=EOD)),
             "shards": str(indexed_to_shards(prefixes["literature"], tmp_path / "shards", tokens_per_shard=3_000,
                                             eod_id=EOD)),
             "synthetic": None}
    arguments = dict(data_path=paths[kind], split="90,10,0" if kind in ("megatron", "packed") else "100,0,0",
                     seq_length=32, num_samples=96, seed=5, cache_dir=tmp_path / "cache",
                     packing="best_fit_decreasing" if kind == "packed" else None,
                     source="synthetic" if kind == "synthetic" else "real",
                     vocab_size=300 if kind == "synthetic" else None)
    if kind in ("npy", "shards"):
        arguments.pop("num_samples")
    reference = list(make_dataloader(batch_size=4, **arguments))
    first = make_dataloader(batch_size=4, **arguments)
    for _ in zip(range(3), first):
        pass
    state = first.state_dict()
    assert state["samples_consumed"] == 12
    same = make_dataloader(batch_size=4, **arguments)
    same.load_state_dict(state)
    assert all(_equal(a, b) for a, b in zip(same, reference[3:])) and same.step == len(reference)
    wider = make_dataloader(batch_size=6, **arguments)
    wider.load_state_dict(state)
    resumed = next(iter(wider))
    expected = {k: torch.cat([reference[3][k], reference[4][k][:2]]) for k in BATCH_KEYS}
    assert _equal(resumed, expected), "the first batch after resuming holds samples 12..17"
    odd = make_dataloader(batch_size=5, **arguments)
    with pytest.raises(UserError, match="whole number of steps"):
        odd.load_state_dict(state)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("reset", [False, True])
def test_pinned_batches_are_contiguous_page_locked_copies_of_the_batches(prefixes, tmp_path, reset):
    """With pin_memory (the default where CUDA is), every tensor of a batch is a contiguous page-locked copy, and
    the GPU gets the same values."""
    arguments = dict(data_path=[prefixes["literature"]], split="100,0,0", seq_length=32, batch_size=4, seed=5,
                     cache_dir=tmp_path / "cache", reset_position_ids=reset, eod_id=EOD)
    plain = list(make_dataloader(pin_memory=False, **arguments))
    for batch, expected in zip(make_dataloader(pin_memory=True, **arguments), plain, strict=True):
        assert all(value.is_pinned() and value.is_contiguous() for value in batch.values())
        assert _equal(batch, expected)
        assert _equal({key: value.to("cuda", non_blocking=True).cpu() for key, value in batch.items()}, expected)


@pytest.mark.parametrize("kind", ["megatron", "npy", "shards", "packed"])
def test_workers_hand_over_windows_in_the_datas_dtype_and_give_the_same_batches(prefixes, tmp_path, kind):
    """With workers, a step's token windows reach the main process in the data's own dtype (4 bytes for Llama 3:
    half the bytes of one int64 tensor, an eighth of the batch) through a slot of shared memory whose number is
    all the worker hands over, and the batches equal those made in one process; packed rows, which are not
    windows, cross whole."""
    from helpers.loading.loader import _StepWindows

    paths = {"megatron": _blend(prefixes), "packed": _blend(prefixes),
             "npy": str(indexed_to_npy(prefixes["literature"], tmp_path / "lit.npy", eod_id=EOD)),
             "shards": str(indexed_to_shards(prefixes["literature"], tmp_path / "shards", tokens_per_shard=3_000,
                                             eod_id=EOD))}
    arguments = dict(data_path=paths[kind], split="90,10,0" if kind in ("megatron", "packed") else "100,0,0",
                     seq_length=32, batch_size=4, seed=5, cache_dir=tmp_path / "cache",
                     packing="best_fit_decreasing" if kind == "packed" else None)
    alone = list(make_dataloader(**arguments))
    with_workers = make_dataloader(num_workers=2, **arguments)
    assert all(_equal(a, b) for a, b in zip(with_workers, alone)) and with_workers.step == len(alone)
    steps = _StepWindows(with_workers.source, 4, 0, 1, items_ahead=2)
    handed = steps[4]  # the item of the steps from step 4
    if kind == "packed":
        assert steps.per_item == 1 and len(handed) == 1 and _equal(handed[0], alone[4])
        return
    on_disk = {"megatron": IndexedDataset(prefixes["literature"]).dtype, "npy": np.load(paths["npy"]).dtype,
               "shards": json.loads((Path(paths["shards"]) / "dataset_metadata.json").read_text())["dtype"]}
    assert steps.per_item == STEPS_PER_ITEM and steps.slots == 2 * 2 * STEPS_PER_ITEM
    assert handed == [step % steps.slots for step in range(4, 4 + STEPS_PER_ITEM)]
    windows = steps.slot(handed[0])
    assert windows.dtype == np.dtype(on_disk[kind]) and windows.itemsize == 4
    assert windows.shape == (4, 33) and steps.memory.is_shared()
    assert all(_equal(batch, alone[4 + k]) for k, batch in enumerate(steps.batches(handed)))
    last = steps[len(alone) - 2]  # the last item: the two steps left
    assert len(last) == 2 and _equal(list(steps.batches(last))[-1], alone[-1])


def test_a_worker_hands_over_about_item_bytes_of_windows_at_a_time(prefixes, tmp_path, monkeypatch):
    """An item holds the windows of as many steps as fit in ITEM_BYTES (at least one, at most STEPS_PER_ITEM),
    so a batch that is one item's worth alone crosses alone, and workers with such items give the same batches."""
    from helpers.loading import loader as loading

    arguments = dict(data_path=[prefixes["literature"]], split="100,0,0", seq_length=32, batch_size=4, seed=5,
                     cache_dir=tmp_path / "cache")
    alone = list(make_dataloader(**arguments))
    step_bytes = 4 * 33 * IndexedDataset(prefixes["literature"]).dtype.itemsize
    for item_bytes, per_item in ((step_bytes - 1, 1), (2 * step_bytes + 1, 2), (100 * step_bytes, STEPS_PER_ITEM)):
        monkeypatch.setattr(loading, "ITEM_BYTES", item_bytes)
        source = make_dataloader(**arguments).source
        assert loading._StepWindows(source, 4, 0, 1, items_ahead=3).per_item == per_item
        with_workers = list(make_dataloader(num_workers=2, **arguments))
        assert len(with_workers) == len(alone) and all(_equal(a, b) for a, b in zip(with_workers, alone))


@pytest.mark.parametrize("mixed", [False, True], ids=["one prefix", "blend"])
def test_a_large_batch_laid_out_as_it_is_gathered_equals_its_windows_laid_out(prefixes, tmp_path, mixed):
    """A batch the compiled loops pay for is laid out as each window is gathered, never written out as windows:
    the same four tensors as its windows laid out (the path of workers and of small batches), across an epoch's
    end, for one prefix and a blend, with positions reset and EOD's loss masked (numba loaded, as in a process past
    its first batches)."""
    from helpers.common.compiled import load_now

    load_now()
    data_path = _blend(prefixes) if mixed else [prefixes["literature"]]
    loader = make_dataloader(data_path, split="100,0,0", seq_length=2048, batch_size=32, num_samples=32 * 60,
                             seed=3, cache_dir=tmp_path, reset_position_ids=True, eod_mask_loss=True)
    source = loader.source
    per_epoch = min(order.per_epoch for order in source.orders)
    assert 32 * 60 > per_epoch, "the batches run into a second epoch"
    for step in (0, per_epoch // 32, len(loader) - 1):
        sample_ids = loader.steps.sample_ids(step)
        windows = source.windows(sample_ids).copy()
        assert _equal(source.batch(sample_ids), source.finish(windows))


def test_a_blends_batch_in_one_compiled_loop_equals_its_datasets_laid_out_one_by_one(prefixes, tmp_path):
    """A blend's batch goes through one compiled loop over its datasets, from the epochs the last batch used or
    those its rows fall in; where a dataset's rows span two epochs (the small one's, often) the loop refuses,
    writing nothing, and the rows are laid out dataset by dataset. The run meets both, and both give the batch
    of its windows laid out."""
    from helpers.common.compiled import load_now
    from helpers.loading.sources import rows_by_dataset

    load_now()
    loader = make_dataloader(["0.9", prefixes["literature"], "0.1", prefixes["docs"]], split="100,0,0", seq_length=128,
                             batch_size=512, num_samples=512 * 12, seed=3, cache_dir=tmp_path, eod_mask_loss=True)
    source = loader.source
    together = apart = 0
    for step in range(len(loader)):
        sample_ids = loader.steps.sample_ids(step)
        registry, numbers = source.mix.of(sample_ids)
        columns = source.mix.column_of(registry)
        one_loop = np.full((4, sample_ids.size, 128), -5, dtype=np.int64)
        if source._laid_out_together(columns, numbers, one_loop):
            together += 1
            by_dataset = np.zeros_like(one_loop)
            for k, rows in rows_by_dataset(columns, len(source.orders)):
                source.orders[k].lay_out(numbers[rows], rows, by_dataset)
            assert np.array_equal(one_loop, by_dataset)
        else:
            apart += 1
            assert (one_loop == -5).all()
        assert _equal(source.batch(sample_ids), source.finish(source.windows(sample_ids).copy()))
    assert together and apart, (together, apart)


def test_a_blend_of_indices_read_from_the_cache_and_built_now_is_laid_out_in_one_loop(prefixes, tmp_path):
    """Indices read from the cache are mapped read-only and those built in this process are not, which numba counts
    as two types (a tuple of both cannot be indexed by a number): the one loop takes read-only views of all."""
    from helpers.common.compiled import load_now

    load_now()
    make_dataloader([prefixes["literature"]], split="100,0,0", seq_length=128, batch_size=512, cache_dir=tmp_path)
    loader = make_dataloader(["0.9", prefixes["literature"], "0.1", prefixes["docs"]], split="100,0,0",
                             seq_length=128, batch_size=512, num_samples=1024, cache_dir=tmp_path)
    source = loader.source
    flags = [order.epoch(0).shuffle_index.flags.writeable for order in source.orders]
    assert flags == [False, True], "literature's indices come from the cache, docs' are built"
    for step in range(len(loader)):
        sample_ids = loader.steps.sample_ids(step)
        assert _equal(source.batch(sample_ids), source.finish(source.windows(sample_ids).copy()))
    assert source._blend_layout.arguments is not None


@pytest.mark.parametrize("weighted, schedule", [(True, None), (False, None), (False, [(0, [0.5, 0.5])])])
def test_a_blend_of_prefixes_made_by_two_tokenizers_is_refused_in_one_line(prefixes, tmp_path, corpus_dir, weighted,
                                                                            schedule):
    """Ids of two tokenizers mean different tokens, and the EOD id of one is an ordinary id of the other: a blend,
    weighted, by size or scheduled, of Llama 3's prefix and the bytes tokenizer's is refused, naming both."""
    lines = (corpus_dir / "docs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:5]
    (tmp_path / "docs.jsonl").write_text("".join(lines), encoding="utf-8")
    small = preprocess(tmp_path / "docs.jsonl", tmp_path / "bytes", "bytes", append_eod=True,
                       progress=False).outputs["text"]
    data_path = ["0.5", prefixes["literature"], "0.5", small] if weighted else [prefixes["literature"], small]
    with pytest.raises(UserError, match=rf"^{re.escape(str(small))}: tokenized with bytes, but .* with llama3, .*; "
                                        "fix: preprocess every prefix of the blend with one tokenizer$"):
        make_dataloader(data_path, split="100,0,0", seq_length=32, batch_size=2, schedule=schedule,
                        cache_dir=tmp_path)


def test_datasets_whose_tokens_differ_in_dtype_are_not_laid_out_in_one_loop(prefixes, tmp_path, corpus_dir):
    """numba indexes a tuple of arrays by a number only when they share a type: Llama 3's int32 tokens beside the
    bytes tokenizer's uint16 ones are refused (nothing written), and the batch is laid out dataset by dataset."""
    from helpers.datasets.blend_layout import BlendLayout

    lines = (corpus_dir / "docs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:5]
    (tmp_path / "docs.jsonl").write_text("".join(lines), encoding="utf-8")
    small = preprocess(tmp_path / "docs.jsonl", tmp_path / "bytes", "bytes", append_eod=True,
                       progress=False).outputs["text"]
    datasets = [make_dataloader([prefix], split="100,0,0", seq_length=32, batch_size=2, seed=5,
                                cache_dir=tmp_path).source.orders[0].epoch(0) for prefix in (prefixes["docs"], small)]
    assert datasets[0].dataset.tokens.dtype != datasets[1].dataset.tokens.dtype
    layout = BlendLayout(datasets, starts=np.zeros(2, dtype=np.int64))
    block = np.full((4, 2, 32), -5, dtype=np.int64)
    assert layout.arguments is None and not layout.lay_out(np.array([0, 1]), np.array([0, 0]), block)
    assert (block == -5).all()


@pytest.mark.parametrize("options, says", [({"num_workers": -1}, "num_workers"), ({"num_workers": 2.0}, "num_workers"),
                                           ({"num_workers": 2, "prefetch_factor": 0}, "prefetch_factor"),
                                           ({"num_workers": 2, "prefetch_factor": -1}, "prefetch_factor")])
def test_workers_and_prefetch_out_of_range_are_one_line(prefixes, options, says):
    with pytest.raises(UserError, match=f"^{says} must be a whole number.*; fix: "):
        make_dataloader([prefixes["literature"]], seq_length=64, batch_size=4, num_samples=40, cache_dir=None,
                        **options)
