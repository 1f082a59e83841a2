"""The blend-weights figures and the statistics behind them: lags, periods and token reads."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers.datasets.blend_stats import (  # noqa: E402
    first_repeat,
    greedy_lags,
    random_window_reads,
    read_summary,
    repeat_period,
    token_reads,
)
from helpers.datasets.blending import blending_indices, normalize  # noqa: E402
from helpers.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig  # noqa: E402
from helpers.datasets.indexed import IndexedWriter  # noqa: E402
from helpers.workshop.explore import blending as explore_blending  # noqa: E402

NAMES = ["literature", "docs", "code"]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture
def numbered(tmp_path):
    """Documents whose tokens are their own positions in the .bin: a token's value says where it is."""
    lengths = [5, 17, 3, 9, 12, 4, 30, 7, 2, 11]
    with IndexedWriter(tmp_path / "numbered", np.int32) as writer:
        start = 0
        for n in lengths:
            writer.add_document(np.arange(start, start + n))
            start += n
        writer.finalize()
    return tmp_path / "numbered", sum(lengths)


def test_lags_are_what_the_rule_compares_and_it_picks_the_largest():
    weights = [0.5, 0.3, 0.2]
    picks, lags = greedy_lags(weights, 40)
    assert np.array_equal(picks, blending_indices(normalize(weights), 40)[0])
    assert np.allclose(lags[0], weights)  # max(i, 1): step 0 compares w x 1
    assert np.array_equal(np.argmax(lags, axis=1), picks)  # no ties here
    assert np.allclose(lags[10], 0) and np.allclose(lags[20], 0)


@pytest.mark.parametrize("weights, period", [([0.5, 0.3, 0.2], 10), ([1, 1, 1], 3), ([3, 1], 4), ([0.45, 0.35, 0.2], None)])
def test_repeat_period(weights, period):
    assert repeat_period(blending_indices(normalize(weights), 1000)[0]) == period


def test_repeat_period_is_the_smallest_and_none_when_too_long():
    assert repeat_period(np.array([0, 1, 0, 1, 0, 1, 0])) == 2
    assert repeat_period(np.array([0, 1, 2, 0, 1, 2]), longest=2) is None
    assert repeat_period(np.array([0, 0, 1])) is None


@pytest.mark.parametrize("weights, repeat", [([0.5, 0.3, 0.2], (0, 10)), ([0.2, 0.6, 0.2], (2, 5)),
                                             ([0.3, 0.5, 0.2], (2, 10))])
def test_first_repeat_of_the_blend(weights, repeat):
    # the first pick sees lags w (max(i, 1)), so a heaviest source other than the first delays the repeat
    assert first_repeat(blending_indices(normalize(weights), 1000)[0], 100) == repeat


def test_first_repeat_is_the_earliest_start_then_the_smallest_period():
    assert first_repeat(np.array([2, 2, 0, 1, 0, 1, 0, 1, 0, 1])) == (2, 2)
    assert first_repeat(np.array([0, 1, 2, 0, 1, 2, 0, 1, 2])) == (0, 3)
    assert first_repeat(np.array([0, 1, 2, 3, 4, 5])) is None  # a period must be seen twice


@pytest.mark.parametrize("samples", [10, 40, 70])
def test_token_reads_counts_what_the_windows_hold(numbered, samples):
    prefix, total = numbered
    dataset = GPTDataset(prefix, (0, 10), samples, GPTDatasetConfig(8, seed=3))
    chosen = np.arange(0, len(dataset), 2)
    reads = token_reads(dataset, chosen)
    inputs = dataset.windows(chosen)[:, :-1]  # token value = its position in the .bin
    assert reads.size == total
    assert np.array_equal(reads, np.bincount(inputs.ravel(), minlength=total))


def test_token_reads_of_a_later_split_start_at_its_first_token(numbered):
    prefix, _ = numbered
    dataset = GPTDataset(prefix, (6, 10), None, GPTDatasetConfig(4, seed=1))
    reads = token_reads(dataset, np.arange(len(dataset)))
    first = int(dataset.dataset.sequence_pointers[6]) // 4
    inputs = dataset.windows(np.arange(len(dataset)))[:, :-1] - first
    assert reads.size == dataset.tokens_per_epoch
    assert np.array_equal(reads, np.bincount(inputs.ravel(), minlength=reads.size))


