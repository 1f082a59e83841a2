"""The pipeline from raw text to the batches a model trains on, as one strip of boxes: each notebook opens with
it, its own stage highlighted, so a learner always sees where the lesson sits. Cleaning is drawn dashed with an
arrow around it: in a real pipeline it runs before tokenizing, but notebooks 01-06 tokenize the raw corpus and
07 cleans it afterwards."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch

# (stage, what comes out of it, the notebook that teaches it), in the order data flows
SKIPPED = "clean"  # the stage notebooks 01-06 go around
STAGES = (
    ("raw text", "JSONL documents", "00"),
    ("clean", "kept documents", "07"),
    ("tokenizer", "ids per document", "01"),
    ("preprocess", ".bin + .idx", "02"),
    ("index", "pointers into .bin", "03"),
    ("blend", "a mix of datasets", "04"),
    ("pack", "rows of tokens", "05"),
    ("train", "a loss curve", "06"),
    ("frameworks", "any trainer", "08"),
    ("audit", "is my batch real?", "09"),
)


def pipeline(*highlighted: str, title: str | None = None):
    """The strip of stages, with `highlighted` (stage names) filled in; returns the figure."""
    unknown = set(highlighted) - {name for name, _, _ in STAGES}
    if unknown:
        raise ValueError(f"unknown stage(s) {sorted(unknown)}; the stages are {[name for name, _, _ in STAGES]}")
    fig, ax = plt.subplots(figsize=(12, 1.7))
    width, gap = 1.0, 0.22
    for k, (name, output, notebook) in enumerate(STAGES):
        x = k * (width + gap)
        on = name in highlighted
        ax.add_patch(FancyBboxPatch((x, 0), width, 1, boxstyle="round,pad=0.02,rounding_size=0.08",
                                    facecolor="tab:orange" if on else "whitesmoke",
                                    edgecolor="black" if on else "grey", linewidth=1.6 if on else 0.8,
                                    linestyle="--" if name == SKIPPED else "-"))
        ax.text(x + width / 2, 0.66, name, ha="center", va="center", fontsize=9,
                fontweight="bold" if on else "normal")
        ax.text(x + width / 2, 0.3, output, ha="center", va="center", fontsize=6.5, wrap=True)
        ax.text(x + width / 2, -0.22, f"notebook {notebook}", ha="center", va="center", fontsize=6.5, color="dimgray")
        if k < len(STAGES) - 1:
            ax.annotate("", xy=(x + width + gap - 0.02, 0.5), xytext=(x + width + 0.02, 0.5),
                        arrowprops={"arrowstyle": "->", "color": "grey"})
    _around_the_skipped_stage(ax, width + gap)
    ax.set_xlim(-0.1, len(STAGES) * (width + gap))
    ax.set_ylim(-0.4, 1.7)
    ax.axis("off")
    ax.set_title(title or f"Where this notebook sits: {', '.join(highlighted)}", fontsize=10)
    fig.tight_layout()
    return fig


def _around_the_skipped_stage(ax, step: float) -> None:
    """An arc from the stage before the skipped one to the stage after it, saying who takes that way."""
    k = [name for name, _, _ in STAGES].index(SKIPPED)
    start, end = (k - 1) * step + 0.5, (k + 1) * step + 0.5
    ax.annotate("", xy=(end, 1.02), xytext=(start, 1.02),
                arrowprops={"arrowstyle": "->", "color": "dimgray", "connectionstyle": "arc3,rad=-0.12"})
    ax.text((start + end) / 2, 1.58, "notebooks 01-06 tokenize the raw text", ha="center", va="center",
            fontsize=6.5, color="dimgray")
