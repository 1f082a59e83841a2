"""The numbers each check of `helpers.audit` rests on, for one batch, with no state.

Random ids. Real text repeats itself: spaces, punctuation, "the", indentation come back within a few
hundred tokens. Ids drawn uniformly from V values collide like birthdays: the equal pairs among n of them
have mean n(n-1)/2V and about that variance. Evidence is counted in equal pairs, which grow with the square
of the tokens looked at, so the audit looks at as many tokens as it can before it decides:

- each row of 128 tokens or more, in windows of up to `WINDOW` (256) tokens: a row whose second half was
  replaced is caught, and so is one random row among real ones;
- the batch's tokens together (with the rows of the steps before when the batch holds fewer than `POOLED`
  tokens): a fallback is caught whatever the rows' length, 16 tokens included, at the latest once `POOLED`
  tokens have come. Those pooled tokens are compared with a uniform draw over the range of ids they span
  (smallest to largest), so `torch.randint(0, 100)` under a 128k vocabulary is caught as well as
  `torch.randint(0, V)`.

Evidence looks uniform when its equal pairs stay within the uniform mean plus `SIGMAS` standard deviations
plus `SLACK` (`uniform_bound`). Real text clears it by far more: the margins per tokenizer, text kind and row
length are `benchmarks/audit_margins.py`'s. What it costs: a random row shorter than 128 tokens among real
rows of the same batch is not caught (its pairs drown in theirs), and on rows under 128 tokens with fewer
than `POOLED` tokens a batch, a fallback is named a step or a few after it starts.

Wrapped ids. A vocabulary above 65,536 kept in uint16 loses the top bit of every id from 65,536 up. Real
text uses those ids for about 2% of its tokens in Llama 3 and cl100k, but in runs: code, hex dumps and
logs go thousands of tokens without one. `WRAP_TOKENS` tokens with none is a finding (a batch handed over as
uint16 for such a vocabulary is one at once).
"""

from __future__ import annotations

import math

import numpy as np

WINDOW = 256  # most tokens per window of the per-row random-ids test
SHORTEST_ROW = 128  # rows shorter than this are only tested pooled
POOLED = 1024  # tokens pooled across rows (and steps) for the pooled test
SIGMAS, SLACK = 7.0, 3.0
WRAP_LIMIT = 1 << 16
WRAP_TOKENS = 16_384  # tokens without an id >= 65,536 before a large vocabulary counts as wrapped
MATCHES = 0.99  # share of label positions that must agree for a label layout to count as the one used
CHANCE = 10_000  # a replay's run must be longer than a reshuffle makes in 1 of this many runs
EXACT_CHANCE = 1000  # a whole batch dealt again in order: named where a reshuffle does so less often than this
SHORTEST_RUN, LONGEST_RUN = 3, 16


def uniform_bound(length: int, values: int) -> tuple[float, float]:
    """(mean equal pairs among `length` ids drawn uniformly from `values` values, the most pairs evidence
    may have to count as such a draw). Few ids among many values collide rarely, about as a Poisson count
    does: its mean plus `SIGMAS` standard deviations plus `SLACK`. Many ids among few values give pairs
    that are a chi-square statistic with values - 1 degrees of freedom, rescaled, whose right tail is
    longer: its `SIGMAS`-sigma point (Wilson and Hilferty's cube-root approximation). The larger of the two."""
    mean = length * (length - 1) / (2 * values)
    sparse = mean + SIGMAS * math.sqrt(mean) + SLACK
    freedom = values - 1
    if freedom < 1:
        return mean, sparse
    spread = 2 / (9 * freedom)
    chi_square = freedom * (1 - spread + SIGMAS * math.sqrt(spread)) ** 3
    return mean, max(sparse, length / (2 * values) * (chi_square + length - values))


