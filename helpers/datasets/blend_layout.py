"""A blend's batch laid out by one compiled call over all its datasets, as each window is gathered.

A batch of a blend or a schedule draws its rows from several datasets, each sample from the epoch of its own
dataset's order that it falls in (`helpers.loading.epochs`). Laid out dataset by dataset, each dataset costs the
batch a pass of Python (its rows picked out, its epoch checked, the compiled loop called); here every row goes
through one compiled loop that reads row i from dataset `columns[i]` (`_gather_layout_blend`), the same gather and
layout as `GPTDataset.lay_out` row for row. It needs each dataset's arrays of one kind to share a dtype (numba
indexes a tuple of arrays by a number only when they do) and each dataset's rows to lie in one epoch;
`BlendLayout.lay_out` says False, having written nothing, where they do not, and the caller lays the batch out
dataset by dataset.
"""

from __future__ import annotations

import numpy as np

from ..common.compiled import jit
from .gpt_dataset import GPTDataset, gather_row
from .layout import layout_row


@jit(cache=True, nogil=True)
def _gather_layout_blend(tokens, orders, indices, starts, columns, numbers, layout, out):  # pragma: no cover - compiled
    """Row i of `out[0..3]` laid out from sample `numbers[i]` of dataset k = `columns[i]`, which is sample
    `numbers[i] - starts[k]` of the epoch whose shuffled samples are `orders[k]` (looked up, then `gather_row`
    with `indices[k]` and `layout_row`). `tokens`, `orders` and `indices` hold one item per dataset. Returns -1, or
    the place of the first row whose dataset or sample lies outside them, before anything is written."""
    for i in range(numbers.size):
        k = columns[i]
        if k < 0 or k >= len(orders) or i >= out.shape[1]:
            return i
        if numbers[i] - starts[k] < 0 or numbers[i] - starts[k] >= orders[k].size:
            return i
    window = np.empty(out.shape[2] + 1, dtype=tokens[0].dtype)
    for i in range(numbers.size):
        k = columns[i]
        gather_row(tokens[k], orders[k][numbers[i] - starts[k]], indices[k], window)
        layout_row(window, layout, out, i)
    return -1


def _read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of `array` (the loop only reads; numba types a read-only array apart from a writable one)."""
    view = array.view()
    view.flags.writeable = False
    return view


class BlendLayout:
    """The compiled loop's arguments for one epoch of each dataset, made once and used for every batch drawn from
    those epochs: `datasets[k]` holds samples `starts[k]` on of dataset k's own order. `arguments` is None where the
    datasets' arrays of one kind differ in numba's type (their dtype, say)."""

    def __init__(self, datasets: list[GPTDataset], starts: np.ndarray):
        from numba import typeof  # loaded by now: this is the compiled loops' path

        self.datasets = datasets
        tokens, orders, indices, layouts = zip(*(dataset.layout_inputs() for dataset in datasets))
        # read-only views, so that indices read from the cache (mapped read-only) and those built here are one type
        tokens, orders = tuple(map(_read_only, tokens)), tuple(map(_read_only, orders))
        indices = tuple((*map(_read_only, index[:4]), index[4]) for index in indices)
        same = len(set(layouts)) == 1 and all(len(set(map(typeof, kind))) == 1 for kind in (tokens, orders, indices))
        self.arguments = None if not same else dict(tokens=tokens, orders=orders, indices=indices,
                                                    starts=np.asarray(starts, dtype=np.int64), layout=layouts[0])

    def lay_out(self, columns: np.ndarray, numbers: np.ndarray, out: np.ndarray) -> bool:
        """`out` (`[4, B, seq_length]` int64) = row i laid out from sample `numbers[i]` of dataset `columns[i]` (in
        its own order), in one compiled call; False, with nothing written, where the datasets' arrays differ in
        dtype or a sample lies outside the epochs held (the caller chooses other epochs, or lays the rows out dataset
        by dataset, which says why where something is wrong)."""
        if out.ndim != 3 or out.shape[0] != 4 or out.shape[1] != numbers.size or out.dtype != np.int64:
            raise ValueError(f"out is {out.dtype} {list(out.shape)} for {numbers.size} samples; it must be int64 "
                             "[4, B, seq_length], one row per sample")
        if self.arguments is None:
            return False
        return _gather_layout_blend(columns=np.asarray(columns, dtype=np.int64),
                                    numbers=np.asarray(numbers, dtype=np.int64), out=out, **self.arguments) < 0
