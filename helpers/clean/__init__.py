"""Cleaning and deduplication before tokenizing (`python -m helpers.clean`): normalisation, language ID,
datatrove's quality filters, decontamination, exact duplicates, repeated lines, MinHash near-duplicates with LSH,
PII masking, and the audit trail of what went. `clean` runs them; a step of one's own is a class on the interface
of `helpers.clean.steps.base`, registered with `register_step` (docs/architecture.md)."""

from ..common.lazy import lazy_names

_PUBLIC = {
    "clean": "helpers.clean.run.driver",
    "RunOptions": "helpers.clean.run.options",
    "register_step": "helpers.clean.steps.registry",
    "Option": "helpers.clean.steps.base",
    "Formatter": "helpers.clean.steps.base",
    "Filter": "helpers.clean.steps.base",
    "Labeller": "helpers.clean.steps.base",
    "Dedup": "helpers.clean.steps.base",
    "Collector": "helpers.clean.steps.base",
    "UserError": "helpers.common.errors",
}

__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_names(__name__, _PUBLIC)
