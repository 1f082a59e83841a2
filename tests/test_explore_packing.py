"""The packing explorer: its figure for two settings, the rows it picks, and its headless line."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from helpers.common.headless import HEADLESS_ENV
from helpers.loading.packing import pack
from helpers.workshop.explore.packing import COMPARED, PALETTE, document_colours, draw_rows, explore_rows, rows_to_show

LENGTHS = np.array([70, 12, 5, 33, 64, 9, 20, 41, 3, 16, 27, 8] * 4)


def test_the_compared_strategies_one_panel_each_labelled_with_the_capacity():
    fig = draw_rows(LENGTHS, 64, rows=5)
    axes = fig.get_axes()
    assert [ax.get_title(loc="left").split(":")[0] for ax in axes] == list(COMPARED)
    assert "row of 64" in axes[-1].get_xlabel()
    assert all(len(ax.get_yticklabels()) <= 5 for ax in axes)
    plt.close(fig)


def test_one_strategy_at_another_capacity():
    fig = draw_rows(LENGTHS, 128, ["pad"], rows=3)
    (ax,) = fig.get_axes()
    plan = pack(LENGTHS, 128, "pad", overlong="split")
    assert ax.get_title(loc="left").startswith(f"pad: {plan.rows} rows")
    assert "row of 128" in ax.get_xlabel()
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(labels) == 3 and labels[0] == "row 0" and labels[-1] == f"row {plan.rows - 1}"
    # every bar ends inside the row
    assert max(p.get_x() + p.get_width() for p in ax.patches) <= 128
    plt.close(fig)


def test_rows_spread_from_first_to_last():
    plan = pack(LENGTHS, 64, "best_fit_decreasing")
    picked = rows_to_show(plan, 4)
    assert picked[0] == 0 and picked[-1] == plan.rows - 1 and len(picked) == 4
    assert rows_to_show(pack(np.array([5, 6]), 64, "best_fit_decreasing"), 8).tolist() == [0]


def test_headless_names_the_knobs(monkeypatch, capsys):
    plt.close("all")
    monkeypatch.setenv(HEADLESS_ENV, "1")
    explore_rows(LENGTHS, 64)
    out = capsys.readouterr().out
    assert "capacity" in out and "strategy" in out
    assert not plt.get_fignums()


def test_neighbouring_documents_never_share_a_colour():
    documents = [3, 10, 17, 24, 5, 5 + len(PALETTE), 0]  # 3, 10, 17 and 24 fall on one palette colour
    colours = document_colours(documents)
    assert all(left != right for left, right in zip(colours, colours[1:]))
    assert colours[0] == PALETTE[3] and set(colours) <= set(PALETTE)
    assert document_colours([4, 9]) == [PALETTE[4], PALETTE[2]]  # different already: kept as they are


def test_every_document_is_a_bar_with_a_black_border_and_its_own_colour_beside_its_neighbours():
    fig = draw_rows(LENGTHS, 64, ["next_fit"], rows=6)
    (ax,) = fig.get_axes()
    bars = sorted(ax.patches, key=lambda p: (round(p.get_y(), 3), p.get_x()))
    assert all(p.get_edgecolor()[:3] == (0.0, 0.0, 0.0) and p.get_linewidth() >= 0.5 for p in bars)
    neighbours = [(a, b) for a, b in zip(bars, bars[1:]) if a.get_y() == b.get_y()]
    assert neighbours, "some rows hold more than one document"
    assert all(a.get_facecolor() != b.get_facecolor() for a, b in neighbours)
    plt.close(fig)