def window_pairs(windows: np.ndarray) -> np.ndarray:
    """Equal pairs in each row of `windows`, all rows at once: sorted, each position counts the equal ids
    before it in its run."""
    ordered = np.sort(windows, axis=1)
    index = np.broadcast_to(np.arange(ordered.shape[1]), ordered.shape)
    starts = np.ones(ordered.shape, bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    run_start = np.maximum.accumulate(np.where(starts, index, 0), axis=1)
    return (index - run_start).sum(axis=1)


def row_windows(ids: np.ndarray) -> np.ndarray:
    """The windows of the per-row test: each row cut into windows of `WINDOW` tokens (a row of 128 to 255
    tokens is one window, a shorter one none); empty for short rows."""
    rows, length = ids.shape
    if length < SHORTEST_ROW:
        return ids[:0, :0]
    size = min(WINDOW, length)
    count = length // size
    return ids[:, :count * size].reshape(rows * count, size)


def uniform_windows(ids: np.ndarray, vocab_size: int) -> tuple[int, int, float, float, float]:
    """Over `row_windows(ids)`: (windows, windows that look uniform over the vocabulary, the fewest equal
    pairs a window had, a uniform draw's mean pairs and the bound for a window)."""
    windows = row_windows(ids)
    if not windows.size:
        return 0, 0, math.inf, 0.0, 0.0
    pairs = window_pairs(windows)
    mean, bound = uniform_bound(windows.shape[1], vocab_size)
    return len(pairs), int((pairs <= bound).sum()), float(pairs.min()), mean, bound


def pooled_pairs(ids: np.ndarray) -> tuple[int, int, int]:
    """(tokens, equal pairs among them, the values their range spans) of ids pooled together."""
    flat = ids.reshape(1, -1)
    return flat.size, int(window_pairs(flat)[0]), int(flat.max()) - int(flat.min()) + 1


def replay_run_needed(distinct: int, looked_at: int) -> int:
    """Samples in a row, back in their earlier order, before a replay is named. A reshuffled epoch puts each
    sample after the one that followed it before with odds of about 1/distinct, so k in a row happen by chance
    about looked_at * distinct**-(k-1) times in a stream: the shortest k that keeps it under 1/CHANCE, at
    least SHORTEST_RUN (rulers and log lines that recur) and at most LONGEST_RUN (a tiny dataset's loop is
    named after that many samples). A replay's run grows by the batch every step, so it is named all the same:
    at once for a batch of 8 over a few hundred samples, later for a batch of 1 or a dataset of a few dozen."""
    if distinct < 2:
        return LONGEST_RUN
    needed = 1 + math.ceil(math.log(CHANCE * max(looked_at, 1)) / math.log(distinct))
    return min(LONGEST_RUN, max(SHORTEST_RUN, needed))


def unigram_entropy(counts: np.ndarray) -> float:
    """Entropy in nats of the ids' frequencies."""
    counts = counts[counts > 0]
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def label_matches(ids: np.ndarray, labels: np.ndarray, ignore_index: int) -> dict[str, float | None]:
    """Share of the label positions (ignored ones aside) where labels equal the ids at the same place
    ("same"), one place on ("shifted") and two places on ("shifted twice"); None where none is compared."""
    shares = {}
    for name, shift in (("same", 0), ("shifted", 1), ("shifted twice", 2)):
        if ids.shape[1] <= shift:
            shares[name] = None
            continue
        y = labels[:, :labels.shape[1] - shift]
        x = ids[:, shift:]
        used = y != ignore_index
        shares[name] = float((y[used] == x[used]).mean()) if used.any() else None
    return shares


def _edge_runs(pads: np.ndarray) -> np.ndarray:
    """The run of True that ends each row, and the one that starts it (left padding)."""
    trailing = np.flip(np.cumprod(np.flip(pads, axis=1), axis=1), axis=1).astype(bool)
    leading = np.cumprod(pads, axis=1).astype(bool)
    return trailing | leading


def padding_positions(ids: np.ndarray, attention_mask: np.ndarray | None, pad_id: int | None,
                      eod_id: int | None) -> np.ndarray:
    """Where a row is padding: the attention mask's zeros, else ids equal to `pad_id`. Where the pad id may
    also end a document (it is `eod_id`, or no `eod_id` was given, as with Hugging Face's pad = eos), only
    the run of it at a row's end or start is padding, less its first token at the end (the document's own
    end, which a model learns to predict)."""
    if attention_mask is not None:
        return attention_mask == 0
    if pad_id is None:
        return np.zeros(ids.shape, bool)
    pads = ids == pad_id
    if eod_id is not None and pad_id != eod_id:
        return pads
    edges = _edge_runs(pads)
    first_of_trailing = edges & ~np.roll(edges, 1, axis=1)
    first_of_trailing[:, 0] = False  # a leading run is padding throughout
    return edges & ~first_of_trailing
