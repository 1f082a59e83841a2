"""`--filters` and `--filter-option`: which of datatrove's quality filters (`helpers.clean.steps.filters`) a run
applies, in the order named, and each rule's threshold; one registered step that builds them."""

from __future__ import annotations

import inspect
import json

from ...common.errors import UserError
from .base import Option, Step
from .filters import FILTERS
from .pii import PiiMask


class QualityFilters(Step):
    """The quality filters `--filters` names, in its order, with the settings `--filter-option` gives them."""

    name = "filters"
    options = (
        Option("filters", None, f"quality filters, comma-separated, in the order to run them: {', '.join(FILTERS)} "
                                "(as datatrove 0.10.1 decides; needs spaCy: pip install -e '.[quality]')"),
        Option("filter_options", None, "a filter's setting, e.g. gopher-quality.min_doc_words=30 (JSON values; repeat "
                                       "the flag)", flag="--filter-option",
               cli={"action": "append", "metavar": "NAME.SETTING=VALUE"}, needs_switch=False),
    )

    @classmethod
    def read(cls, values: dict) -> dict:
        names, options = filter_settings(values["filters"], values["filter_options"])
        return {"filters": names, "filter_options": options}

    @classmethod
    def build(cls, values: dict) -> list:
        options = dict(values["filter_options"])
        return [FILTERS[name](**dict(options.get(name, ()))) for name in values["filters"]]

    @classmethod
    def shown(cls, values: dict) -> dict:
        return {"filters": list(values["filters"]),
                "filter_options": {name: dict(settings) for name, settings in values["filter_options"]}}


def filter_settings(filters: list[str] | str | None, options: list[str] | dict | None) -> tuple[tuple, tuple]:
    """`--filters` (names, or one comma-separated string) and `--filter-option NAME.PARAMETER=VALUE` (or a mapping of
    name to keyword arguments), checked: (names, options) as the run holds them. A value is read as JSON
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
