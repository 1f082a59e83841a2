"""How preprocessing shares its work among processes, as two timelines: Megatron's pool (one call per line, a
Python list back per document, one write per document) against a batched pipeline (one call per batch of lines,
one array back). A schematic of how the work is cut, not a measurement: block widths are illustrative."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import Patch

COLORS = {"parse JSON": "tab:gray", "encode": "tab:blue", "send ids back": "tab:orange", "write": "tab:green"}


def _encode_width(line: int) -> float:
    """An illustrative encode time for line `line`: documents differ in length."""
    return 0.5 + 0.35 * ((line * 7) % 5) / 4


def _per_line(ax, y: dict[str, float], lines: int, workers: int) -> None:
    """One call per line on whichever worker is free; the main process writes each document as it comes back, in
    order."""
    free = [0.0] * workers
    written = 0.0
    for line in range(lines):
        worker = line % workers
        t = free[worker]
        for step, width in (("parse JSON", 0.12), ("encode", _encode_width(line)), ("send ids back", 0.18)):
            ax.broken_barh([(t, width)], (y[f"worker {worker + 1}"], 0.6), facecolors=COLORS[step], edgecolor="white")
            t += width
        free[worker] = t
        written = max(written, t)
        ax.broken_barh([(written, 0.12)], (y["main process"], 0.6), facecolors=COLORS["write"], edgecolor="white")
        written += 0.12


def _batched(ax, y: dict[str, float], lines: int, workers: int) -> None:
    """One call per batch of consecutive lines; one array back per batch, one write per batch."""
    per_batch = lines // workers
    written = 0.0
    for worker in range(workers):
        batch = range(worker * per_batch, (worker + 1) * per_batch)
        t = 0.0
        for step, width in (("parse JSON", 0.06 * per_batch), ("encode", sum(map(_encode_width, batch))),
                            ("send ids back", 0.25)):
            ax.broken_barh([(t, width)], (y[f"worker {worker + 1}"], 0.6), facecolors=COLORS[step], edgecolor="white")
            t += width
        written = max(written, t)
        ax.broken_barh([(written, 0.3)], (y["main process"], 0.6), facecolors=COLORS["write"], edgecolor="white")
        written += 0.3


def preprocessing_timelines(lines: int = 12, workers: int = 2):
    """Two timelines of `lines` documents on `workers` processes: a call per line above, a call per batch below;
    returns the figure."""
    if lines < workers or workers < 1:
        raise ValueError(f"need at least one line per worker, got {lines} lines for {workers} workers")
    rows = ["main process"] + [f"worker {w + 1}" for w in range(workers)]
    y = {name: k for k, name in enumerate(rows)}
    fig, axes = plt.subplots(2, 1, figsize=(10, 1.0 + 1.1 * len(rows)), sharex=True)
    panels = ((f"Megatron's tools/preprocess_data.py: a call per line ({lines} calls, {lines} lists back, "
               f"{lines} writes)", _per_line),
              (f"Batched pipeline: a call per batch of lines ({workers} calls, {workers} arrays back, "
               f"{workers} writes)", _batched))
    for ax, (title, draw) in zip(axes, panels):
        draw(ax, y, lines, workers)
        ax.set_yticks([k + 0.3 for k in range(len(rows))], rows)
        ax.set_title(title, fontsize=9, loc="left")
        ax.spines[["top", "right"]].set_visible(False)
    axes[-1].set_xlabel("time → (schematic: widths are illustrative, not measured)")
    axes[-1].set_xticks([])
    axes[0].legend(handles=[Patch(color=c, label=step) for step, c in COLORS.items()], ncol=4, fontsize=8,
                   loc="lower right", bbox_to_anchor=(1, 1.18), frameon=False)
    fig.tight_layout()
    return fig
