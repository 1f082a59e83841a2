"""How a text splits into tokens, drawn as boxes; live, a learner picks the tokenizer and types the text.

`draw_pieces` draws the figure a notebook commits (its default tokenizer and text); `explore_pieces`
puts a tokenizer menu and a text box under it that redraw the same figure in JupyterLab.
"""

from __future__ import annotations

import functools
import re
import unicodedata
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
BYTE_PIECE = re.compile(r"<0x[0-9A-F]{2}>")
NOT_UNICODE = ("Last Resort", "cm", "STIXNonUnicode", "STIXSize")
CODE_POINT_COLOUR, BYTE_COLOUR = "tab:blue", "tab:red"


@functools.cache
def _installed_glyphs() -> dict[str, frozenset[int]]:
    """Code points each font matplotlib knows can draw, `FONT` first. Left out: matplotlib's Last Resort font,
    which draws every character as a box, and its TeX fonts, whose tables follow TeX's encoding, not Unicode."""
    from matplotlib import font_manager, ft2font

    fonts = {FONT: font_manager.findfont(FONT)}
    for entry in font_manager.fontManager.ttflist:
        if not entry.name.startswith(NOT_UNICODE) and entry.fname.lower().endswith((".ttf", ".otf")):
            fonts.setdefault(entry.name, entry.fname)
    glyphs = {}
    for name, path in fonts.items():
        try:
            glyphs[name] = frozenset(ft2font.FT2Font(path).get_charmap())
        except (OSError, RuntimeError):  # a font file matplotlib cannot open draws nothing
            continue
    return glyphs


@functools.cache
def font_for(character: str) -> str | None:
    """The first installed font that has a glyph for `character` (`FONT` when it has one), else None."""
    return next((name for name, glyphs in _installed_glyphs().items() if ord(character) in glyphs), None)


def shown(piece: str) -> str:
    """A piece as the figure writes it: whitespace made visible, and a character no installed font can draw
    as its code point in guillemets, «U+65E5», so that it cannot be mistaken for a byte token <0xE6>."""
    return "".join(VISIBLE.get(c) or (c if font_for(c) else f"«U+{ord(c):04X}»") for c in piece)


def undrawn_characters(pieces: list[str]) -> dict[str, str]:
    """The characters of `pieces` that the figure writes as code points, by code point (U+65E5: 日)."""
    return {f"U+{ord(c):04X}": c for piece in pieces for c in piece if c not in VISIBLE and not font_for(c)}


def _columns(label: str) -> int:
    """Monospace columns a label takes: CJK and other wide characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in label)


def draw_pieces(tokenizer: ZooTokenizer, text: str):
    """One box per token, in reading order, holding the piece as the vocabulary stores it; byte tokens
    (part of a character) in red, whole characters no installed font can draw as blue code points."""
    pieces = raw_pieces(tokenizer, text)
    labels = [shown(p) for p in pieces]
    rows, row, used = [], [], 0
    for label in labels:  # lay the boxes out in lines of COLUMNS monospace columns
        width = _columns(label) + 1
        if row and used + width > COLUMNS:
            rows.append(row)
            row, used = [], 0
        row.append((used, label))
        used += width
    rows.append(row)

    fig_width = 10.0
    fontsize = fig_width * 72 / COLUMNS / 0.62  # a DejaVu Sans Mono glyph is about 0.6 em wide
    families = [FONT, *sorted({font_for(c) for p in pieces for c in p if font_for(c)} - {FONT})]
    fig, ax = plt.subplots(figsize=(fig_width, 0.9 + 0.32 * len(rows)))
    colours = plt.get_cmap("Pastel1").colors
    k = 0
    for r, boxes in enumerate(rows):
        for x, label in boxes:  # bytes and code points: white boxes edged in their colour, text in it too
            marked = BYTE_COLOUR if BYTE_PIECE.search(label) else CODE_POINT_COLOUR if "«U+" in label else None
            ax.add_patch(FancyBboxPatch((x + 0.1, r + 0.12), _columns(label) + 0.8, 0.76,
                                        boxstyle="round,pad=0,rounding_size=0.2",
                                        facecolor="white" if marked else colours[k % len(colours)],
                                        edgecolor=marked or "grey", linewidth=1.2 if marked else 0.5))
            ax.text(x + 0.5, r + 0.5, label, family=families, fontsize=fontsize, va="center", ha="left",
                    color=marked or "black")
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
    ax.set_xlabel("one box per token, as stored in the vocabulary: · space byte, ▁ SentencePiece's space, ⏎ newline;\n"
                  "red <0x..>: one byte of a character split over several tokens; "
                  "blue «U+....»: one whole character, written as its code point (no font here draws it)",
                  fontsize=8)
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
