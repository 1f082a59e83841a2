"""`repeated-documents`: documents trained on again inside an epoch, whatever rows they are cut into (a resumed
run that restarts its data with a new shuffle and a new packing while its steps go on).

A whole document is known again when its first `KEY_TOKENS` ids and its last `KEY_TOKENS` (all of it, when
shorter) were both seen at earlier steps, in any row, whole or cut: a document that an earlier packing cut across
two rows is known by its two ends. Documents come back in healthy training too, in three ways, and none is a
finding:

- exact duplicates in the corpus come back one at a time, at a steady rate;
- a new epoch brings back every document, and no new one (`NEW_SHARE` of new documents or fewer);
- samplers that shuffle several epochs together (megatron-core's) bring documents back at a rate that grows
  steadily from the start.
A restart with a new shuffle brings them back all at once, mixed with new ones: the share of documents back for
the first time jumps at one step from what came before. Only a document's first return counts: a corpus's
copies of one clause come back again and again, while a restart brings back documents seen once. Over the last 1 to `WINDOW` steps, the known documents must be more
than a Poisson count at `RATIO` times the earlier rate gives with odds of `ODDS`, that rate taken over at least
`HISTORY` times as many documents (a stream of random windows, nanoGPT's, brings documents back fast from its
first steps: a rate read off two steps says nothing).
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np
import xxhash

from .documents import Documents
from .sightings import Sightings

KEY_TOKENS = 16
RATIO = 4.0
ODDS = 1e-7
WINDOW = 4
NEW_SHARE = 0.1
FEWEST = 4  # known documents in the window before a jump is named
PAIRING = 0x9E3779B97F4A7C15  # a whole document's key: its first key times this, plus its last
HISTORY = 8  # the rate before a window is judged on this many times its documents, or more


def _key(part: np.ndarray) -> int:
    return xxhash.xxh3_64_intdigest(np.ascontiguousarray(part, np.int64).tobytes()) ^ part.size


def poisson_tail(count: int, mean: float) -> float:
    """P(X >= count) for X Poisson with `mean`."""
    if count <= 0:
        return 1.0
    term = total = math.exp(-mean)
    for k in range(1, count):
        term *= mean / k
        total += term
    return max(0.0, 1.0 - total)


class DocumentReplays:
    """A stream's whole documents, known or new, step by step, and the first ends seen of every document."""

    def __init__(self, remember: int):
        self.firsts = Sightings(remember)
        self.lasts = Sightings(remember)
        self.returned = Sightings(remember)  # whole documents that came back once already
        self.recent: deque[tuple[int, int, int]] = deque(maxlen=WINDOW)  # per step: (whole, new, first returns)
        self.total = self.total_known = 0  # over every step: whole documents, first returns

    def look(self, ids: np.ndarray, found: Documents, step: int) -> str | None:
        """The finding's line when this step's known documents are a jump, else None; then this batch's ends
        entered as seen."""
        firsts, lasts = self._ends(ids, found)
        whole_firsts, whole_lasts = self._whole_keys(ids, found)
        known = [first is not None and last is not None and first < step and last < step
                 for first, last in zip(self.firsts.get_many(whole_firsts), self.lasts.get_many(whole_lasts))]
        both = [(first * PAIRING + last) % (1 << 64) for first, last in zip(whole_firsts, whole_lasts)]
        again = self.returned.get_many(both)
        returns = [key for key, is_known, earlier in zip(both, known, again) if is_known and earlier is None]
        new = len(known) - sum(known)
        self.recent.append((len(found.whole), new, len(returns)))
        self.total, self.total_known = self.total + len(found.whole), self.total_known + len(returns)
        line = self._jump()
        self.firsts.add_many(firsts, [step] * len(firsts))
        self.lasts.add_many(lasts, [step] * len(lasts))
        self.returned.add_many(returns, [step] * len(returns))
        return line

    @staticmethod
    def _ends(ids: np.ndarray, found: Documents) -> tuple[list[int], list[int]]:
        """Keys of every document's first ids (from each start) and last ids (before each EOD), where a row holds
        `KEY_TOKENS` of them; and of each whole document's, whatever its length."""
        firsts = [_key(ids[row, column:column + KEY_TOKENS]) for row, column in found.starts
                  if column + KEY_TOKENS <= ids.shape[1]]
        rows, columns = np.nonzero(found.ends)
        lasts = [_key(ids[row, column - KEY_TOKENS:column]) for row, column in zip(rows, columns)
                 if column >= KEY_TOKENS]
        whole_firsts, whole_lasts = DocumentReplays._whole_keys(ids, found)
        return firsts + whole_firsts, lasts + whole_lasts

    @staticmethod
    def _whole_keys(ids: np.ndarray, found: Documents) -> tuple[list[int], list[int]]:
        firsts = [_key(ids[row, start:min(end, start + KEY_TOKENS)]) for row, start, end in found.whole]
        lasts = [_key(ids[row, max(start, end - KEY_TOKENS):end]) for row, start, end in found.whole]
        return firsts, lasts

    def state(self, before: int) -> dict:
        """What a checkpoint keeps (the ends seen at steps before `before`, the counts), JSON-ready."""
        return {"firsts": self.firsts.state(before), "lasts": self.lasts.state(before), "total": self.total,
                "total_known": self.total_known, "recent": [list(counts) for counts in self.recent],
                "returned": self.returned.state(before)}

    def load_state(self, state: dict) -> None:
        capacity = self.firsts.capacity
        self.firsts = Sightings.from_state(capacity, state["firsts"])
        self.lasts = Sightings.from_state(capacity, state["lasts"])
        self.total, self.total_known = state["total"], state["total_known"]
        self.returned = Sightings.from_state(capacity, state["returned"])
        self.recent = deque((tuple(counts) for counts in state["recent"]), maxlen=WINDOW)

    def _jump(self) -> str | None:
        for window in range(1, len(self.recent) + 1):
            recent = list(self.recent)[-window:]
            count, new, known = (sum(values) for values in zip(*recent))
            seen, seen_known = self.total - count, self.total_known - known
            if known < FEWEST or new <= NEW_SHARE * count or seen < HISTORY * count:
                continue
            mean = RATIO * (seen_known + 1) / (seen + 1) * count
            if poisson_tail(known, mean) < ODDS:
                return (f"{known} of the {count} whole documents of the last {window} step(s) come back for the first "
                        f"time, trained on at earlier steps in other rows, against {seen_known} of {seen} before (a rate {known / count:.0%}"
                        f" against {seen_known / seen:.1%}), while new documents still come: the data restarted "
                        "inside an epoch with a new shuffle, as a resumed run does when it rebuilds its loader "
                        "instead of restoring it; fix: resume from the loader's saved state (or skip the samples "
                        "already trained on with the same seed), and keep the shuffle's seed in the checkpoint")
        return None
