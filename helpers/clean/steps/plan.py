"""The steps of a cleaning run, in the order they run (`helpers.clean.steps.base`): normalising, language ID, the
quality filters in the order `--filters` lists them, decontamination, then exact, repeated-line and near-duplicate
removal, then PII masking (on the records kept, as FineWeb's pipeline does it last), each as its flag asks."""

from __future__ import annotations

import inspect
import json

from ...common.errors import UserError
from ...decontamination.evals import load_evals
from ..steps.decontaminate import decontamination_step
from ..steps.exact import ExactDedup, LineDedup
from ..steps.filters import FILTERS
from ..steps.normalize import Normalize
from ..steps.fuzzy import FuzzyDedup
from ..steps.language import LanguageId
from ..steps.pii import PiiMask, pii_kinds

STEPS = ("normalize", "exact", "lines", "fuzzy", "pii")  # what the on-off flags name, in the order the steps run


def steps_of(settings) -> list:
    """The steps `settings` (a `CleanSettings`) asks for, in run order."""
    steps: list = []
    if settings.normalize:
        steps.append(Normalize())
    if settings.languages:
        steps.append(LanguageId(settings.languages, settings.language_threshold))
    options = dict(settings.filter_options)
    steps.extend(FILTERS[name](**dict(options.get(name, ()))) for name in settings.filters)
    if settings.decontaminate:
        steps.append(decontamination_step(load_evals(list(settings.decontaminate), settings.eval_keys or None),
                                          ngram=settings.decontaminate_ngram, mode=settings.decontaminate_mode,
                                          allow_short=settings.allow_short_ngrams))
    if settings.exact:
        steps.append(ExactDedup())
    if settings.lines:
        steps.append(LineDedup(settings.line_min_count, settings.line_min_chars))
    if settings.fuzzy:
        steps.append(FuzzyDedup(threshold=settings.threshold, ngram=settings.ngram, num_perm=settings.num_perm,
                                bands=settings.bands, rows=settings.rows, seed=settings.seed,
                                memory_limit=settings.memory_limit))
    if settings.pii:
        steps.append(PiiMask.of(pii_kinds(settings.pii)))
    return steps


def filter_settings(filters: list[str] | str | None, options: list[str] | dict | None) -> tuple[tuple, tuple]:
    """`--filters` (names, or one comma-separated string) and `--filter-option NAME.PARAMETER=VALUE` (or a mapping of
    name to keyword arguments), checked: (names, options) as `CleanSettings` holds them. A value is read as JSON
    (`0.2`, `null`, `[[2, 0.2]]`), else taken as a string."""
    if isinstance(filters, str):
        filters = [name for name in filters.split(",") if name]
    names = tuple(filters or ())
    for name in names:
        _check_filter(f"--filters {name}", name)
    if len(set(names)) < len(names):
        raise UserError(f"--filters {','.join(names)}: a filter named twice; fix: name each once")
    chosen: dict[str, dict] = {}
    for item in options.items() if isinstance(options, dict) else map(_option, options or ()):
        name, values = item
        _check_filter(f"--filter-option {name}.{','.join(values)}", name)
        if name not in names:
            raise UserError(f"--filter-option {name}: that filter is not in --filters; fix: add it there")
        allowed = inspect.signature(FILTERS[name]).parameters
        for key, value in values.items():
            if key not in allowed:
                raise UserError(f"--filter-option {name}.{key}: no such setting; fix: one of "
                                f"{', '.join(sorted(allowed))}")
            _check_value(f"{name}.{key}", value, allowed[key].default)
        chosen.setdefault(name, {}).update(values)
    return names, tuple((name, tuple(sorted(values.items()))) for name, values in chosen.items())


def _check_filter(given: str, name: str) -> None:
    """Refuse a name that is no quality filter; PII masking, a step of its own, is chosen with `--pii`."""
    if name == PiiMask.name:
        raise UserError(f"{given}: PII masking is not a filter; fix: name what it masks with --pii, e.g. --pii "
                        "email,ip (datatrove's PIIFormatter) or --pii email,ip,phone")
    if name not in FILTERS:
        raise UserError(f"{given}: no such filter; fix: choose among {', '.join(FILTERS)}")


def _check_value(setting: str, value, default) -> None:
    """Refuse a value of another kind than the setting's default (a number, true/false, a list), in one line;
    a number may also be null, which turns its rule off."""
    if default is None:  # a setting off by default (FineWeb's stop_chars) takes what its filter reads
        return
    if isinstance(default, bool):
        fits, kind = isinstance(value, bool), "true or false"
    elif isinstance(default, (int, float)):
        fits, kind = value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)), "a number"
    else:
        fits, kind = isinstance(value, (tuple, list)), "a list"
    if not fits:
        raise UserError(f"--filter-option {setting}={value!r}: needs {kind} (the default is {default!r}); fix: e.g. "
                        f"{setting}={json.dumps(default)}")


def _option(text: str) -> tuple[str, dict]:
    """`NAME.PARAMETER=VALUE` as (name, {parameter: value})."""
    target, equals, value = text.partition("=")
    name, dot, parameter = target.partition(".")
    if not (equals and dot and name and parameter):
        raise UserError(f"--filter-option {text}: not NAME.SETTING=VALUE; fix: e.g. gopher-quality.min_doc_words=30")
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value
    return name, {parameter: tuple(map(tuple, parsed)) if isinstance(parsed, list) and parsed and
                  isinstance(parsed[0], list) else tuple(parsed) if isinstance(parsed, list) else parsed}
