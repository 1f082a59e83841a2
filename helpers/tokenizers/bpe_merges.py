"""The one merge each token of a tiktoken vocabulary is made by, for a merges-list BPE that reads faster.

tiktoken merges, at every step, the neighbouring pair whose join has the lowest rank. Inside the span that
ends up as one token, no pair across the span's edges is merged before that token forms, so the merges
inside the span are exactly those of encoding the token's bytes alone, down to the last two parts: the
token is always made from the same two halves. Those merges may pass through a token of higher rank (in
Llama 3, ".:.:" is made from ".:." and ":"), so all ranks take part. A merges list therefore needs one
entry per token, not one per way of cutting it in two (Llama 3: 127,156 merges instead of 280,147;
fastokens reads the file in 0.75 s, not 1.0). A token whose bytes alone get stuck at three parts or more
is never made by a merge; tiktoken gives it only for a whole piece, as `ignore_merges` does. The encoders
module proves the resulting encoder against tiktoken, on every token of the vocabulary in context too,
before it is used.
"""

from __future__ import annotations


def halves(token: bytes, ranks: dict[bytes, int]) -> tuple[bytes, bytes] | None:
    """The two tokens tiktoken makes `token` from (its merging of the token's bytes, stopped at two parts),
    or None for a single byte or a token that no merge makes."""
    parts = [token[i:i + 1] for i in range(len(token))]
    while len(parts) > 2:
        best, where = None, -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best is None or rank < best):
                best, where = rank, i
        if where < 0:
            return None
        parts[where:where + 2] = [parts[where] + parts[where + 1]]
    return (parts[0], parts[1]) if len(parts) == 2 else None


def one_merge_per_token(ranks: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    """Each mergeable token's two halves, in the order of the tokens' ranks (a merges list's priority)."""
    merges = []
    for token in sorted(ranks, key=ranks.get):
        pair = halves(token, ranks) if len(token) > 1 else None
        if pair is not None:
            merges.append(pair)
    return merges
