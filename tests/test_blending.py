"""GPT samples and blends: sample for sample equal to megatron-core 0.16.1's builder, and clear errors."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from megatron_reference import core, megatron_build

from helpers.common.errors import UserError
from helpers.datasets import gpt_dataset
from helpers.datasets.blending import (
    blending_indices,
    build_datasets,
    load_blend_file,
    parse_data_path,
    sizes_per_dataset,
)
from helpers.datasets.gpt_dataset import GPTDataset, split_ranges
from helpers.datasets.layout import BATCH_KEYS, IGNORE_INDEX, attention_mask, from_windows, loss_mask
from helpers.preprocess import preprocess

EOD = 128001


@pytest.fixture(scope="module")
def prefixes(tmp_path_factory, corpus_dir):
    """Three small llama3 datasets from the corpus, of very different sizes."""
    folder = tmp_path_factory.mktemp("blend")
    out = {}
    for domain, count in (("literature", 60), ("docs", 20), ("code", 20)):
        lines = (corpus_dir / f"{domain}.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:count]
        (folder / f"{domain}.jsonl").write_text("".join(lines), encoding="utf-8")
        out[domain] = preprocess(folder / f"{domain}.jsonl", folder / domain, "llama3", append_eod=True,
                                 progress=False).outputs["text"]
    return out


def assert_same_samples(ours, theirs):
    """Our layout against Megatron's: input_ids = tokens, labels at -100 where loss_mask is 0, same positions;
    samples one at a time and gathered as one batch agree."""
    assert (ours is None) == (theirs is None)
    if ours is None:
        return
    assert len(ours) == len(theirs)
    batch = ours.batch(np.arange(len(ours)))
    for i in range(len(ours)):
        a, b = ours[i], theirs[i]
        assert torch.equal(a["input_ids"], b["tokens"].long()), i
        expected_labels = torch.where(b["loss_mask"] > 0, b["labels"].long(), torch.tensor(IGNORE_INDEX))
        assert torch.equal(a["labels"], expected_labels), i
        assert torch.equal(a["position_ids"], b["position_ids"].long()), i
        assert torch.equal(loss_mask(a["labels"]), b["loss_mask"]), i
        for key in BATCH_KEYS:
            assert torch.equal(batch[key][i], a[key]), (i, key)
        if "dataset_id" in b:
            assert a["dataset_id"] == int(b["dataset_id"])


@pytest.mark.parametrize("split, sizes", [("90,8,2", (300, 20, 3)), ("90,10,0", (None, None, None)),
                                          ("100,0,0", (5_000, None, None))])
def test_single_prefix_equals_megatron(prefixes, split, sizes):
    data_path = [prefixes["literature"]]
    ours = build_datasets(data_path, split, sizes, 64, 1234)
    theirs = megatron_build(data_path, split, sizes, 64, 1234)
    for a, b in zip(ours, theirs):
        assert_same_samples(a, b)
        if a is not None:
            np.testing.assert_array_equal(a.document_index, b.document_index)
            np.testing.assert_array_equal(a.sample_index, b.sample_index)
            np.testing.assert_array_equal(a.shuffle_index, b.shuffle_index)


def test_many_epochs_and_the_separate_final_epoch_equal_megatron(prefixes):
    # docs is small: 4,000 samples of 32 tokens take several epochs of it
    for samples in (4_000, 3_300):
        ours = build_datasets([prefixes["docs"]], "100,0,0", (samples, None, None), 32, 7)[0]
        theirs = megatron_build([prefixes["docs"]], "100,0,0", (samples, None, None), 32, 7)[0]
        assert ours.epochs > 2
        np.testing.assert_array_equal(ours.document_index, theirs.document_index)
        np.testing.assert_array_equal(ours.shuffle_index, theirs.shuffle_index)
        assert_same_samples(ours, theirs)


@pytest.mark.parametrize("weights", [("0.5", "0.3", "0.2"), ("30", "60", "10"), ("1", "1", "1")])
def test_weighted_blend_equals_megatron(prefixes, weights):
    data_path = [x for w, p in zip(weights, prefixes.values()) for x in (w, p)]
    ours = build_datasets(data_path, "80,15,5", (400, 40, 4), 64, 99)
    theirs = megatron_build(data_path, "80,15,5", (400, 40, 4), 64, 99)
    for a, b in zip(ours, theirs):
        assert_same_samples(a, b)
        np.testing.assert_array_equal(a.dataset_index, b.dataset_index)
        np.testing.assert_array_equal(a.dataset_sample_index, b.dataset_sample_index)


def test_prefixes_only_blend_equals_megatron(prefixes):
    data_path = list(prefixes.values())
    for sizes in ((None, None, None), (200, None, 5)):
        ours = build_datasets(data_path, "75,15,10", sizes, 64, 3)
        theirs = megatron_build(data_path, "75,15,10", sizes, 64, 3)
        for a, b in zip(ours, theirs):
            assert_same_samples(a, b)


def test_per_split_blends_equal_megatron(prefixes, tmp_path):
    blend_file = tmp_path / "blend.yaml"
    blend_file.write_text(f"train: [0.7, {prefixes['literature']}, 0.3, {prefixes['code']}]\n"
                          f"valid: {{{prefixes['docs']}: 1.0}}\n")
    blends = load_blend_file(blend_file)
    assert blends["test"] is None
    ours = build_datasets(None, None, (300, 30, None), 64, 5, blend_per_split=blends)
    theirs = megatron_build(None, None, (300, 30, None), 64, 5, blend_per_split=[
        ["0.7", prefixes["literature"], "0.3", prefixes["code"]], ["1.0", prefixes["docs"]], None])
    for a, b in zip(ours, theirs):
        assert_same_samples(a, b)


def test_document_aware_variants_equal_megatron(prefixes):
    options = {"reset_position_ids": True, "eod_mask_loss": True}
    ours = build_datasets([prefixes["docs"]], "100,0,0", (50, None, None), 128, 11, eod_id=EOD, **options)[0]
    theirs = megatron_build([prefixes["docs"]], "100,0,0", (50, None, None), 128, 11, reset_attention_mask=True,
                            **options)[0]
    assert_same_samples(ours, theirs)
    for i in range(len(ours)):  # Megatron's mask says True = masked; ours, derived from document_ids, the opposite
        assert torch.equal(~attention_mask(ours[i]["document_ids"][None])[0], theirs[i]["attention_mask"])
    assert any((ours[i]["input_ids"] == EOD).any() for i in range(len(ours)))  # boundaries were exercised


def test_layout_equals_megatron_masks_on_random_rows():
    rng = np.random.default_rng(0)
    for _ in range(50):
        window = rng.choice([1, 2, 3, EOD], size=41, p=[0.3, 0.3, 0.3, 0.1])
        ours = from_windows(window, EOD, reset_position_ids=True, eod_mask_loss=True)
        tokens = torch.from_numpy(window[:-1])
        attention, loss, positions = core().ltor_masks(tokens, EOD, True, True, True, True)
        assert torch.equal(~attention_mask(ours["document_ids"]), attention.unsqueeze(0))
        assert torch.equal(loss_mask(ours["labels"][0]), loss) and torch.equal(ours["position_ids"][0], positions)


@pytest.mark.parametrize("weights", [[0.5, 0.3, 0.2], [0.999, 0.001], [1 / 3] * 3, [0.1] * 10])
def test_blending_index_equals_megatron_helper(weights):
    size = 20_000
    ours = blending_indices(weights, size)
    index, sample = np.zeros(size, np.int16), np.zeros(size, np.int64)
    core().helpers.build_blending_indices(index, sample, np.array(weights, np.float64) / sum(weights),
                                          len(weights), size, False)
    np.testing.assert_array_equal(ours[0], index)
    np.testing.assert_array_equal(ours[1], sample)


def test_sizes_have_megatron_surplus():
    assert sizes_per_dataset([0.5, 0.3, 0.2], 1000) == [500, 300, 200]
    assert sizes_per_dataset([0.5, 0.3, 0.2], 1000, 0.005) == [503, 302, 201]


def test_split_uses_python_rounding():
    assert split_ranges("969,30,1", 1000) == [(0, 969), (969, 999), (999, 1000)]
    assert split_ranges("98,2,0", 50) == [(0, 49), (49, 50), None]
    assert split_ranges("1,1", 3) == [(0, 2), (2, 3), None]  # round(1.5) == 2


@pytest.mark.parametrize("items, message", [
    (["-0.5", "a", "1.5", "b"], "non-negative"),
    (["0", "a", "0", "b"], "sum to 0"),
    (["0.5", "a", "0.3"], "pairs"),
    (["0.5", "0.3", "b", "c"], "a weight"),
])
def test_bad_data_paths_are_clear(prefixes, items, message):
    items = [prefixes["docs"] if x in ("a", "b", "c") else x for x in items]
    with pytest.raises(UserError, match=message):
        parse_data_path(items)


def test_missing_prefix_names_the_file(tmp_path):
    with pytest.raises(UserError, match="not found; fix: make it with python -m helpers.preprocess") as err:
        parse_data_path(["0.5", str(tmp_path / "nope"), "0.5", str(tmp_path / "nada")])
    assert isinstance(err.value, FileNotFoundError) and str(tmp_path / "nope") in str(err.value)


def test_a_split_without_sequences_raises_instead_of_hanging(prefixes):
    # docs has 20 sequences: a 1% validation share rounds to none of them
    with pytest.raises(UserError, match="valid split gets sequences") as err:
        build_datasets([prefixes["docs"]], "99,1,0", (100, 10, None), 64, 1)
    assert "fix:" in str(err.value)


def test_cache_is_keyed_by_the_data_files(prefixes, tmp_path):
    import shutil

    from helpers.datasets.indexed import bin_path, idx_path

    copy = tmp_path / "copy"
    for path in (bin_path, idx_path):
        shutil.copyfile(path(prefixes["docs"]), path(copy))
    config = gpt_dataset.GPTDatasetConfig(32, 1, cache_dir=str(tmp_path / "cache"))
    first = GPTDataset(copy, (0, 20), 100, config)
    again = GPTDataset(copy, (0, 20), 100, config)
    assert len(list((tmp_path / "cache").iterdir())) == 1
    np.testing.assert_array_equal(first.sample_index, again.sample_index)
    for path in (bin_path, idx_path):  # same name, other content: the stale indices must not be used
        shutil.copyfile(path(prefixes["literature"]), path(copy))
    changed = GPTDataset(copy, (0, 20), 100, config)
    assert len(list((tmp_path / "cache").iterdir())) == 2
    assert not np.array_equal(changed.sample_index, first.sample_index) or changed.tokens_per_epoch != first.tokens_per_epoch


def test_bad_blend_file_names_the_line(tmp_path):
    path = tmp_path / "blend.yaml"
    path.write_text("train: [0.5, a\nvalid: [\n")
    with pytest.raises(UserError, match=rf"{path}:\d+: not valid YAML/JSON.*fix:"):
        load_blend_file(path)
    with pytest.raises(UserError, match="no such blend file"):
        load_blend_file(tmp_path / "absent.yaml")


def tiny_prefix(path, lengths):
    """A small int32 dataset whose documents have these lengths (tokens 1, 2, 3, ...)."""
    from helpers.datasets.indexed import IndexedWriter

    with IndexedWriter(path, np.int32) as writer:
        for n in lengths:
            writer.add_document(np.arange(1, n + 1))
        writer.finalize()
    return str(path)


def assert_empty(dataset, seq_length):
    assert len(dataset) == 0
    batch = dataset.batch(np.arange(0))
    assert set(batch) >= set(BATCH_KEYS)
    assert all(batch[key].shape == (0, seq_length) for key in BATCH_KEYS)
    with pytest.raises(IndexError):
        dataset[0]


def test_no_samples_of_an_empty_split_is_an_empty_dataset(tmp_path):
    # four documents: the 1% validation share rounds to none of them, and the advice is to ask for none
    prefix = tiny_prefix(tmp_path / "four", [5, 7, 3, 9])
    with pytest.raises(UserError, match="ask for no samples"):
        build_datasets([prefix], "99,1,0", (10, 10, None), 4, 1)
    train, valid, test = build_datasets([prefix], "99,1,0", (10, 0, None), 4, 1)
    assert len(train) >= 10 and test is None
    assert_empty(valid, 4)
    for cache_dir in (None, tmp_path / "cache"):  # built, then saved and loaded from the cache
        for _ in range(2):
            direct = GPTDataset(prefix, (4, 4), 0, gpt_dataset.GPTDatasetConfig(4, cache_dir=cache_dir and str(cache_dir)),
                                split_name="valid")
            assert_empty(direct, 4)


def test_a_weight_zero_prefix_with_an_empty_split_is_left_out(tmp_path):
    big = tiny_prefix(tmp_path / "big", [5, 7, 3, 9, 4, 4, 4, 4, 4, 4])
    small = tiny_prefix(tmp_path / "small", [5, 7, 3, 9])  # its 10% validation share is empty
    train, valid, _ = build_datasets(["1", big, "0", small], "90,10,0", (10, 5, None), 4, 1)
    assert len(valid) == 5 and set(valid.dataset_index.tolist()) == {0}
    assert len(valid.datasets[1]) == 0
    assert valid.batch(np.arange(5))["input_ids"].shape == (5, 4)


def test_a_weight_zero_prefix_with_an_empty_split_is_left_out_of_packed_rows(tmp_path):
    from helpers.loading.loader import make_dataloader

    big = tiny_prefix(tmp_path / "big", [5, 7, 3, 9, 4, 4, 4, 4, 4, 4])
    small = tiny_prefix(tmp_path / "small", [5, 7, 3, 9])  # its 10% validation share is empty
    loader = make_dataloader(["1", big, "0", small], split="90,10,0", split_name="valid", seq_length=8,
                             batch_size=2, num_samples=4, packing="best_fit_decreasing", tokenizer="bytes", cache_dir=None)
    batches = list(loader)
    assert sum(len(b["input_ids"]) for b in batches) == 4
    with pytest.raises(UserError, match="valid split of --split 90,10,0 holds no document"):
        make_dataloader(["1", big, "1", small], split="90,10,0", split_name="valid", seq_length=8, batch_size=2,
                        num_samples=4, packing="best_fit_decreasing", tokenizer="bytes", cache_dir=None)


# Split strings megatron-core reads as written: ours must read them the same, to the last bit.
SPLITS_READ_AS_WRITTEN = ["969,30,1", "90,10,0", "100", "100,0,0", "1,1", "0,0,1", "98,2", "1.5,1", ".5,.5",
                          "5.,1", "0.969,0.03,0.001", "90, 10, 0", " 98 ,2 ", "007,3", "949/50/1", "1/1"]
# Split strings megatron-core refuses (an exception, or NaN shares that fail later).
SPLITS_MEGATRON_REFUSES = ["", "0", "0,0,0", "abc", "1.2.3,1", ".,1", "1,2,3,4", "90,10,0,0", ",,,"]
# Split strings megatron-core reads as another string says (it keeps only the runs of digits and dots):
# refused here, since what it would use is not what was written.
SPLITS_MEGATRON_MISREADS = {"-5,10,1": "5,10,1", "90,,10": "90,10", "1e3,1": "1,3,1", "nan,1": "1", "inf,5": "5",
                            "5-1": "5,1", "90;10": "90,10", "90 10 0": "90,10,0", "1,1,1,": "1,1,1",
                            "90/10,0": "90,10,0", "\uff11,1": "1", "+5,1": "5,1"}


def megatron_split(split):
    """megatron-core's reading of a split string: its fractions and book-ends, or None where it refuses in
    one of the three ways it is known to (a part that is no number, more than three parts, shares that
    normalise to NaN). Any other error (an API change) fails the test instead of passing for a refusal."""
    from megatron.core.datasets.blended_megatron_dataset_config import (
        convert_split_vector_to_split_matrix,
        parse_and_normalize_split,
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fractions = parse_and_normalize_split(split)
    except ValueError as err:
        assert "could not convert string to float" in str(err), err
        return None
    except AssertionError:
        assert len(re.findall(r"[.0-9]+", split)) > 3, f"megatron-core refused {split!r} for another reason"
        return None
    if any(np.isnan(fractions)):
        return None
    return fractions, convert_split_vector_to_split_matrix(fractions)


@pytest.mark.parametrize("split", SPLITS_READ_AS_WRITTEN)
def test_split_strings_are_read_as_megatron_reads_them(split):
    fractions, bookends = megatron_split(split)
    assert gpt_dataset.parse_split(split) == fractions
    assert gpt_dataset.split_bookends(split) == bookends


@pytest.mark.parametrize("split", SPLITS_MEGATRON_REFUSES + list(SPLITS_MEGATRON_MISREADS))
def test_split_strings_megatron_refuses_or_misreads_are_refused_in_one_line(split):
    if split in SPLITS_MEGATRON_MISREADS:  # what megatron-core would use instead of what is written
        assert megatron_split(split) == megatron_split(SPLITS_MEGATRON_MISREADS[split])
    else:
        assert megatron_split(split) is None
    with pytest.raises(UserError) as err:
        gpt_dataset.parse_split(split)
    message = str(err.value)
    assert f"'{split}'" in message and "fix:" in message and "\n" not in message


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=30), st.integers(1, 16), st.integers(0, 60), st.randoms())
def test_the_sample_index_is_where_each_sample_starts_in_the_stream(lengths, seq_length, num_samples, rng):
    """The one-pass build against its definition: sample k starts at token k x seq_length of the stream, in the
    entry whose tokens hold it (`searchsorted` on the entries' starts), past the end in the last entry."""
    sequence_lengths = np.array(lengths, dtype=np.int32)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    document_index = np.array(order, dtype=np.int32)
    starts = np.concatenate([[0], np.cumsum(sequence_lengths[document_index].astype(np.int64))])
    positions = np.arange(num_samples + 1, dtype=np.int64) * seq_length
    entry = np.minimum(np.searchsorted(starts, positions, side="right") - 1, document_index.size - 1)
    expected = np.stack([entry, positions - starts[entry]], axis=1)
    np.testing.assert_array_equal(gpt_dataset.build_sample_index(sequence_lengths, document_index, seq_length,
                                                                 num_samples), expected)
