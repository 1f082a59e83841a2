"""The steps of a cleaning run, in the order they run (`helpers.clean.step`): normalising, then exact,
repeated-line and near-duplicate removal, each as its flag asks."""

from __future__ import annotations

from .dedup import ExactDedup, LineDedup
from .formatters import Normalize
from .fuzzy import FuzzyDedup

STEPS = ("normalize", "exact", "lines", "fuzzy")  # what the flags name, in the order the steps run


def steps_of(settings) -> list:
    """The steps `settings` (a `CleanSettings`) asks for, in run order."""
    steps: list = []
    if settings.normalize:
        steps.append(Normalize())
    if settings.exact:
        steps.append(ExactDedup())
    if settings.lines:
        steps.append(LineDedup(settings.line_min_count, settings.line_min_chars))
    if settings.fuzzy:
        steps.append(FuzzyDedup(threshold=settings.threshold, ngram=settings.ngram, num_perm=settings.num_perm,
                                bands=settings.bands, rows=settings.rows, seed=settings.seed,
                                memory_limit=settings.memory_limit))
    return steps
