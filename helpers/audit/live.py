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
from .eval_overlap import eval_overlap
from .report import Finding, Report
from .sightings import Sightings, sighting
from .settings import AuditSettings
from .stream import Seen, StreamAudit, batch_digests, read_batch


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
    """One rank's live audit of a run described by `settings` (an `AuditSettings`, or its fields as keywords:
    `Auditor(vocab_size=V, labels="shifted")`); `on_finding` "raise" (the default) or "warn" (each code once).

    `remember`: how many sample digests (all ranks' together) are kept to find replays by, and as many batch
    digests; the newest are kept, the oldest forgotten. Its memory stays bounded over a run of any length:
    16 bytes a digest, plus about 100 for the newest sixteenth, and a quarter as many keys of documents and of
    samples back for the first time, so a few hundred MB at most at the default of 2,097,152, whatever the number
    of steps (`benchmarks/audit_memory.py`: 88 MB by 200,000 steps of 8 x 1,024, still filling).
    What the bound costs: a replay of samples first seen more than `remember` samples ago (counting every
    rank's) is not named, so a sampler whose epoch never advances goes unnamed when an epoch holds more
    samples than that (a million steps of 8 rows on one rank hold 8 million).
    Raise it for such runs, at 16 bytes a sample.

    `overlap` (an `helpers.audit.eval_overlap.EvalOverlap`): each batch is also searched for evaluation items'
    n-grams (`eval-overlap`). Or it is built here, once, from `evals` (`helpers.decontamination.EvalSet`s, e.g.
    `load_evals(["humaneval"])`) with the run's `tokenizer`, n-grams of `eval_ngram` tokens; a `vocab-mismatch`
    finding names the `tokenizer`'s size where it is given."""

    def __init__(self, settings: AuditSettings | None = None, *, on_finding: str = "raise", overlap=None,
                 evals: list | None = None, tokenizer=None, eval_ngram: int | None = None, **named):
        if on_finding not in ("raise", "warn"):
            raise ValueError(f"on_finding={on_finding!r}: expected 'raise' or 'warn'")
        if tokenizer is not None:
            named.setdefault("tokenizer_vocab", getattr(tokenizer, "vocab_size", None))
        self.settings = AuditSettings.given(settings, named, "Auditor")
        dist = _distributed()
        self.rank = dist.get_rank() if dist else 0
        if overlap is None:
            overlap = eval_overlap(evals, tokenizer, eval_ngram, self.settings.eod_id)
        elif evals:
            raise ValueError("evals= and overlap= both given; fix: pass one of them")
        self.stream = StreamAudit(self.settings, self.rank, overlap=overlap)
        self.on_finding = on_finding
        self._report = Report()

    def step(self, batch) -> list[Finding]:
        """Audit the batch about to be trained on; every rank calls it at every step (it gathers)."""
        read = read_batch(batch, self.stream.step, self.settings.ignore_index)
        digests = batch_digests(read.input_ids)
        dist = _distributed()
        if dist is not None:
            self._share(digests, dist)
        found = self.stream.examine(read, digests)
        new = [finding for finding in found if self._report.add(finding)]
        if found and self.on_finding == "raise":
            raise DataBugError(found[0])
        for finding in new:
            warnings.warn(finding.line(), stacklevel=2)
        return found

    @property
    def report(self) -> Report:
        """The findings so far, each code once (`steps_with` counts the rest), with the statistics of this
        rank's stream."""
        self._report.statistics = {self.rank: self.stream.statistics()}
        return self._report

    def _share(self, digests: tuple[int, list[int]], dist) -> None:
        """Every rank's batch and sample digests of this step, entered as seen on their ranks at this step."""
        everyone: list = [None] * dist.get_world_size()
        dist.all_gather_object(everyone, digests)
        for rank, theirs in enumerate(everyone):
            if rank != self.rank:
                self.stream.seen.enter(theirs, self.stream.step, rank)

    def state_dict(self, unused: int = 0) -> dict:
        """What a checkpoint keeps: the digests seen and where the stream stands. `unused`: the last batches
        audited but not trained on (staged ahead for a GPU) are left out, so that a run resumed from this
        state takes them again without a finding."""
        stream = self.stream
        until = sighting(stream.step - unused, 0, 0)
        last = stream.last_sighting if not unused else None
        return {"version": 2, "step": stream.step - unused, "tokens": stream.tokens, "high_ids": stream.high_ids,
                "last_sighting": last, "chain": stream.chain if not unused else 0, "looked_at": stream.looked_at,
                "batches": stream.seen.batches.state(until), "samples": stream.seen.samples.state(until),
                "documents": stream.replays.state(stream.step - unused), "batch_sets": stream.batch_sets.state(
                    stream.step - unused), "by_rank": [stream.from_other_ranks, stream.from_own_rank],
                "sample_returns": stream.sample_returns.state(),
                "returned_samples": stream.returned_samples.state(stream.step - unused)}

    def load_state_dict(self, state: dict) -> None:
        stream, remember = self.stream, self.settings.remember
        stream.step, stream.tokens, stream.high_ids = state["step"], state["tokens"], state["high_ids"]
        stream.last_sighting, stream.chain = state.get("last_sighting"), state.get("chain", 0)
        stream.looked_at = state.get("looked_at", 0)
        stream.seen = Seen(remember)
        if state.get("version", 1) == 1:  # {digest: step * 2**20 + rank}
            def older(sightings: dict) -> dict:
                return {k: sighting(v >> 20, 0, v & 0xFFFFF, last=True) for k, v in sightings.items()}
            state = {**state, "batches": older(state["batches"]), "samples": older(state["samples"])}
        stream.seen.batches = Sightings.from_state(remember, state["batches"])
        stream.seen.samples = Sightings.from_state(remember, state["samples"])
        if "documents" in state:  # states saved before documents were kept start them afresh
            stream.replays.load_state(state["documents"])
            stream.batch_sets = Sightings.from_state(remember, state["batch_sets"])
            stream.from_other_ranks, stream.from_own_rank = state["by_rank"]
            stream.sample_returns.load_state(state["sample_returns"])
            stream.returned_samples = Sightings.from_state(stream.returned_samples.capacity, state["returned_samples"])


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
        """The loader's state with the auditor's beside it (under "audit"), for a checkpoint; the auditor's
        alone for a loader that keeps no state (a torch DataLoader)."""
        own = getattr(self.batches, "state_dict", None)
        loader = {} if own is None else own(unused=unused) if unused else own()
        return {**loader, "audit": self.auditor.state_dict(unused=unused)}

    def load_state_dict(self, state: dict) -> None:
        if hasattr(self.batches, "load_state_dict"):
            self.batches.load_state_dict({key: value for key, value in state.items() if key != "audit"})
        if "audit" in state:
            self.auditor.load_state_dict(state["audit"])

    def __getattr__(self, name: str):
        return getattr(self.__dict__["batches"], name)
