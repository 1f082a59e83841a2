"""How a text splits into tokens, drawn as boxes; live, a learner picks the tokenizer and types the text.

`draw_pieces` draws the figure a notebook commits (its default tokenizer and text); `explore_pieces`
puts a tokenizer menu and a text box under it that redraw the same figure in JupyterLab.
"""

from __future__ import annotations

import functools
from typing import Mapping

import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch

from ...common.headless import headless
from ...tokenizers.costs import raw_pieces
from ...tokenizers.zoo import ZooTokenizer
from . import live

FONT = "DejaVu Sans Mono"
COLUMNS = 90  # monospace columns in one line of the figure
VISIBLE = {" ": "·", "\n": "⏎", "\t": "→"}


@functools.cache
def _glyphs() -> frozenset[int]:
    from matplotlib import font_manager, ft2font

    return frozenset(ft2font.FT2Font(font_manager.findfont(FONT)).get_charmap())


def shown(piece: str) -> str:
    """A piece as the figure writes it: whitespace made visible, characters the font lacks as U+XXXX."""
    glyphs = _glyphs()
    return "".join(VISIBLE.get(c) or (c if ord(c) in glyphs else f"<U+{ord(c):04X}>") for c in piece)


def draw_pieces(tokenizer: ZooTokenizer, text: str):
    """One box per token, in reading order, holding the piece as the vocabulary stores it."""
    labels = [shown(p) for p in raw_pieces(tokenizer, text)]
    rows, row, used = [], [], 0
    for label in labels:  # lay the boxes out in lines of COLUMNS monospace columns
        width = len(label) + 1
        if row and used + width > COLUMNS:
            rows.append(row)
            row, used = [], 0
        row.append((used, label))
        used += width
    rows.append(row)

    fig_width = 10.0
    fontsize = fig_width * 72 / COLUMNS / 0.62  # a DejaVu Sans Mono glyph is about 0.6 em wide
    fig, ax = plt.subplots(figsize=(fig_width, 0.9 + 0.32 * len(rows)))
    colours = plt.get_cmap("Pastel1").colors
    k = 0
    for r, boxes in enumerate(rows):
        for x, label in boxes:
            ax.add_patch(FancyBboxPatch((x + 0.1, r + 0.12), len(label) + 0.8, 0.76, boxstyle="round,pad=0,rounding_size=0.2",
                                        facecolor=colours[k % len(colours)], edgecolor="grey", linewidth=0.5))
            ax.text(x + 0.5, r + 0.5, label, family=FONT, fontsize=fontsize, va="center", ha="left")
            k += 1
    ax.set_xlim(0, COLUMNS)
    ax.set_ylim(len(rows), 0)
    ax.set_xticks([])
    ax.set_yticks([])
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    text_bytes = len(text.encode("utf-8"))
    ax.set_title(f"{tokenizer.name}: {len(labels)} tokens for {text_bytes} bytes of text "
                 f"({text_bytes / max(len(labels), 1):.2f} bytes per token)")
    ax.set_xlabel("one box per token, as stored in the vocabulary (· space byte, ▁ SentencePiece's space, "
                  "<0x..> one byte, ⏎ newline, <U+..> a character the font lacks)", fontsize=8)
    fig.tight_layout()
    return fig


def explore_pieces(tokenizers: Mapping[str, ZooTokenizer], text: str, tokenizer: str) -> None:
    """A tokenizer menu and a text box that redraw `draw_pieces` live (headless: one line naming them)."""
    description = "How a text splits into tokens"
    if headless():
        live(draw_pieces, description, tokenizer=None, text=None)
        return
    import ipywidgets

    def draw(tokenizer: ZooTokenizer, text: str) -> None:
        draw_pieces(tokenizer, text)
        plt.show()

    live(draw, description,
         tokenizer=ipywidgets.Dropdown(options=list(tokenizers.items()), value=tokenizers[tokenizer],
                                       description="tokenizer"),
         text=ipywidgets.Textarea(value=text, description="text", layout=ipywidgets.Layout(width="90%")))
