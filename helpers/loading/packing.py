"""Packing documents into fixed-capacity rows: every strategy, what each wastes, and the batch tensors.

A *plan* says, for every row, which pieces of which documents it holds: arrays `row`, `document`,
`start`, `length` (one entry per segment, in row order). Strategies:

| name | what it does | documents cross rows? |
|---|---|---|
| `concat` | Megatron: concatenate everything, cut every `capacity` tokens | yes, constantly |
| `pad` | one document per row, padded (the hand-written training scripts) | no |
| `next_fit` | one open row; a document that does not fit closes it (LMMS-Engine calls this first_fit) | no |
| `first_fit` | the first row with room, in arrival order (a segment tree over free space) | no |
| `best_fit_decreasing` | longest first, into the row with the least room that still fits | no |
| `window` | first-fit-decreasing within windows of `window` consecutive documents (LMMS-Engine's window_W) | no |
| `streaming` | a bounded buffer of open rows over an iterator; a full buffer emits its fullest row | no |

A document longer than `capacity` is truncated (`overlong="truncate"`: the rest dropped, its tokens
counted), split into capacity-sized pieces first (`"split"`: the pieces counted as fragments), or left
out whole (`"drop"`: the same documents in every strategy, counted). `concat` cuts every document
across rows anyway, so only `"drop"` changes what it packs.
The greedy loops are compiled with numba: best-fit-decreasing packs a million documents in well under
a second here (see benchmarks/packing_speed.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np
import torch

from ..common.compiled import jit
from ..common.errors import UserError
from ..datasets.layout import IGNORE_INDEX, attention_mask, positions_within_documents

STRATEGIES = ("concat", "pad", "next_fit", "first_fit", "best_fit_decreasing", "window", "streaming")
OVERLONG = ("truncate", "split", "drop")


@dataclass
class PackPlan:
    """Segments in row order: row i holds documents[document] tokens [start, start + length)."""

    strategy: str
    capacity: int
    row: np.ndarray
    document: np.ndarray
    start: np.ndarray
    length: np.ndarray
    rows: int
    truncated_tokens: int = 0
    dropped_documents: int = 0

    def row_fill(self) -> np.ndarray:
        """Tokens used in each row."""
        return np.bincount(self.row, weights=self.length, minlength=self.rows).astype(np.int64)

    def segments_of_row(self, r: int) -> list[tuple[int, int, int]]:
        lo, hi = np.searchsorted(self.row, [r, r + 1])
        return list(zip(self.document[lo:hi].tolist(), self.start[lo:hi].tolist(), self.length[lo:hi].tolist()))


# ---------------------------------------------------------------- overlong documents


def _check_parameters(capacity, overlong: str, strategy: str = "streaming", window=1, buffer_rows=1) -> None:
    """One line naming the parameter for a strategy or `overlong` not known, or a size below 1."""
    for name, value in (("capacity", capacity), ("window", window), ("buffer_rows", buffer_rows)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise UserError(f"packing {name}={value!r}; fix: give {name} a whole number of at least 1")
    if strategy not in STRATEGIES:
        raise UserError(f"packing strategy {strategy!r} is unknown; fix: choose one of {', '.join(STRATEGIES)}")
    if overlong not in OVERLONG:
        raise UserError(f"packing overlong={overlong!r}; fix: choose one of {', '.join(OVERLONG)}")


def _without_dropped(lengths: np.ndarray, capacity: int, overlong: str) -> tuple[np.ndarray, int]:
    """`lengths` with the documents that `overlong="drop"` leaves out set to 0, and how many they are."""
    if overlong != "drop":
        return lengths, 0
    dropped = lengths > capacity
    return np.where(dropped, 0, lengths), int(dropped.sum())


def _pieces(lengths: np.ndarray, capacity: int, overlong: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(document, start, length) of the items to pack, and the tokens dropped by truncation
    (documents that `"drop"` leaves out are already 0 long)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    documents = np.arange(lengths.size, dtype=np.int64)
    keep = lengths > 0
    documents, lengths = documents[keep], lengths[keep]
    if overlong == "truncate":
        dropped = int(np.maximum(lengths - capacity, 0).sum())
        return documents, np.zeros_like(lengths), np.minimum(lengths, capacity), dropped
    counts = -(-lengths // capacity)
    document = np.repeat(documents, counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    piece = np.arange(document.size) - first
    start = piece * capacity
    length = np.minimum(capacity, np.repeat(lengths, counts) - start)
    return document, start, length, 0


# ---------------------------------------------------------------- compiled greedy loops


@jit(cache=True)
def _next_fit(lengths, capacity):  # pragma: no cover - compiled
    rows = np.empty(lengths.size, np.int64)
    row, free = -1, 0
    for i in range(lengths.size):
        if lengths[i] > free:
            row += 1
            free = capacity
        rows[i] = row
        free -= lengths[i]
    return rows, row + 1


@jit(cache=True)
def _first_fit(lengths, capacity):  # pragma: no cover - compiled
    """Leftmost row with room, by descending a max-segment-tree over the rows' free space."""
    n = lengths.size
    size = 1
    while size < max(n, 1):
        size *= 2
    tree = np.full(2 * size, capacity, np.int64)  # every potential row starts empty
    rows = np.empty(n, np.int64)
    used = 0
    for i in range(n):
        need = lengths[i]
        node = 1
        while node < size:
            node = 2 * node if tree[2 * node] >= need else 2 * node + 1
        row = node - size
        rows[i] = row
        used = max(used, row + 1)
        tree[node] -= need
        node //= 2
        while node >= 1:
            tree[node] = max(tree[2 * node], tree[2 * node + 1])
            node //= 2
    return rows, used


