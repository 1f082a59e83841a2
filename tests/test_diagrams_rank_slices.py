"""The rank-slices drawing labels every row and every rank it is given, and leaves unheld rows white."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt

from helpers.workshop.diagrams.rank_slices import rank_slices

matplotlib.use("Agg")


def test_every_row_and_rank_is_labelled():
    fig = rank_slices({0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}, 8, step=3)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert all(f"row {row}" in texts for row in range(8))
    assert "sample 24" in texts and "sample 31" in texts  # global batch 3 of 8 rows
    assert "rank 0: rows 0-3" in texts and "rank 1: rows 4-7" in texts
    assert "2 ranks" in fig.axes[0].get_title()
    plt.close(fig)


def test_a_row_no_rank_holds_stays_white():
    fig = rank_slices({0: [0], 1: [1]}, 3)
    faces = [patch.get_facecolor()[:3] for patch in fig.axes[0].patches]
    assert faces[2] == (1.0, 1.0, 1.0) and faces[0] != faces[1]
    plt.close(fig)
