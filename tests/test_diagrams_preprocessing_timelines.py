"""The two preprocessing timelines: a call per line against a call per batch, labelled as a schematic."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from helpers.workshop.diagrams.preprocessing_timelines import preprocessing_timelines


def test_one_block_per_line_above_and_per_batch_below():
    fig = preprocessing_timelines(lines=6, workers=2)
    top, bottom = fig.axes
    # worker blocks: 3 steps per line above, 3 per batch below; plus one write per line or per batch
    assert len(top.collections) == 6 * 3 + 6 and len(bottom.collections) == 2 * 3 + 2
    assert "schematic" in bottom.get_xlabel()
    assert [t.get_text() for t in top.get_yticklabels()] == ["main process", "worker 1", "worker 2"]
    plt.close(fig)


def test_fewer_lines_than_workers_is_refused():
    with pytest.raises(ValueError, match="one line per worker"):
        preprocessing_timelines(lines=1, workers=2)
