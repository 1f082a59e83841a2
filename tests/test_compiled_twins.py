"""Each compiled loop and its numpy or Python twin (`helpers.common.compiled`) give the same arrays: the sample
index, the gather of token windows, the batch layout, the blending index and a schedule's choice, on random inputs
with their edge cases (empty and one-token documents, starts past the stream's end, no EOD, ties of weights)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.common.compiled import BATCH_TOKENS, GREEDY_SAMPLES, SAMPLE_INDEX_ENTRIES, compiled_pays, load_now
from helpers.common.paths import REPO_ROOT
from helpers.datasets import gpt_dataset, greedy, layout
from helpers.loading import schedule

FEW = settings(max_examples=60, deadline=None)


@FEW
@given(lengths=st.lists(st.integers(0, 40), min_size=1, max_size=30), seq_length=st.integers(1, 50),
       epochs=st.integers(1, 3), seed=st.integers(0, 2**16), beyond=st.integers(0, 3))
def test_the_sample_index(lengths, seq_length, epochs, seed, beyond):
    lengths = np.array(lengths, dtype=np.int32)
    documents = np.random.RandomState(seed).permutation(np.tile(np.arange(lengths.size, dtype=np.int32), epochs))
    samples = max(int(lengths.sum()) * epochs - 1, 0) // seq_length + beyond  # `beyond`: starts past the end
    compiled = gpt_dataset._sample_starts(lengths, documents, seq_length, samples)
    twin = gpt_dataset._sample_starts_numpy(lengths, documents, seq_length, samples)
    np.testing.assert_array_equal(twin, compiled)


def stream(seed: int, documents: int):
    """A `.bin` of `documents` documents (some empty, some of one token) of small ids, with its index."""
    rng = np.random.default_rng(seed)
    lengths = rng.choice([0, 1, 2, 5, 17, 60], size=documents).astype(np.int32)
    tokens = rng.integers(0, 9, size=int(lengths.sum()) + 1).astype(np.uint16)
    pointers = np.concatenate([[0], np.cumsum(lengths[:-1], dtype=np.int64)]) * tokens.itemsize
    return tokens, lengths, pointers


@FEW
@given(seed=st.integers(0, 2**16), documents=st.integers(1, 25), seq_length=st.integers(1, 40),
       rows=st.integers(1, 6))
def test_the_gather_of_windows(seed, documents, seq_length, rows):
    tokens, lengths, pointers = stream(seed, documents)
    if lengths.sum() < seq_length + 1:
        lengths[0] += seq_length + 1  # at least one whole window
        tokens = np.resize(tokens, int(lengths.sum()) + 1)
        pointers = np.concatenate([[0], np.cumsum(lengths[:-1], dtype=np.int64)]) * tokens.itemsize
    order = np.random.RandomState(seed).permutation(documents).astype(np.int32)
    count = (int(lengths.sum()) - 1) // seq_length
    index = gpt_dataset._sample_starts(lengths, order, seq_length, count)
    samples = np.random.default_rng(seed).integers(0, count, size=rows)
    indices = (index, order, lengths, pointers, tokens.itemsize)
    compiled, twin = (np.full((rows, seq_length + 1), -1, dtype=np.int64) for _ in range(2))
    gpt_dataset._gather_windows(tokens, samples, indices, compiled)
    gpt_dataset._gather_windows_numpy(tokens, samples, indices, twin)
    np.testing.assert_array_equal(twin, compiled)


@FEW
@given(seed=st.integers(0, 2**16), rows=st.integers(1, 5), width=st.integers(1, 30),
       dtype=st.sampled_from([np.uint16, np.int32, np.int64]), eod=st.sampled_from([-1, 0, 3]),
       reset=st.booleans(), mask=st.booleans())
def test_the_batch_layout(seed, rows, width, dtype, eod, reset, mask):
    windows = np.random.default_rng(seed).integers(0, 5, size=(rows, width + 1)).astype(dtype)
    compiled, twin = (np.full((4, rows, width), -7, dtype=np.int64) for _ in range(2))
    layout._fill_layout(windows, eod, reset, mask, compiled)
    layout._fill_layout_numpy(windows, eod, reset, mask, twin)
    np.testing.assert_array_equal(twin, compiled)


@FEW
@given(seed=st.integers(0, 2**16), documents=st.integers(1, 25), seq_length=st.integers(1, 40),
       rows=st.integers(1, 6), eod=st.sampled_from([-1, 0, 3]), reset=st.booleans(), mask=st.booleans())
def test_the_gather_and_layout_in_one_go(seed, documents, seq_length, rows, eod, reset, mask):
    """`_gather_layout` (each window laid out as it is gathered, into rows in any order) gives what the twins of
    the gather and of the layout give one after the other."""
    tokens, lengths, pointers = stream(seed, documents)
    if lengths.sum() < seq_length + 1:
        lengths[0] += seq_length + 1
        tokens = np.resize(tokens, int(lengths.sum()) + 1)
        pointers = np.concatenate([[0], np.cumsum(lengths[:-1], dtype=np.int64)]) * tokens.itemsize
    order = np.random.RandomState(seed).permutation(documents).astype(np.int32)
    count = (int(lengths.sum()) - 1) // seq_length
    indices = (gpt_dataset._sample_starts(lengths, order, seq_length, count), order, lengths, pointers,
               tokens.itemsize)
    rng = np.random.default_rng(seed)
    samples, places = rng.integers(0, count, size=rows), rng.permutation(rows)
    windows = np.empty((rows, seq_length + 1), dtype=np.int64)
    gpt_dataset._gather_windows_numpy(tokens, samples, indices, windows)
    twin, compiled = (np.full((4, rows, seq_length), -7, dtype=np.int64) for _ in range(2))
    layout._fill_layout_numpy(windows, eod, reset, mask, twin)
    order = rng.permutation(count).astype(np.uint32)  # a shuffle, looked up by the loop
    assert gpt_dataset._gather_layout(tokens, order, np.argsort(order)[samples], rows=places, indices=indices,
                                      layout=(eod, reset, mask), out=compiled) == -1
    np.testing.assert_array_equal(twin, compiled[:, places])
    assert gpt_dataset._gather_layout(tokens, order, np.array([0, count, -1]), rows=places[:3], indices=indices,
                                      layout=(eod, reset, mask), out=compiled) == 1, "the first sample out of range"


weights = st.lists(st.sampled_from([0.0, 0.1, 0.25, 1 / 3, 0.5, 1.0]), min_size=1, max_size=4).filter(
    lambda w: sum(w) > 0)


@FEW
@given(shares=weights, size=st.integers(0, 300), limited=st.booleans(), seed=st.integers(0, 2**16))
def test_the_blending_index(shares, size, limited, seed):
    shares = np.array(shares) / sum(shares)
    limits = (np.random.default_rng(seed).integers(0, size + 1, size=shares.size) if limited
              else np.full(shares.size, np.iinfo(np.int64).max))
    starts = np.zeros(1, dtype=np.int64)
    compiled = chosen(greedy.greedy_rule, starts, shares[None, :], [size], limits=limits[None, :])
    twin = chosen(greedy.greedy_rule_python, starts, shares[None, :], [size], limits=limits[None, :])
    for got, want in zip(twin, compiled):
        np.testing.assert_array_equal(got, want)


@FEW
@given(phases=st.lists(weights, min_size=1, max_size=4), total=st.integers(0, 300), data=st.data())
def test_a_schedules_choice(phases, total, data):
    width = max(map(len, phases))
    table = np.array([[*w, *[0.0] * (width - len(w))] for w in phases])
    table = table / table.sum(axis=1, keepdims=True)
    later = sorted(data.draw(st.lists(st.integers(0, max(total, 1)), min_size=len(phases) - 1,
                                      max_size=len(phases) - 1)))
    starts = np.array([0, *later], dtype=np.int64)
    cuts = sorted(data.draw(st.lists(st.integers(0, total), max_size=3)))  # the twin resumed where it stopped
    compiled = chosen(greedy.greedy_rule, starts, table, [total])
    twin = chosen(greedy.greedy_rule_python, starts, table, [*cuts, total])
    for got, want in zip(twin, compiled):
        np.testing.assert_array_equal(got, want)


def chosen(rule, starts, table, ends, limits=None):
    """(dataset, number) of samples 0..ends[-1] by `rule`, called once per stretch up to each of `ends`; no
    `limits`: a schedule's (a dataset of weight 0 never drawn)."""
    limits = np.where(table > 0, greedy.NO_LIMIT, 0) if limits is None else limits
    dataset, number = np.empty(ends[-1], dtype=np.int16), np.empty(ends[-1], dtype=np.int64)
    counts, base, segment = np.zeros(table.shape[1], np.int64), np.zeros(table.shape[1], np.int64), np.zeros(1, np.int64)
    begin = 0
    for end in ends:
        rule(starts, table, limits, begin=begin, end=end, dataset=dataset, number=number, counts=counts, base=base,
             segment=segment)
        begin = end
    return dataset, number


