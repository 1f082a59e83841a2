"""`repeated-documents`: documents trained on again inside an epoch, whatever rows they are cut into (a resumed
run that restarts its data with a new shuffle and a new packing while its steps go on).

A whole document is known again when its first `KEY_TOKENS` ids and its last `KEY_TOKENS` (all of it, when
shorter) were both seen at earlier steps, in any row, whole or cut: a document that an earlier packing cut across
two rows is known by its two ends. Only a document's first return counts: a corpus's copies of one clause come
back again and again, while a restart brings back documents seen once. What is a jump, and what healthy training
brings back without one: `helpers.audit.returns`.
"""

from __future__ import annotations

import numpy as np
import xxhash

from .documents import Documents
from .returns import FAR_BACK, FirstReturns
from .sightings import Sightings

KEY_TOKENS = 16
PAIRING = 0x9E3779B97F4A7C15  # a whole document's key: its first key times this, plus its last


def _key(part: np.ndarray) -> int:
    return xxhash.xxh3_64_intdigest(np.ascontiguousarray(part, np.int64).tobytes()) ^ part.size


class DocumentReplays:
    """A stream's whole documents, known or new, step by step, and the first ends seen of every document."""

    def __init__(self, remember: int):
        self.firsts = Sightings(remember)
        self.lasts = Sightings(remember)
        self.returned = Sightings(remember)  # whole documents that came back once already
        self.counts = FirstReturns()

    def look(self, ids: np.ndarray, found: Documents, step: int) -> str | None:
        """The finding's line when this step's known documents are a jump, else None; then this batch's ends
        entered as seen."""
        whole_firsts, whole_lasts = self._whole_keys(ids, found)
        firsts, lasts = self._ends(ids, found)
        firsts, lasts = firsts + whole_firsts, lasts + whole_lasts
        sighted = list(zip(self.firsts.get_many(whole_firsts), self.lasts.get_many(whole_lasts)))
        known = [first is not None and last is not None and max(first, last) < step for first, last in sighted]
        far = [is_known and max(first, last) <= step - FAR_BACK for is_known, (first, last) in zip(known, sighted)]
        both = [(first * PAIRING + last) % (1 << 64) for first, last in zip(whole_firsts, whole_lasts)]
        again = self.returned.get_many(both)
        returns = list({key for key, back, earlier in zip(both, far, again) if back and earlier is None})
        self.counts.add(len(found.whole), len(known) - sum(known), len(returns))
        jump = self.counts.jump()
        self.firsts.add_many(firsts, [step] * len(firsts))
        self.lasts.add_many(lasts, [step] * len(lasts))
        self.returned.add_many(returns, [step] * len(returns))
        if jump is None:
            return None
        return (f"whole documents back for the first time, trained on at earlier steps: {jump.rates()}, while new "
                "documents still come: the data restarted inside an epoch with a new shuffle, as a resumed run does "
                "when it rebuilds its loader instead of restoring it; fix: resume from the loader's saved state (or "
                "skip the samples already trained on with the same seed), and keep the shuffle's seed in the "
                "checkpoint")

    @staticmethod
    def _ends(ids: np.ndarray, found: Documents) -> tuple[list[int], list[int]]:
        """Keys of every document's first ids (from each start) and last ids (before each EOD), where a row holds
        `KEY_TOKENS` of them (a whole document's, whatever its length, come from `_whole_keys`)."""
        firsts = [_key(ids[row, column:column + KEY_TOKENS]) for row, column in found.starts
                  if column + KEY_TOKENS <= ids.shape[1]]
        rows, columns = np.nonzero(found.ends)
        lasts = [_key(ids[row, column - KEY_TOKENS:column]) for row, column in zip(rows, columns)
                 if column >= KEY_TOKENS]
        return firsts, lasts

    @staticmethod
    def _whole_keys(ids: np.ndarray, found: Documents) -> tuple[list[int], list[int]]:
        firsts = [_key(ids[row, start:min(end, start + KEY_TOKENS)]) for row, start, end in found.whole]
        lasts = [_key(ids[row, max(start, end - KEY_TOKENS):end]) for row, start, end in found.whole]
        return firsts, lasts

    def state(self, before: int) -> dict:
        """What a checkpoint keeps (the ends seen at steps before `before`, the counts), JSON-ready."""
        return {"firsts": self.firsts.state(before), "lasts": self.lasts.state(before),
                "returned": self.returned.state(before), "counts": self.counts.state()}

    def load_state(self, state: dict) -> None:
        capacity = self.firsts.capacity
        self.firsts = Sightings.from_state(capacity, state["firsts"])
        self.lasts = Sightings.from_state(capacity, state["lasts"])
        self.returned = Sightings.from_state(capacity, state["returned"])
        self.counts.load_state(state["counts"])