@jit(cache=True)
def _smallest_at_least(count, size, need):  # pragma: no cover - compiled
    """Smallest leaf value >= need whose count is positive, or -1 (count is a sum segment tree)."""
    node = need + size
    if count[node] > 0:
        return need
    while node > 1:
        if node % 2 == 0 and count[node + 1] > 0:
            node += 1
            while node < size:
                node = 2 * node if count[2 * node] > 0 else 2 * node + 1
            return node - size
        node //= 2
    return -1


@jit(cache=True)
def _best_fit(lengths, capacity):  # pragma: no cover - compiled
    """Row with the least room that fits: rows bucketed by free space (a stack per value), a sum
    segment tree over the values finds the smallest non-empty bucket >= need in O(log capacity)."""
    n = lengths.size
    size = 1
    while size < capacity + 1:
        size *= 2
    count = np.zeros(2 * size, np.int64)
    head = np.full(capacity + 1, -1, np.int64)
    below = np.full(n, -1, np.int64)
    free = np.zeros(n, np.int64)
    rows = np.empty(n, np.int64)
    opened = 0
    for i in range(n):
        need = lengths[i]
        value = _smallest_at_least(count, size, need)
        if value >= 0:
            row = head[value]
            head[value] = below[row]
            leaf = value + size
            while leaf >= 1:
                count[leaf] -= 1
                leaf //= 2
        else:
            row = opened
            opened += 1
            free[row] = capacity
        rows[i] = row
        free[row] -= need
        value = free[row]
        below[row] = head[value]
        head[value] = row
        leaf = value + size
        while leaf >= 1:
            count[leaf] += 1
            leaf //= 2
    return rows, opened


# ---------------------------------------------------------------- strategies


def _plan_from_rows(strategy, capacity, document, start, length, rows, row_count, truncated,
                    dropped_documents) -> PackPlan:
    order = np.argsort(rows, kind="stable")
    return PackPlan(strategy=strategy, capacity=capacity, row=rows[order], document=document[order],
                    start=start[order], length=length[order], rows=int(row_count),
                    truncated_tokens=truncated, dropped_documents=dropped_documents)