@pytest.mark.parametrize("work, threshold", [(SAMPLE_INDEX_ENTRIES, SAMPLE_INDEX_ENTRIES),
                                             (BATCH_TOKENS, BATCH_TOKENS), (GREEDY_SAMPLES, GREEDY_SAMPLES)])
def test_the_compiled_loop_runs_from_its_threshold_on(work, threshold):
    load_now()
    assert compiled_pays(work, threshold) and not compiled_pays(work - 1, threshold)


def test_a_new_process_lays_out_its_first_batches_with_the_twins_and_loads_numba_once_they_add_up():
    """Before numba is loaded, a batch of 32 rows of 2,049 is left to the twins until the twins' batch-sized work
    passes BATCH_START_UP_WORK; then it is compiled, and so is every batch once numba is loaded; one of 8 never is.
    In a process of its own, where nothing has loaded numba."""
    script = textwrap.dedent("""
        from helpers.common import compiled
        batch = 32 * 2049
        early = [compiled.compiled_pays(batch, compiled.BATCH_TOKENS) for _ in range(3)]
        assert early == [False] * 3 and not compiled._LOADED, early
        needed = compiled.BATCH_START_UP_WORK // batch
        later = [compiled.compiled_pays(batch, compiled.BATCH_TOKENS) for _ in range(needed)]
        assert later[-1] and not any(later[:needed - 4]), later.index(True)
        assert not compiled.compiled_pays(8 * 2049, compiled.BATCH_TOKENS)
        compiled.load_now()
        assert compiled._LOADED and compiled.compiled_pays(batch, compiled.BATCH_TOKENS)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr[-2000:]


@FEW
@given(phases=st.lists(st.integers(0, 3), min_size=1, max_size=4), total=st.integers(0, 300), data=st.data())
def test_a_schedule_of_one_dataset_per_phase_needs_no_rule(phases, total, data):
    table = np.zeros((len(phases), 4))
    table[np.arange(len(phases)), phases] = 1.0
    later = sorted(data.draw(st.lists(st.integers(0, max(total, 1)), min_size=len(phases) - 1,
                                      max_size=len(phases) - 1)))
    segments = [schedule.Segment(start, tuple(row)) for start, row in zip([0, *later], table.tolist())]
    compiled = chosen(greedy.greedy_rule, np.array([0, *later], dtype=np.int64), table, [total])
    for got, want in zip(schedule.choose(segments, total), compiled):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("rows, used, refused", [(32, "_gather_windows", "_gather_windows_numpy"),
                                                 (8, "_gather_windows_numpy", "_gather_windows")])
def test_a_mixed_batch_is_gathered_as_its_whole_size_decides(docs_bytes_prefix, monkeypatch, rows, used, refused):
    """32 rows of 2,049 tokens over two datasets: each dataset's share (about 16 rows) is gathered compiled, as the
    batch is (numba loaded, as in a process past its first batches); 8 rows are gathered by the twin. The other loop
    is made to fail, and the batch equals one without it."""
    from helpers.loading.loader import make_dataloader

    load_now()
    def mixed():
        return make_dataloader([docs_bytes_prefix, docs_bytes_prefix], schedule=[(0, [1, 1])], split="100,0,0",
                               seq_length=2048, batch_size=rows, num_samples=rows, seed=3, cache_dir=None)

    expected = mixed().batch_at(0)["input_ids"].clone()

    def refuse(*arguments):
        raise AssertionError(f"{refused} ran for a batch of {rows} rows")

    monkeypatch.setattr(gpt_dataset, refused, refuse)
    assert (mixed().batch_at(0)["input_ids"] == expected).all()


def test_a_long_streams_choice_is_made_as_it_is_read(monkeypatch):
    """A stream past GREEDY_SAMPLES: its first reads are chosen in Python, only as far as they reach (the compiled
    loop made to fail meanwhile), the first read past PYTHON_SAMPLES chooses all the rest compiled; the arrays are
    one compiled call's. A short stream is chosen whole, in Python, at its first read."""
    segments = [schedule.Segment(0, (0.5, 0.3, 0.2)), schedule.Segment(30_000, (0.1, 0.0, 0.9))]
    starts = np.array([s.start for s in segments], dtype=np.int64)
    table = np.array([s.weights for s in segments])
    total = GREEDY_SAMPLES + 10
    want = chosen(greedy.greedy_rule, starts, table, [total])
    choice = schedule.Choice(segments, total)

    def refused(*args):
        raise AssertionError("the compiled loop ran")

    with monkeypatch.context() as patched:
        patched.setattr(greedy, "greedy_rule", refused)
        choice.of(np.arange(8))
        assert choice.made == 8
        choice.of(np.arange(8, schedule.Choice.PYTHON_SAMPLES))
        assert choice.made == schedule.Choice.PYTHON_SAMPLES
    choice.of([schedule.Choice.PYTHON_SAMPLES])
    assert choice.made == total
    for got, expected in zip(choice.prefix(total), want):
        np.testing.assert_array_equal(got, expected)
    short = schedule.Choice(segments, GREEDY_SAMPLES - 1)
    with monkeypatch.context() as patched:
        patched.setattr(greedy, "greedy_rule", refused)
        short.of([0])
    assert short.made == GREEDY_SAMPLES - 1


WORDS = st.lists(st.sampled_from(["a", "b", "ab", "c", "bc", "abc", "é", "日本", "x" * 7, "\ud800", "b\udfff"]),
                 max_size=80)  # lone surrogates, as a JSON escape can bring them


@FEW
@given(words=WORDS)
def test_gopher_s_n_gram_measures(words):
    """Both joins matter: ("ab", "c") repeats ("a", "bc") without spaces, never with them."""
    from helpers.clean.text import ngrams

    grams = ngrams.Grams(words)
    for n in (2, 3, 4):
        if len(words) >= n:
            bare, starts, spaced, spaced_starts = grams.compiled()
            assert ngrams._measure(spaced.codes, spaced.prefix, spaced.inverse, starts=spaced_starts, n=n,
                                   top=True) == ngrams.top_characters_python(words, n)
    for n in range(1, 11):
        bare, starts, _, _ = grams.compiled()
        assert ngrams._measure(bare.codes, bare.prefix, bare.inverse, starts=starts, n=n,
                               top=False) == ngrams.repeated_characters_python(words, n)


def test_n_gram_keys_that_collide_are_measured_again_exactly(monkeypatch):
    """Were every key the same, the compiled loops would find different n-grams under one key and hand the
    document to the twin."""
    from helpers.clean.text import ngrams

    words = ["to", "be", "or", "not", "to", "be"] * 30 + ["that", "is", "the", "question"] * 20
    expected = [ngrams.top_characters_python(words, 2), ngrams.repeated_characters_python(words, 5)]
    real = ngrams._Text.of
    monkeypatch.setattr(ngrams._Text, "of", classmethod(lambda cls, codes: cls(codes, real(codes).prefix * 0,
                                                                                real(codes).inverse)))
    grams = ngrams.Grams(words)
    bare, starts, _, _ = grams.compiled()
    assert ngrams._measure(bare.codes, bare.prefix, bare.inverse, starts=starts, n=5, top=False) == -1
    assert [grams.top_characters(2), grams.repeated_characters(5)] == expected


def test_the_loops_cache_is_kept_per_version_of_every_module_that_holds_a_loop(tmp_path):
    """numba checks a cached loop's own file only: a loop compiled with another file's loop in it (a blend's layout
    with `gather_row`) would keep the old one after a change to that file. The cache folder is named by a digest
    of every module with a loop, so a change to any of them gives a new one; a module without a loop counts not."""
    from helpers.common import compiled

    package = tmp_path / "package"
    (package / "sub").mkdir(parents=True)
    (package / "sub" / "calls.py").write_text("@jit(cache=True)\ndef outer(x):\n    return inner(x)\n")
    (package / "loops.py").write_text("@jit(cache=True)\ndef inner(x):\n    return x\n")
    (package / "plain.py").write_text("def helper():\n    return 1\n")
    first = compiled.loops_digest.__wrapped__(package)
    (package / "plain.py").write_text("def helper():\n    return 2\n")
    assert compiled.loops_digest.__wrapped__(package) == first
    (package / "loops.py").write_text("@jit(cache=True)\ndef inner(x):\n    return x + 1\n")
    assert compiled.loops_digest.__wrapped__(package) != first
    load_now()  # the package's loops made: each one's cache in the folder of this version
    dispatcher = compiled._nothing if not isinstance(compiled._nothing, compiled.LazyJit) else \
        compiled._nothing.dispatcher
    assert f"numba-{compiled.loops_digest()}" in dispatcher._cache.cache_path
    from numba.core import config
    assert f"numba-{compiled.loops_digest()}" not in str(config.CACHE_DIR)  # numba's own setting left as it was
