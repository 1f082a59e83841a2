"""The one merge each token of a tiktoken vocabulary is made by, for a merges-list BPE that reads faster.

tiktoken merges, at every step, the neighbouring pair whose join has the lowest rank. Inside the span that
ends up as one token, no pair across the span's edges is merged before that token forms, so the merges
inside the span are those of encoding the token's bytes alone, with only the lower ranks: the token is
always made from the same two halves. A merges list needs one entry per token, not one per way of cutting
it in two (Llama 3: 128k merges instead of 280k, and fastokens reads the file in half the time). A token
whose bytes alone do not come back to two halves (Llama 3 has a few, such as ".:.:") is never made by a
merge; tiktoken gives it only for a whole piece, as `ignore_merges` does. The encoders module still proves
the resulting encoder against tiktoken before it is used.
"""

from __future__ import annotations


def halves(token: bytes, ranks: dict[bytes, int]) -> tuple[bytes, bytes] | None:
    """The two tokens `token` is merged from (tiktoken's merging of its bytes with the lower ranks only),
    or None for a single byte or a token that no merge makes."""
    limit = ranks[token]
    parts = [token[i:i + 1] for i in range(len(token))]
    while len(parts) > 2:
        best, where = limit, -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1], limit)
            if rank < best:
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
