"""What a restart inside an epoch leaves in a stream: things trained on before (whole documents, or samples) come
back for the first time all at once, mixed with new ones. Counted step by step, judged against the stream's
history (`helpers.audit.document_replays` and the samples' own count in `helpers.audit.stream`).

Things come back in healthy training too, and none of these is a finding:
- exact duplicates in the corpus come back one at a time, at a steady rate;
- a new epoch brings back everything, and nothing new (the few rows a loader's drop_last left out of the epoch
  before aside): a step with `NEW_SHARE` of new ones or fewer ends the judgement of any window holding it (a
  window across an epoch's end is no restart);
- samplers that shuffle several epochs together (megatron-core's) bring things back at a rate that grows
  steadily from the start.
Over the last 2 to `WINDOW` steps, the first returns must be more than a Poisson count at `RATIO` times the
earlier rate gives with odds of `ODDS`, that rate taken over at least `HISTORY` times as many things (a stream of
random windows, nanoGPT's, brings documents back fast from its first steps: a rate read off two steps says
nothing). A return counts only from `FAR_BACK` steps after it was first seen, so the stream's first `FAR_BACK`
steps can hold none: they are left out of the history, whose rate would otherwise read 0 however many copies the
corpus holds, and the copies' first returns, once they may count, a jump.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

RATIO = 4.0
ODDS = 1e-7
WINDOW = 8
NEW_SHARE = 0.25
FEWEST = 4  # first returns in the window before a jump is named
HISTORY = 4
FAR_BACK = 8  # a return counts when first seen this many steps back or more: copies sorted together (a corpus's
# duplicate paragraphs under group_by_length) land side by side, a restart brings back what came long before


def poisson_tail(count: int, mean: float) -> float:
    """P(X >= count) for X Poisson with `mean`."""
    if count <= 0:
        return 1.0
    term = total = math.exp(-mean)
    for k in range(1, count):
        term *= mean / k
        total += term
    return max(0.0, 1.0 - total)


@dataclass
class Jump:
    """A window's first returns against the history before it."""

    returned: int
    count: int
    steps: int
    earlier_returned: int
    earlier: int

    def rates(self) -> str:
        return (f"{self.returned} of the {self.count} of the last {self.steps} step(s), against "
                f"{self.earlier_returned} of {self.earlier} before (a rate {self.returned / self.count:.0%} against "
                f"{self.earlier_returned / self.earlier:.1%})")


class FirstReturns:
    """Per step: (things looked at, of them new, of them back for the first time); `jump()` judges the newest."""

    def __init__(self):
        self.recent: deque[tuple[int, int, int]] = deque(maxlen=WINDOW)
        self.total = self.total_returned = 0
        self.steps = 0  # steps added, those too early to hold a return included

    def add(self, count: int, new: int, returned: int) -> None:
        self.steps += 1
        if self.steps <= FAR_BACK:  # nothing can count as back yet: no history, no judgement
            return
        self.recent.append((count, new, returned))
        self.total, self.total_returned = self.total + count, self.total_returned + returned

    def jump(self) -> Jump | None:
        for steps in range(2, len(self.recent) + 1):  # a restart goes on: one odd step is not one
            recent = list(self.recent)[-steps:]
            if any(count and new <= NEW_SHARE * count for count, new, _ in recent):
                return None  # an epoch's end or start: nothing new comes
            count, _, returned = (sum(values) for values in zip(*recent))
            earlier, earlier_returned = self.total - count, self.total_returned - returned
            if returned < FEWEST or earlier < HISTORY * count:
                continue
            if poisson_tail(returned, RATIO * (earlier_returned + 1) / (earlier + 1) * count) < ODDS:
                return Jump(returned=returned, count=count, steps=steps, earlier_returned=earlier_returned,
                            earlier=earlier)
        return None

    def state(self) -> dict:
        return {"total": self.total, "total_returned": self.total_returned, "steps": self.steps,
                "recent": [list(counts) for counts in self.recent]}

    def load_state(self, state: dict) -> None:
        self.total, self.total_returned = state["total"], state["total_returned"]
        self.steps = state.get("steps", FAR_BACK)  # a checkpoint from before steps were kept: counting already
        self.recent = deque((tuple(counts) for counts in state["recent"]), maxlen=WINDOW)
