"""The cleaning figures of notebook 07: each draws on the Axes it is given, labelled, one idea each."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers.clean.text.lsh import candidate_probability  # noqa: E402
from helpers.workshop import plots  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture
def ax():
    return plt.subplots()[1]


def test_lsh_s_curve_draws_each_setting_and_marks_the_threshold(ax):
    settings = {"ours": (9, 13), "datatrove": (14, 8)}
    plots.lsh_s_curve(0.8, settings, "S-curve", ax=ax)
    curves, threshold = ax.lines[:2], ax.lines[2]
    assert [line.get_label() for line in curves] == ["ours: 9 bands x 13 rows", "datatrove: 14 bands x 8 rows"]
    for line, (bands, rows) in zip(curves, settings.values()):
        x, y = line.get_data()
        assert np.allclose(y, candidate_probability(x, bands, rows))
        assert np.all(np.diff(y) >= 0)  # more similar, more likely a candidate
    assert set(threshold.get_xdata()) == {0.8} and threshold.get_label() == "threshold 0.8"
    assert "Jaccard" in ax.get_xlabel() and "candidate" in ax.get_ylabel() and ax.get_title() == "S-curve"


def test_measured_recall_puts_each_steps_share_on_the_curve(ax):
    similarity = [0.71, 0.71, 0.79, 0.81, 0.81, 0.83, 0.95]
    removed = [False, False, False, True, False, True, True]
    plots.measured_recall(0.8, 14, 7, similarity, removed, "recall", ax=ax)
    curve, markers, threshold = ax.lines
    x, y = curve.get_data()
    assert np.allclose(y, candidate_probability(x, 14, 7))
    assert np.allclose(markers.get_xdata(), [0.71, 0.79, 0.81, 0.83, 0.95]) and list(markers.get_ydata()) == [
        0.0, 0.0, 0.5, 1.0, 1.0]
    assert set(threshold.get_xdata()) == {0.8} and "exact" in ax.get_xlabel() and ax.get_title() == "recall"


def test_estimate_vs_exact_draws_the_diagonal_the_band_and_one_scatter_per_estimator(ax):
    exact = np.array([0.0, 0.25, 0.5, 0.9])
    estimates = {"rensa": exact + 0.01, "datasketch": exact - 0.01}
    plots.estimate_vs_exact(exact, estimates, 128, "estimates", ax=ax)
    diagonal = next(line for line in ax.lines if line.get_label() == "estimate = exact")
    assert np.allclose(*diagonal.get_data())
    scatters = [c for c in ax.collections if c.get_label() in estimates]
    assert [c.get_label() for c in scatters] == ["rensa", "datasketch"]
    assert np.allclose(scatters[0].get_offsets(), np.column_stack([exact, exact + 0.01]))
    band = next(c for c in ax.collections if "standard errors" in c.get_label())
    assert "128 permutations" in band.get_label()
    assert "exact Jaccard" in ax.get_xlabel() and "estimate" in ax.get_ylabel()


def test_similarity_by_ngram_draws_one_line_per_preparation_and_the_threshold(ax):
    similarities = {"as written": [0.37, 0.26, 0.15], "normalised": [0.65, 0.51, 0.39]}
    plots.similarity_by_ngram([1, 2, 3], similarities, 0.8, "two editions", ax=ax)
    labelled = {line.get_label(): line for line in ax.lines}
    assert list(labelled.get("as written").get_ydata()) == similarities["as written"]
    assert list(labelled["normalised"].get_xdata()) == [1, 2, 3]
    assert set(labelled["dedup threshold 0.8"].get_ydata()) == {0.8}
    assert "shingle size" in ax.get_xlabel() and ax.get_ylabel() == "Jaccard similarity"


def test_each_figure_makes_its_own_axes_when_none_is_given():
    figures = [plots.lsh_s_curve(0.5, {"x": (4, 4)}, "t"),
               plots.estimate_vs_exact([0.5], {"x": [0.5]}, 64, "t"),
               plots.similarity_by_ngram([1], {"x": [0.5]}, 0.8, "t")]
    assert all(len(figure.axes) == 1 for figure in figures) and len({id(f) for f in figures}) == 3


def test_length_histograms_count_every_document_the_longest_included():
    lengths = {"a": [1, 7, 50, 977, 15_999], "b": [3, 3, 12_345, 15_998]}  # 15,999: 10**log10 of it rounds low
    assert plots.log_bins(np.concatenate([np.asarray(v) for v in lengths.values()]))[-1] >= 15_999
    figure = plots.document_length_panels(lengths)
    counted = sum(patch.get_height() for ax in figure.axes for patch in ax.patches)
    plt.close(figure)
    assert counted == sum(len(v) for v in lengths.values())


def test_a_small_domain_fills_its_own_panel_beside_a_large_one():
    rng = np.random.default_rng(0)
    lengths = {"large": rng.integers(1_000, 20_000, size=1_374), "small": rng.integers(100, 60_000, size=79)}
    figure = plots.document_length_panels(lengths, unit="tokens")
    large, small = figure.axes
    assert large.get_title(loc="left") == "large (1,374 documents)" and small.get_title(loc="left") == "small (79 documents)"
    tallest = max(patch.get_height() for patch in small.patches)
    assert small.get_ylim()[1] < 1.2 * tallest  # its own count axis, not the large domain's
    assert large.get_ylim()[1] > 3 * tallest
    assert "tokens" in small.get_xlabel()
    plt.close(figure)


def test_cluster_sizes_draws_each_run_with_groups_on_log_log_axes(ax):
    from helpers.clean.steps.fuzzy import group_sizes

    roots = np.array([0, 0, 2, 2, 2, 5, 6, 6, 8])  # groups {0,1}, {2,3,4}, {6,7}; 5 and 8 alone
    assert group_sizes(roots) == {"2": 2, "3": 1}
    figure = plots.cluster_sizes({"corpus": {}, "planted": group_sizes(roots), "cluster": {"2001": 1}}, "sizes", ax=ax)
    assert figure is ax.figure and ax.get_xscale() == ax.get_yscale() == "log" and ax.get_title() == "sizes"
    assert [line.get_label() for line in ax.lines] == ["planted", "cluster"]  # a run without groups draws nothing
    assert ax.lines[0].get_xdata().tolist() == [2, 3] and ax.lines[0].get_ydata().tolist() == [2, 1]
