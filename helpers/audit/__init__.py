"""Is this batch real? An audit of the batches any training script hands its model, for the silent data
bugs: random ids from a fallback, the same batch on every rank, a stream that loops or replays, labels
shifted twice or not at all, padding in the loss, ids past the vocabulary or wrapped by uint16, a batch of
zeros.

- `audit(batches, vocab_size=...)` reads one rank's stream, `audit_ranks([...])` several, offline;
- `Auditor` audits a plain training loop live (`auditor.step(batch)`, or `Audited(loader, auditor)` in
  place of the loader), comparing ranks under torch.distributed; `AuditCallback` does it inside a Hugging
  Face `Trainer`; `--audit` does it in `python -m helpers.training` and the framework examples;
- `python -m helpers.audit FILES --vocab-size N` reads batches saved from someone else's run.

What the audit is told about the run (the model's vocabulary, its label layout, special ids) is one
`AuditSettings`, taken whole or as keywords. What each check measures and where its threshold comes from:
docs/audit.md, `helpers.audit.statistics` and `helpers.audit.stream`.
"""

from .report import CODES, Finding, Report
from .settings import AuditSettings
from .stream import audit, audit_ranks

__all__ = ["CODES", "AuditCallback", "AuditSettings", "Audited", "Auditor", "DataBugError", "Finding", "Report",
           "audit", "audit_ranks"]


def __getattr__(name: str):
    """The live parts on first use: `AuditCallback` imports transformers, which `audit` does not need."""
    if name in ("Audited", "Auditor", "DataBugError"):
        from . import live

        return getattr(live, name)
    if name == "AuditCallback":
        from .huggingface import AuditCallback

        return AuditCallback
    raise AttributeError(f"module 'helpers.audit' has no attribute {name!r}")
