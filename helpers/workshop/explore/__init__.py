"""Knobs a learner can turn: controls under a figure that redraw it live in JupyterLab.

A notebook draws its default figure as plain code: that output is what nbval checks, papermill records
and a reader on the web sees. An explorer from this package then adds controls (ipywidgets) that call
the same drawing function with other values. Run headless (papermill, nbval, `make workshop`: they set
`helpers.common.headless.HEADLESS_ENV`), an explorer draws nothing and says in one line which knobs a live session would have,
so the committed outputs hold no widget state.

One module per notebook topic (`explore.tokenizers`, `explore.blending`, ...), each built on `live`.
"""

from __future__ import annotations

from typing import Any, Callable

from ...common.headless import headless


def live(draw: Callable[..., Any], description: str, **controls) -> None:
    """Show `controls` (name -> ipywidgets control) that call `draw(**values)` on every change, redrawing
    its figure in place; headless, print one line naming the knobs instead."""
    if headless():
        print(f"{description} (in a live JupyterLab session: {', '.join(controls)} redraw it)")
        return
    import ipywidgets
    from IPython.display import display

    display(ipywidgets.interactive(draw, **controls))
