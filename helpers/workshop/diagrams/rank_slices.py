"""One global batch cut into the slices each process (rank) reads: a column of rows, each coloured by the rank
that holds it, so a learner sees that no rank holds the whole batch and that together they hold all of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle


def rank_slices(rows_by_rank: Mapping[int, Sequence[int]], global_batch_size: int, step: int = 0,
                title: str | None = None):
    """Global batch `step` as `global_batch_size` rows, each coloured by the rank in `rows_by_rank` (rank -> the
    rows it reads) that holds it; a row no rank holds stays white. Returns the figure."""
    owner = {row: rank for rank, rows in rows_by_rank.items() for row in rows}
    colours = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(7, 0.32 * global_batch_size + 1.0))
    for row in range(global_batch_size):
        y = global_batch_size - 1 - row  # row 0 on top
        rank = owner.get(row)
        ax.add_patch(Rectangle((0, y + 0.08), 4, 0.84, facecolor="white" if rank is None else colours(rank),
                               edgecolor="black", linewidth=0.8, alpha=0.85))
        ax.text(-0.15, y + 0.5, f"row {row}", ha="right", va="center", fontsize=8)
        ax.text(2, y + 0.5, f"sample {step * global_batch_size + row}", ha="center", va="center", fontsize=8)
    for rank, rows in sorted(rows_by_rank.items()):
        top, bottom = global_batch_size - 1 - min(rows), global_batch_size - 1 - max(rows)
        ax.plot([4.2, 4.2], [bottom + 0.12, top + 0.88], color=colours(rank), linewidth=3)
        ax.text(4.35, (top + bottom + 1) / 2, f"rank {rank}: rows {min(rows)}-{max(rows)}", va="center", fontsize=9)
    ax.set_xlim(-1.4, 6.6)
    ax.set_ylim(-0.2, global_batch_size + 0.1)
    ax.axis("off")
    ax.set_title(title or f"Global batch {step}: {global_batch_size} rows over {len(rows_by_rank)} ranks", fontsize=10)
    fig.tight_layout()
    return fig
