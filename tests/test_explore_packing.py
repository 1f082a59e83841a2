"""The packing explorer: its figure for two settings, the rows it picks, and its headless line."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from helpers.common.headless import HEADLESS_ENV
from helpers.loading.packing import pack
from helpers.workshop.explore.packing import COMPARED, draw_rows, explore_rows, rows_to_show

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
