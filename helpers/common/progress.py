"""Progress bars that are saved in their final state.

`tqdm.auto` draws a widget in any Jupyter kernel. Run headless (papermill, nbval, `make workshop`),
nobody renders that widget: the executed notebook keeps a widget-state snapshot that shows 0%, and the
bar's end never reaches the saved output. Headless, our bars are text bars (`tqdm.std`) instead: the
kernel sends their updates to stderr, each starting with a carriage return, so what JupyterLab,
nbconvert and GitHub show of the saved output is the bar's last line. Headless bars redraw at most
every `HEADLESS_MININTERVAL` seconds (a long batch run would otherwise save thousands of updates into
its notebook); they always draw their final state. In a live JupyterLab the widget stays.
"""

from __future__ import annotations

from typing import Any

from .headless import headless

HEADLESS_MININTERVAL = 10.0  # seconds between two redraws of a text bar nobody watches


def bar_class() -> type:
    """The tqdm class for this kernel: the text bar when headless, the automatic choice otherwise."""
    if headless():
        from tqdm.std import tqdm
    else:
        from tqdm.auto import tqdm
    return tqdm


def progress_bar(*args: Any, **kwargs: Any):
    """A tqdm bar (same arguments as `tqdm`) whose saved output is its final state."""
    if headless():
        kwargs.setdefault("mininterval", HEADLESS_MININTERVAL)
    return bar_class()(*args, **kwargs)