def test_random_windows_leave_about_one_over_e_unread_after_one_epoch():
    tokens, seq_length = 200_000, 50
    reads = random_window_reads(tokens, seq_length, tokens // seq_length, seed=0)
    assert reads.sum() == tokens  # every window reads seq_length tokens
    summary = read_summary(reads)
    assert summary["unread"] == pytest.approx(math.exp(-1), abs=0.02)
    assert summary["over"] > 0.2 and summary["max"] > 3


def test_read_summary_of_an_even_order():
    assert read_summary(np.array([2, 2, 3, 3])) == {"mean": 2.5, "unread": 0.0, "over": 0.0, "max": 3}
    assert read_summary(np.array([0, 1, 4, 3]))["over"] == pytest.approx(0.5)  # 4 and 3 exceed ceil(2)


@pytest.mark.parametrize("weights, said", [([0.5, 0.3, 0.2], "the order repeats every 10 samples"),
                                           ([0.3, 0.5, 0.2], "from sample 2 on, it repeats every 10 samples"),
                                           ([0.45, 0.35, 0.2], "no period up to 10 samples")])
def test_draw_order_labels_its_axes_and_names_the_period(weights, said):
    fig = explore_blending.draw_order(weights, NAMES, samples=25, longest_period=10)
    strip, lines = fig.axes[:2]
    assert lines.get_xlabel() == "blend sample i" and "lag" in lines.get_ylabel()
    assert len(lines.get_lines()) >= 3
    assert said in strip.get_title()
    assert len(strip.patches) == 25


def test_mean_reads_and_epochs_follow_the_weights():
    tokens = [2_000_000, 100_000, 1_000_000]
    reads, epochs = explore_blending.mean_reads([0.5, 0.3, 0.2], tokens, 4000, 256)
    assert reads == pytest.approx([2000 * 256 / 2e6, 1200 * 256 / 1e5, 800 * 256 / 1e6])
    assert epochs == [1, 4, 1]
    reads, epochs = explore_blending.mean_reads([0.2, 0.6, 0.2], tokens, 4000, 256)
    assert epochs[1] == 7 and reads[1] > 6


@pytest.mark.parametrize("weights", [[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
def test_draw_reads_one_bar_per_source(weights):
    fig = explore_blending.draw_reads(weights, NAMES, [2_000_000, 100_000, 1_000_000], 4000, 256)
    ax = fig.axes[0]
    assert ax.get_ylabel() == "reads per token (mean)"
    assert [t.get_text() for t in ax.get_xticklabels()] == NAMES
    heights = [p.get_height() for p in ax.patches]
    assert heights == pytest.approx(list(explore_blending.mean_reads(weights, [2_000_000, 100_000, 1_000_000],
                                                                     4000, 256)[0]))


def test_draw_unread_axes():
    fig = explore_blending.draw_unread([0.5, 1, 2], {"random": [0.6, 0.37, 0.14], "epoch": [0.5, 0, 0]}, "t")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "tokens drawn (epochs of the source)"
    assert ax.get_ylabel() == "share of tokens never read"
    assert len(ax.get_lines()) == 3


def test_explore_weights_headless_names_the_knobs(monkeypatch, capsys):
    monkeypatch.setenv("HELPERS_HEADLESS", "1")
    explore_blending.explore_weights(NAMES, [2_000_000, 100_000, 1_000_000], 4000, 256, [0.5, 0.3, 0.2])
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and all(name in out for name in NAMES)
    assert not plt.get_fignums()


def test_explore_weights_live_redraws_both_figures(monkeypatch):
    monkeypatch.delenv("HELPERS_HEADLESS", raising=False)
    shown = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    explore_blending.explore_weights(NAMES, [2_000_000, 100_000, 1_000_000], 4000, 256, [0.5, 0.3, 0.2])
    (widget,) = shown
    sliders = {child.description: child for child in widget.children[:-1]}
    assert set(sliders) == set(NAMES)
    plt.close("all")
    sliders["docs"].value = 0.6  # the callback redraws both figures with the new weights
    titles = [plt.figure(n).axes[0].get_title() for n in plt.get_fignums()]
    assert len(titles) == 2 and all("0.38/0.46/0.15" in t for t in titles)  # 0.6 / (0.5 + 0.6 + 0.2) = 0.46
