"""GPT-3's span removal: each matching n-gram goes with `WINDOW` characters on either side, the pieces of the document
left between the cuts are kept when they hold at least `SHORTEST_PIECE` characters, and a document cut into more
than `MOST_PIECES` pieces is dropped whole (the GPT-3 paper's numbers, 200, 200 and 10).

lm-eval-harness's janitor counts matching n-grams against the ten rather than pieces, so one pasted passage of 23
words or more (eleven overlapping 13-grams) drops its document there; here the cuts are merged first, so a passage
costs its one cut, and only a document with leaks in more than ten places is dropped for it."""

from __future__ import annotations

WINDOW, SHORTEST_PIECE, MOST_PIECES = 200, 200, 10


def cuts(spans: list[tuple[int, int]], size: int, window: int = WINDOW) -> list[tuple[int, int]]:
    """The character ranges removed from a text of `size` characters for matches at `spans`: each widened by
    `window` on either side, clipped to the text, overlapping or touching ones merged, in order."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        start, end = max(0, start - window), min(size, end + window)
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def pieces(text: str, spans: list[tuple[int, int]], window: int = WINDOW,
           shortest: int = SHORTEST_PIECE) -> list[str]:
    """The pieces of `text` kept when the matches at `spans` are cut out (see the module docstring)."""
    kept, position = [], 0
    for start, end in [*cuts(spans, len(text), window), (len(text), len(text))]:
        if start - position >= shortest:
            kept.append(text[position:start])
        position = end
    return kept
