"""Packing under knobs: which documents share which row, for a row capacity and a strategy.

`draw_rows` is the figure (one panel per strategy, a few rows each); the notebook draws its default as
plain output, and `explore_rows` puts a capacity slider and a strategy menu under it in JupyterLab.
Rows are picked evenly from the first to the last row of each plan: best-fit-decreasing places the
longest documents first, so its first rows hold one long document each and its packing shows at the end.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np

from ...common.headless import headless
from ...loading.packing import STRATEGIES, PackPlan, pack, plan_metrics
from . import live

COMPARED = ("concat", "pad", "next_fit", "best_fit_decreasing", "streaming")
PALETTE = tuple(plt.get_cmap("Set2").colors[:7])  # seven colours that stay apart (its eighth, grey, is left out)
CAPACITIES = (256, 512, 1024, 2048, 4096, 8192, 16384)


def rows_to_show(plan: PackPlan, count: int) -> np.ndarray:
    """`count` row numbers spread evenly from the plan's first row to its last (fewer if it has fewer)."""
    return np.unique(np.linspace(0, plan.rows - 1, min(count, plan.rows)).round().astype(np.int64))


def document_colours(documents: Sequence[int]) -> list:
    """A colour for each document of a row, in order: picked by document number from a palette of seven
    distinct colours, moved on to the next one where it would repeat its left neighbour's."""
    chosen = []
    for document in documents:
        k = int(document) % len(PALETTE)
        if chosen and PALETTE[k] == chosen[-1]:
            k = (k + 1) % len(PALETTE)
        chosen.append(PALETTE[k])
    return chosen


def draw_rows(lengths: np.ndarray, capacity: int, strategies: Sequence[str] = COMPARED, rows: int = 8,
              overlong: str = "split", window: int = 64, buffer_rows: int = 8):
    """Pack `lengths` with each strategy and draw `rows` of its rows: each document a bar edged in black,
    neighbours in different colours, white = padding; each row labelled with its number and how many
    documents it holds."""
    plans = {s: pack(lengths, capacity, s, overlong=overlong, window=window, buffer_rows=buffer_rows)
             for s in strategies}
    fig, axes = plt.subplots(len(plans), 1, figsize=(9, 0.8 + len(plans) * (0.45 + 0.22 * rows)), sharex=True,
                             squeeze=False)
    for ax, (name, plan) in zip(axes[:, 0], plans.items()):
        picked = rows_to_show(plan, rows)
        for y, r in enumerate(picked):
            segments = plan.segments_of_row(int(r))
            cursor = 0
            for (document, _, length), colour in zip(segments, document_colours([s[0] for s in segments])):
                ax.barh(y, length, left=cursor, height=0.8, color=colour, edgecolor="black", linewidth=0.8)
                cursor += length
            ax.text(capacity * 1.01, y, f"{len(segments)} doc{'s' if len(segments) != 1 else ''}", va="center",
                    fontsize=7)
        ax.set_yticks(range(len(picked)), [f"row {r:,}" for r in picked], fontsize=7)
        ax.set_ylim(len(picked) - 0.5, -0.5)
        ax.set_xlim(0, capacity)
        padding = plan_metrics(plan)["padding_fraction"]
        ax.set_title(f"{name}: {plan.rows:,} rows, {padding:.2%} padding", fontsize=9, loc="left")
    axes[-1, 0].set_xlabel(f"token position in a row of {capacity:,} (one bar per document, black borders between them, white = padding)")
    fig.suptitle(f"Rows spread from first to last, {len(lengths):,} documents packed at capacity {capacity:,}")
    fig.tight_layout()
    return fig


def explore_rows(lengths: np.ndarray, capacity: int, strategies: Sequence[str] = COMPARED, rows: int = 8,
                 overlong: str = "split", window: int = 64, buffer_rows: int = 8) -> None:
    """A capacity slider and a strategy menu (the compared set, or any one strategy) redrawing `draw_rows`
    (headless: one line naming them, and no widget is made, so a saved notebook keeps no widget state)."""
    description = "Rows of each strategy at one capacity"
    if headless():
        live(draw_rows, description, capacity=None, strategy=None)
        return
    import ipywidgets

    capacities = sorted(set(CAPACITIES) | {int(capacity)})
    choices = [(f"{len(strategies)} side by side", tuple(strategies))] + [(s, (s,)) for s in STRATEGIES]

    def draw(capacity, strategy):
        draw_rows(lengths=lengths, capacity=capacity, strategies=strategy, rows=rows, overlong=overlong,
                  window=window, buffer_rows=buffer_rows)
        plt.show()

    live(draw, description,
         capacity=ipywidgets.SelectionSlider(options=capacities, value=int(capacity), description="capacity"),
         strategy=ipywidgets.Dropdown(options=choices, value=tuple(strategies), description="strategy"))
