"""Progress bars for a person watching, and none for a batch run.

`tqdm.auto` draws a widget in a live Jupyter kernel and a text bar in a terminal. Run headless (papermill,
nbval, `make workshop`), nobody watches: a widget there is saved as a snapshot stuck at 0%, and a text bar is
saved as a block of stderr output that notebook viewers draw as an error. Headless, bars are therefore off
(`disable=True`); the work they would have followed prints its own summary.
"""

from __future__ import annotations

from typing import Any

from .headless import headless


def bar_class() -> type:
    """The tqdm class for this kernel or terminal (a widget in a live notebook, a text bar elsewhere)."""
    from tqdm.auto import tqdm

    return tqdm


def progress_bar(*args: Any, **kwargs: Any):
    """A tqdm bar (same arguments as `tqdm`), switched off when nobody watches (a headless run)."""
    if headless():
        kwargs["disable"] = True
    return bar_class()(*args, **kwargs)
