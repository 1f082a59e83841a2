"""The layout of a Megatron indexed dataset drawn from its own arrays: the `.idx` (header, sequence lengths,
pointers, document indices) above, the `.bin`'s token bytes below, and the arrows that connect them."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

HEADER_BYTES = 34  # magic 9, version 8, dtype code 1, sequence count 8, document-index count 8


def _cells(ax, corner: tuple[float, float], width: float, values, *, label: str, color: str) -> list[float]:
    """A run of cells from `corner` (x, y) holding `values` then "…", with `label` above; returns the x of each
    value cell's centre."""
    x0, y = corner
    cell = width / (len(values) + 1)
    centres = []
    for k, text in enumerate([*map(str, values), "…"]):
        ax.add_patch(Rectangle((x0 + k * cell, y), cell, 1, facecolor=color, edgecolor="black", linewidth=0.8))
        ax.text(x0 + (k + 0.5) * cell, y + 0.5, text, ha="center", va="center", fontsize=8)
        centres.append(x0 + (k + 0.5) * cell)
    ax.text(x0 + width / 2, y + 1.12, label, ha="center", va="bottom", fontsize=8)
    return centres[:-1]


def idx_layout(sequence_lengths, sequence_pointers, document_indices, dtype, shown: int = 3):
    """The `.idx` and `.bin` of a dataset, the first `shown` entries of each array written in; returns the figure.

    Pass the dataset's own arrays (`IndexedDataset.sequence_lengths`, `.sequence_pointers`, `.document_indices`)
    and its token dtype."""
    dtype = np.dtype(dtype)
    shown = min(shown, len(sequence_lengths))
    if shown < 1:
        raise ValueError("the dataset has no sequences to draw")
    lengths = [int(v) for v in sequence_lengths[:shown]]
    pointers = [int(v) for v in sequence_pointers[:shown]]
    documents = [int(v) for v in document_indices[:shown]]
    fig, ax = plt.subplots(figsize=(11, 3.6))
    ax.add_patch(Rectangle((0, 3), 1.8, 1, facecolor="lightgrey", edgecolor="black"))
    ax.text(0.9, 3.5, f"header\n{HEADER_BYTES} bytes", ha="center", va="center", fontsize=8)
    ax.text(0.9, 4.12, "magic, version, dtype,\nN sequences, D indices", ha="center", va="bottom", fontsize=7)
    _cells(ax, (1.8, 3), 2.6, lengths, label="sequence lengths (int32 × N)", color="lightyellow")
    pointer_x = _cells(ax, (4.4, 3), 2.8, pointers, label="pointers: byte offsets into .bin (int64 × N)",
                       color="lightblue")
    document_x = _cells(ax, (7.2, 3), 2.8, documents, label="document indices (int64 × D)", color="mistyrose")
    ax.text(-0.15, 3.5, ".idx", ha="right", va="center", fontsize=10, fontweight="bold")

    # the .bin: the first sequences' tokens back to back, wider for longer ones (a short one stays readable)
    scale = 8.5 / max(sum(lengths), 1)
    x = 0.0
    starts = []
    for k, length in enumerate(lengths):
        width = max(length * scale, 1.2)
        ax.add_patch(Rectangle((x, 0), width, 1, facecolor="honeydew", edgecolor="black"))
        ax.text(x + width / 2, 0.5, f"sequence {k}\n{length:,} × {dtype.name}", ha="center", va="center", fontsize=7)
        starts.append(x)
        x += width
    ax.add_patch(Rectangle((x, 0), 10 - x, 1, facecolor="honeydew", edgecolor="black"))
    ax.text(x + (10 - x) / 2, 0.5, "…", ha="center", va="center")
    ax.text(-0.15, 0.5, ".bin", ha="right", va="center", fontsize=10, fontweight="bold")
    ax.text(5, -0.25, "token ids only, back to back: no header, no separators", ha="center", va="top", fontsize=8)

    for k, (start, pointer) in enumerate(zip(starts, pointers)):
        ax.annotate("", xy=(start + 0.03, 1.0), xytext=(pointer_x[k], 3.0),
                    arrowprops={"arrowstyle": "->", "color": "tab:blue", "linewidth": 1.2})
        ax.text(start + 0.06, 1.08, f"byte {pointer:,}", fontsize=7, color="tab:blue", va="bottom")
    for d, first in enumerate(documents):
        if first < len(pointer_x):
            ax.annotate("", xy=(pointer_x[first], 3.0), xytext=(document_x[d], 3.0),
                        arrowprops={"arrowstyle": "->", "color": "tab:red", "connectionstyle": "arc3,rad=-0.3"})
    ax.text(10, 1.9, "document d is sequences D[d] to D[d+1] − 1", ha="right", fontsize=8, color="tab:red")
    ax.set_xlim(-0.8, 10.2)
    ax.set_ylim(-0.6, 5.0)
    ax.axis("off")
    ax.set_title(".idx → .bin: each pointer gives a sequence's first byte; each document index its first sequence",
                 fontsize=10)
    fig.tight_layout()
    return fig
