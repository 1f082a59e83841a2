"""The registry of cleaning steps: the one list of them. `python -m helpers.clean`'s flags, the steps a run builds
from `clean(...)`'s keywords, and the settings and sections of `report.json` all come from it, so a step added in
one file (`register_step`) is everywhere a built-in step is."""

from __future__ import annotations

import difflib

from ...common.errors import UserError
from .base import Step

_REGISTERED: list[type[Step]] = []


def register_step(kind: type[Step], *, before: str | None = None) -> type[Step]:
    """Add a step class to the registry, before the step called `before`, else at the end of the run order but
    before a step that runs last (PII masking); usable as a decorator. Its name, keywords and flags must be new (a
    setting's flag may be shared with another step's setting, as `--ngram` is)."""
    _check_new(kind)
    names = [each.name for each in _REGISTERED]
    if before is not None and before not in names:
        raise UserError(f"register_step({kind.__name__}, before={before!r}): no step of that name; fix: one of "
                        f"{', '.join(names)}")
    last = [index for index, each in enumerate(_REGISTERED) if each.runs_last]
    place = names.index(before) if before is not None else last[0] if last else len(names)
    _REGISTERED.insert(place, kind)
    return kind


def _check_new(kind: type[Step]) -> None:
    """Refuse, in one line, a step the registry cannot tell from those it holds."""
    where = f"register_step({kind.__name__})"
    if not kind.name or not kind.options:
        raise UserError(f"{where}: a step needs a name and options, the first its switch; fix: set `name` and "
                        "`options` on the class")
    if kind.name in [each.name for each in _REGISTERED]:
        raise UserError(f"{where}: a step named {kind.name!r} is registered already; fix: give it another name")
    for option in kind.options:
        for each in _REGISTERED:
            for theirs in each.options:
                if option.keyword == theirs.keyword:
                    raise UserError(f"{where}: the setting {option.keyword!r} is the {each.name} step's; fix: give "
                                    "it another keyword")
                shared = option is not kind.options[0] and theirs is not each.options[0]
                if option.flag_name and option.flag_name == theirs.flag_name and not shared:
                    raise UserError(f"{where}: the flag {option.flag_name} is the {each.name} step's switch, or "
                                    "this step's; fix: give it another flag")


def registered() -> tuple[type[Step], ...]:
    """Every registered step class, in run order (the package's own are registered as `helpers.clean.steps` is
    imported, before this module is)."""
    return tuple(_REGISTERED)


def switches() -> tuple[str, ...]:
    """The steps asked for by a switch that is off by default (`--exact`, `--pii`), in run order."""
    return tuple(kind.options[0].keyword for kind in registered() if kind.options[0].default is False)


def keywords() -> dict[str, object]:
    """Every step setting's keyword and default, in run order."""
    return {option.keyword: option.default for kind in registered() for option in kind.options}


def read_settings(given: dict) -> dict[type[Step], dict]:
    """Per registered step, its settings: `given` (keywords of `clean(...)`) over the defaults, checked by the step.
    An unknown keyword is refused as Python refuses one; a value of the wrong kind, or a setting of a step not
    asked for, in one line."""
    unknown = sorted(set(given) - set(keywords()))
    if unknown:
        near = difflib.get_close_matches(unknown[0], keywords(), n=1)
        raise TypeError(f"clean() got an unexpected keyword argument {unknown[0]!r}"
                        + (f" (did you mean {near[0]!r}?)" if near else ""))
    for option in (option for kind in registered() for option in kind.options if option.keyword in given):
        _check_kind(option, given[option.keyword])
    settings = {kind: kind.read({option.keyword: given.get(option.keyword, option.default) for option in kind.options})
                for kind in registered()}
    for kind, values in settings.items():
        stray = [option.keyword for option in kind.options[1:] if option.needs_switch and option.keyword in given]
        if stray and not kind.asked(values):
            raise UserError(f"{stray[0]}={given[stray[0]]!r}: only the {kind.name} step reads it, and it is not asked "
                            f"for; fix: add {kind.options[0].keyword}=..., or leave {stray[0]} out")
    return settings


def _check_kind(option, value) -> None:
    """Refuse a number setting given something else (a string, a bool), before a step compares it."""
    kind = option.cli.get("type")
    if value is None or kind not in (int, float):
        return
    numbers = (int, float) if kind is float else (int,)
    if isinstance(value, bool) or not isinstance(value, numbers):
        raise UserError(f"{option.keyword}={value!r}: needs {'a whole number' if kind is int else 'a number'}; fix: "
                        f"e.g. {option.keyword}={option.default if option.default is not None else 1}")


def steps_asked(settings: dict[type[Step], dict]) -> list:
    """The steps the settings ask for, built, in run order."""
    return [step for kind, values in settings.items() if kind.asked(values) for step in kind.build(values)]


def shown_settings(settings: dict[type[Step], dict]) -> dict:
    """Every step's settings as report.json shows them."""
    return {key: value for kind, values in settings.items() for key, value in kind.shown(values).items()}


def report_sections(steps: list, stage) -> dict:
    """Each section of report.json a step writes: None for a registered step with a section that did not run."""
    sections = {kind.name: None for kind in registered() if kind.report is not None}
    sections.update({step.name: step.report(stage) for step in steps if step.report is not None})
    return sections


def refuse_nothing_asked() -> None:
    """The one line for a run that asks for no step, naming each step's switch."""
    flags = " ".join(kind.options[0].flag_name for kind in registered() if kind.options[0].flag_name)
    raise UserError(f"no step asked for; fix: pass one or more of {flags} (in Python, their keywords: "
                    "clean(inputs, out, exact=True))")