def pack(lengths: np.ndarray, capacity: int, strategy: str = "best_fit_decreasing", overlong: str = "truncate",
         window: int = 256, buffer_rows: int = 8) -> PackPlan:
    """A pack plan for documents of these lengths (e.g. an `.idx`'s `sequence_lengths`)."""
    _check_parameters(capacity=capacity, overlong=overlong, strategy=strategy, window=window, buffer_rows=buffer_rows)
    lengths, dropped_documents = _without_dropped(np.asarray(lengths, dtype=np.int64), capacity, overlong)
    if strategy == "concat":
        return _concat(lengths, capacity, dropped_documents)
    if strategy == "streaming":
        segments = list(stream_pack(iter(lengths.tolist()), capacity, buffer_rows, overlong))
        return _plan_from_stream(rows=segments, capacity=capacity, lengths=lengths, overlong=overlong,
                                 dropped_documents=dropped_documents)
    document, start, length, truncated = _pieces(lengths, capacity, overlong)
    if strategy == "pad":
        rows, count = np.arange(document.size, dtype=np.int64), document.size
    elif strategy == "next_fit":
        rows, count = _next_fit(length, capacity)
    elif strategy == "first_fit":
        rows, count = _first_fit(length, capacity)
    elif strategy == "best_fit_decreasing":
        order = np.argsort(-length, kind="stable")
        sorted_rows, count = _best_fit(length[order], capacity)
        rows = np.empty_like(sorted_rows)
        rows[order] = sorted_rows
    else:
        rows, count = _window(length, capacity, window)
    return _plan_from_rows(strategy=strategy, capacity=capacity, document=document, start=start, length=length,
                           rows=rows, row_count=count, truncated=truncated, dropped_documents=dropped_documents)


