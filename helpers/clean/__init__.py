"""Cleaning and deduplication before tokenizing (`python -m helpers.clean`): normalisation, language ID,
datatrove's quality filters, decontamination, exact duplicates, repeated lines, MinHash near-duplicates with LSH,
PII masking, and the audit trail of what went."""

from ..common.lazy import lazy_names

_PUBLIC = {
    "clean": "helpers.clean.command",
}

__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_names(__name__, _PUBLIC)
