"""The registry of cleaning steps: the one list of them. `python -m helpers.clean`'s flags, the steps a run builds
from `clean(...)`'s keywords, and the settings and sections of `report.json` all come from it, so a step added in
one file (`register_step`) is everywhere a built-in step is."""

from __future__ import annotations

from ...common.errors import UserError
from .base import Step

_REGISTERED: list[type[Step]] = []


def register_step(kind: type[Step], *, before: str | None = None) -> type[Step]:
    """Add a step class to the registry, at the end of the run order or before the step called `before`; usable as
    a decorator. Its name and its options' keywords and flags must be new."""
    names = [each.name for each in _REGISTERED]
    if kind.name in names:
        raise ValueError(f"a step named {kind.name!r} is registered already")
    if not kind.options:
        raise ValueError(f"step {kind.name!r}: give it options, the first its switch")
    taken = {option.keyword for each in _REGISTERED for option in each.options}
    clash = sorted(taken & {option.keyword for option in kind.options})
    if clash:
        raise ValueError(f"step {kind.name!r}: the keyword {clash[0]!r} belongs to another step")
    _REGISTERED.insert(names.index(before) if before is not None else len(_REGISTERED), kind)
    return kind


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
    """Per registered step, its settings: `given` (keywords of `clean(...)`) over the defaults, checked by the step;
    an unknown keyword is refused."""
    unknown = sorted(set(given) - set(keywords()))
    if unknown:
        raise TypeError(f"clean() got an unexpected keyword argument {unknown[0]!r}")
    return {kind: kind.read({option.keyword: given.get(option.keyword, option.default) for option in kind.options})
            for kind in registered()}


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
    raise UserError(f"no step asked for; fix: pass one or more of {flags}")