def _concat(lengths: np.ndarray, capacity: int, dropped_documents: int) -> PackPlan:
    """Every token in order, cut into rows of `capacity` (the last row may be short)."""
    present = np.flatnonzero(lengths > 0)
    sizes = lengths[present]
    ends = np.cumsum(sizes)
    total = int(ends[-1]) if ends.size else 0
    cuts = np.arange(capacity, total, capacity)
    boundaries = np.union1d(np.concatenate([[0], ends]), cuts)  # document ends and row cuts
    seg_start, seg_end = boundaries[:-1], boundaries[1:]
    k = np.searchsorted(ends, seg_start, side="right")
    return PackPlan(strategy="concat", capacity=capacity, row=(seg_start // capacity).astype(np.int64),
                    document=present[k].astype(np.int64), start=(seg_start - (ends[k] - sizes[k])).astype(np.int64),
                    length=(seg_end - seg_start).astype(np.int64),
                    rows=-(-total // capacity), truncated_tokens=0, dropped_documents=dropped_documents)


def _window(length: np.ndarray, capacity: int, window: int):
    rows = np.empty(length.size, np.int64)
    opened = 0
    for begin in range(0, length.size, window):
        part = length[begin:begin + window]
        order = np.argsort(-part, kind="stable")
        local, count = _first_fit(part[order], capacity)
        placed = np.empty_like(local)
        placed[order] = local
        rows[begin:begin + window] = placed + opened
        opened += count
    return rows, opened


def stream_pack(lengths: Iterable[int], capacity: int, buffer_rows: int = 8,
                overlong: str = "truncate") -> Iterator[list[tuple[int, int, int]]]:
    """Rows as they fill, from an iterator of document lengths, holding at most `buffer_rows` open rows.

    Each document goes into the first open row with room; when none has room and the buffer is full,
    the fullest row is emitted. Memory is bounded by the buffer, whatever the corpus size.
    """
    _check_parameters(capacity, overlong, buffer_rows=buffer_rows)
    return _stream_rows(lengths, capacity, buffer_rows, overlong)


def _stream_rows(lengths: Iterable[int], capacity: int, buffer_rows: int,
                 overlong: str) -> Iterator[list[tuple[int, int, int]]]:
    open_rows: list[list[tuple[int, int, int]]] = []
    free: list[int] = []
    for document, size in enumerate(lengths):
        for start, piece in _stream_pieces(size, capacity, overlong):
            if piece <= 0:
                continue
            target = next((i for i, f in enumerate(free) if f >= piece), None)
            if target is None:
                if len(open_rows) >= buffer_rows:
                    fullest = min(range(len(free)), key=free.__getitem__)
                    yield open_rows.pop(fullest)
                    free.pop(fullest)
                open_rows.append([])
                free.append(capacity)
                target = len(open_rows) - 1
            open_rows[target].append((document, start, piece))
            free[target] -= piece
    yield from open_rows


def _stream_pieces(size: int, capacity: int, overlong: str) -> list[tuple[int, int]]:
    """(start, length) of the pieces of one document that the stream packs."""
    if size <= capacity:
        return [(0, size)]
    if overlong == "truncate":
        return [(0, capacity)]
    if overlong == "drop":
        return []
    return [(start, min(capacity, size - start)) for start in range(0, size, capacity)]


def _plan_from_stream(rows: list[list[tuple[int, int, int]]], capacity: int, lengths: np.ndarray,
                      overlong: str, dropped_documents: int) -> PackPlan:
    flat = [(r, d, s, n) for r, segments in enumerate(rows) for d, s, n in segments]
    array = np.array(flat, dtype=np.int64).reshape(-1, 4)
    truncated = int(np.maximum(lengths - capacity, 0).sum()) if overlong == "truncate" else 0
    return PackPlan(strategy="streaming", capacity=capacity, row=array[:, 0], document=array[:, 1],
                    start=array[:, 2], length=array[:, 3], rows=len(rows), truncated_tokens=truncated,
                    dropped_documents=dropped_documents)


# ---------------------------------------------------------------- metrics


def plan_metrics(plan: PackPlan, ranks: int = 1) -> dict:
    """What a plan wastes and how it spreads: padding, truncation, fragments, documents per row, balance."""
    fill = plan.row_fill()
    used = int(fill.sum())
    slots = plan.rows * plan.capacity
    segments_per_document = np.bincount(plan.document)
    per_rank = np.array([fill[r::ranks].sum() for r in range(ranks)], dtype=np.int64)
    return {
        "strategy": plan.strategy,
        "rows": plan.rows,
        "tokens": used,
        "padding_fraction": 1 - used / slots if slots else 0.0,
        "truncated_tokens": plan.truncated_tokens,
        "dropped_documents": plan.dropped_documents,
        "fragmented_documents": int((segments_per_document > 1).sum()),
        "documents_per_row": float(np.bincount(plan.row, minlength=plan.rows).mean()) if plan.rows else 0.0,
        "fill_histogram": np.histogram(fill / plan.capacity, bins=10, range=(0, 1))[0].tolist(),
        "rank_token_imbalance": float(per_rank.max() / per_rank.mean()) if per_rank.mean() else 1.0,
    }


# ---------------------------------------------------------------- batch tensors


def rows_batch(rows: list[list[np.ndarray]], capacity: int, pad_id: int = 0) -> dict[str, torch.Tensor]:
    """The batch layout of `helpers.datasets.layout` for rows given as the token arrays of their segments, in order.

    Padding is `pad_id` with document id -1; labels are the next token of the same segment, else -100
    (padding, a document's last token, the cut end of a fragment); positions restart at every segment.
    """
    input_ids = torch.full((len(rows), capacity), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), capacity), IGNORE_INDEX, dtype=torch.long)
    document_ids = torch.full((len(rows), capacity), -1, dtype=torch.long)
    for b, segments in enumerate(rows):
        cursor = 0
        for k, piece in enumerate(segments):
            ids = torch.as_tensor(np.asarray(piece, dtype=np.int64))
            length = ids.numel()
            input_ids[b, cursor:cursor + length] = ids
            labels[b, cursor:cursor + length - 1] = ids[1:]
            document_ids[b, cursor:cursor + length] = k
            cursor += length
    return {"input_ids": input_ids, "labels": labels, "position_ids": positions_within_documents(document_ids),
            "document_ids": document_ids}


def packed_batch(plan: PackPlan, rows: Iterable[int], documents, pad_id: int = 0,
                 sdpa_mask: bool = False) -> dict[str, torch.Tensor]:
    """Some rows of a plan in the batch layout (see `rows_batch`); `documents[d]` gives document d's ids.
    With `sdpa_mask`, also the derived `attention_mask` ([B, 1, C, C], True = may attend)."""
    out = rows_batch([[documents[d][start:start + length] for d, start, length in plan.segments_of_row(r)]
                      for r in rows], plan.capacity, pad_id)
    if sdpa_mask:
        out["attention_mask"] = attention_mask(out["document_ids"])
    return out
