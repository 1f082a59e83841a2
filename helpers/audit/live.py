"""The audit inside a training loop, where the bugs happen: `Auditor.step(batch)` before each step runs
every check of `helpers.audit` on that batch and, under `torch.distributed`, compares the digests of every
rank's batch and samples (8 bytes each, gathered; never the batches), so the same batch on two ranks or a
rank an epoch behind is named at the step it happens. A finding raises `DataBugError` (or warns, as asked).
Its state (the digests, the step) goes into the checkpoint beside the loader's, so a resumed run that
replays batches it already trained on is named too.

    auditor = Auditor(vocab_size=tokenizer.vocab_size, labels="shifted")
    for batch in loader:
        auditor.step(batch)          # raises DataBugError on the first finding
        ...
    checkpoint["audit"] = auditor.state_dict()

    train(model, Audited(loader, auditor), settings)   # or around any loader a training function takes
"""

from __future__ import annotations

import warnings

from ..common.errors import UserError
from .report import Finding, Report
from .stream import RANK_SLOTS, AuditSettings, Seen, StreamAudit, batch_digests, read_batch


class DataBugError(UserError):
    """A batch the audit found wrong; the message is the finding's line (what was seen, the fix), so a
    command line ends with that one line and exit code 2, like any other bad input."""

    def __init__(self, finding: Finding):
        super().__init__(finding.line())
        self.finding = finding


def _distributed():
    """torch.distributed when it runs with more than one rank, else None."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return dist
    return None


class Auditor:
    """One rank's live audit; `on_finding` "raise" (the default) or "warn" (each code once)."""

    def __init__(self, *, vocab_size: int, labels: str | None = None, pad_id: int | None = None,
                 ignore_index: int = -100, eod_id: int | None = None, on_finding: str = "raise"):
        if on_finding not in ("raise", "warn"):
            raise ValueError(f"on_finding={on_finding!r}: expected 'raise' or 'warn'")
        self.settings = AuditSettings(vocab_size=vocab_size, labels=labels, pad_id=pad_id, ignore_index=ignore_index,
                                      eod_id=eod_id)
        dist = _distributed()
        self.rank = dist.get_rank() if dist else 0
        self.stream = StreamAudit(self.settings, self.rank)
        self.on_finding = on_finding
        self.report = Report()

    def step(self, batch) -> list[Finding]:
        """Audit the batch about to be trained on; every rank calls it at every step (it gathers)."""
        read = read_batch(batch, self.stream.step)
        digests = batch_digests(read.input_ids)
        dist = _distributed()
        if dist is not None:
            self._share(digests, dist)
        found = self.stream.examine(read, digests)
        new = [finding for finding in found if self.report.add(finding)]
        if found and self.on_finding == "raise":
            raise DataBugError(found[0])
        for finding in new:
            warnings.warn(finding.line(), stacklevel=2)
        return found

    def _share(self, digests: tuple[int, list[int]], dist) -> None:
        """Every rank's batch and sample digests of this step, entered as seen on their ranks at this step."""
        everyone: list = [None] * dist.get_world_size()
        dist.all_gather_object(everyone, digests)
        seen, step = self.stream.seen, self.stream.step
        for rank, (whole, rows) in enumerate(everyone):
            if rank == self.rank:
                continue
            seen.batches.setdefault(whole, step * RANK_SLOTS + rank)
            for row in rows:
                seen.samples.setdefault(row, step * RANK_SLOTS + rank)

    def state_dict(self, unused: int = 0) -> dict:
        """What a checkpoint keeps: the digests seen and where the stream stands. `unused`: the last batches
        audited but not trained on (staged ahead for a GPU) are left out, so that a run resumed from this
        state takes them again without a finding."""
        stream = self.stream
        until = (stream.step - unused) * RANK_SLOTS

        def before(sightings: dict) -> dict:
            return {digest: where for digest, where in sightings.items() if where < until}

        return {"version": 1, "step": stream.step - unused, "tokens": stream.tokens, "high_ids": stream.high_ids,
                "batches": before(stream.seen.batches), "samples": before(stream.seen.samples)}

    def load_state_dict(self, state: dict) -> None:
        stream = self.stream
        stream.step, stream.tokens, stream.high_ids = state["step"], state["tokens"], state["high_ids"]
        stream.seen = Seen({int(k): v for k, v in state["batches"].items()},
                           {int(k): v for k, v in state["samples"].items()})


class Audited:
    """`batches` with every batch audited before it is handed on; it stands in for a loader wherever one is
    taken: its state is the loader's with the auditor's beside it, and anything else (`source`,
    `fingerprint`) is the wrapped loader's."""

    def __init__(self, batches, auditor: Auditor):
        self.batches, self.auditor = batches, auditor

    def __iter__(self):
        for batch in self.batches:
            self.auditor.step(batch)
            yield batch

    def __len__(self) -> int:
        return len(self.batches)

    def state_dict(self, unused: int = 0) -> dict:
        """The loader's state with the auditor's beside it (under "audit"), for a checkpoint."""
        return {**self.batches.state_dict(unused=unused), "audit": self.auditor.state_dict(unused=unused)}

    def load_state_dict(self, state: dict) -> None:
        self.batches.load_state_dict(state)
        if "audit" in state:
            self.auditor.load_state_dict(state["audit"])

    def __getattr__(self, name: str):
        return getattr(self.__dict__["batches"], name)
