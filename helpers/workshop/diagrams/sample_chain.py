"""How `dataset[i]` finds its tokens: shuffle index -> sample index -> document index -> a window of the documents
laid end to end. Drawn from a real `GPTDataset` (anything with its three indices, `seq_length` and the document
lengths in `dataset.sequence_lengths`), for one sample whose window crosses the end of a document."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:olive")


def _boxes(ax, y, cells, highlighted, *, label):
    """One row of labelled boxes at height y: `cells` is [(text above, text inside)], `highlighted` their colours."""
    ax.text(-0.3, y + 0.3, label, ha="right", va="center", fontsize=9, fontweight="bold")
    for k, ((above, inside), color) in enumerate(zip(cells, highlighted)):
        ax.add_patch(Rectangle((k * 1.6, y), 1.45, 0.6, facecolor=color or "whitesmoke", alpha=0.35 if color else 1,
                               edgecolor="black" if color else "grey"))
        ax.text(k * 1.6 + 0.72, y + 0.3, inside, ha="center", va="center", fontsize=8)
        ax.text(k * 1.6 + 0.72, y + 0.72, above, ha="center", va="bottom", fontsize=7, color="dimgray")


def sample_chain(dataset, i: int):
    """The chain of lookups behind `dataset[i]`, and its window of `seq_length + 1` tokens; returns the figure."""
    seq_length = int(dataset.seq_length)
    j = int(dataset.shuffle_index[i])
    (first, offset), (last, end_offset) = (tuple(int(x) for x in row) for row in dataset.sample_index[j:j + 2])
    positions = list(range(first, last + 1))
    documents = [int(dataset.document_index[p]) for p in positions]
    lengths = np.asarray(dataset.dataset.sequence_lengths)[documents].astype(np.int64)
    colors = [COLORS[k % len(COLORS)] for k in range(len(positions))]

    fig, (top, strip) = plt.subplots(2, 1, figsize=(10, 5.2), height_ratios=(2.6, 1))
    shown_i = range(max(0, i - 2), min(len(dataset.shuffle_index), i + 3))
    _boxes(top, 2.4, [(f"i = {k}", str(int(dataset.shuffle_index[k]))) for k in shown_i],
           ["tab:red" if k == i else None for k in shown_i], label="shuffle index")
    _boxes(top, 1.2, [(f"row j = {j}", f"({first}, {offset})"), (f"row j + 1 = {j + 1}", f"({last}, {end_offset})")],
           ["tab:red", "tab:red"], label="sample index\n(position, offset)")
    _boxes(top, 0.0, [(f"position {p}", f"document {d}") for p, d in zip(positions, documents)], colors,
           label="document index")
    arrow = {"arrowstyle": "->", "color": "tab:red"}
    top.annotate("", xy=(0.72, 1.9), xytext=((i - shown_i.start) * 1.6 + 0.72, 2.4), arrowprops=arrow)
    top.annotate("", xy=(0.72, 0.7), xytext=(0.72, 1.2), arrowprops=arrow)
    top.annotate("", xy=((len(positions) - 1) * 1.6 + 0.72, 0.7), xytext=(1.6 + 0.72, 1.2), arrowprops=arrow)
    top.set_xlim(-3.2, max(5, len(positions), 2) * 1.6)
    top.set_ylim(-0.2, 3.4)
    top.axis("off")
    top.set_title(f"dataset[{i}] = sample {j}: from document index position {first}, token {offset}, "
                  f"to position {last}, token {end_offset} (inclusive)", fontsize=10)

    starts = np.concatenate([[0], np.cumsum(lengths)])  # each document's first token in the stream
    window = (offset, starts[-2] + end_offset + 1)       # seq_length + 1 tokens
    margin = seq_length // 3
    view = (max(0, window[0] - margin), min(int(starts[-1]), window[1] + margin))
    for k, (document, color) in enumerate(zip(documents, colors)):
        lo, hi = max(starts[k], view[0]), min(starts[k + 1], view[1])
        if hi <= lo:
            continue
        strip.add_patch(Rectangle((lo, 0), hi - lo, 1, facecolor=color, alpha=0.35, edgecolor="grey"))
        strip.text((lo + hi) / 2, 0.5, f"document {document}", ha="center", va="center", fontsize=8)
        eod = starts[k + 1] - 1  # a document's last token is its EOD
        if view[0] <= eod < view[1]:
            strip.add_patch(Rectangle((eod, 0), 1, 1, facecolor="black"))
            strip.text(eod, 1.2, "EOD", ha="center", va="bottom", fontsize=8)
    strip.add_patch(Rectangle((window[0], -0.15), window[1] - window[0], 1.3, fill=False, edgecolor="tab:red",
                              linewidth=2))
    strip.text(window[0], -0.3, f"sample {j}: {window[1] - window[0]} tokens (seq_length + 1)", ha="left", va="top",
               fontsize=8, color="tab:red")
    strip.set_xlim(*view)
    strip.set_ylim(-0.8, 1.5)
    strip.set_yticks([])
    strip.set_xlabel(f"token position in the documents laid end to end, from document index position {first}")
    fig.tight_layout()
    return fig
