"""The command-line flags of every registered step, made from their options (`helpers.clean.steps.base.Option`),
and read back into `clean(...)`'s keywords. A flag two steps read (`--ngram`: `--fuzzy`'s shingles,
`--decontaminate`'s n-grams) is one flag, set for the step asked for, and refused when both are: one number would
set two rules."""

from __future__ import annotations

from ...common.errors import UserError
from .registry import registered


def _by_flag() -> dict[str, list[tuple]]:
    """Each flag with the (option, its step's switch) pairs that read it, in run order."""
    flags: dict[str, list[tuple]] = {}
    for kind in registered():
        switch = kind.options[0]
        for option in kind.options:
            if option.flag_name is not None:
                flags.setdefault(option.flag_name, []).append((option, switch))
    return flags


def add_step_flags(parser) -> None:
    """Every step's flags on `parser` (a `CommandParser`): a switch as it is; a setting refused without its switch."""
    for flag, readers in _by_flag().items():
        option, switch = readers[0]
        if option is switch or not option.needs_switch:
            parser.add_argument(flag, dest=option.keyword, default=option.default, help=option.help, **option.cli)
            continue
        shared = len(readers) > 1
        cli = {"metavar": flag[2:].upper().replace("-", "_"), **option.cli} if "action" not in option.cli else option.cli
        parser.add_needing(flag, tuple(each.flag_name for _, each in readers), None if shared else option.default,
                           dest=option.keyword, help="; ".join(reader.help for reader, _ in readers), **cli)


def step_settings(args) -> dict:
    """The keywords of `clean(...)` the parsed `args` give (those not left at their defaults), a shared flag's value
    set for the step that reads it."""
    settings = {}
    for flag, readers in _by_flag().items():
        value = getattr(args, readers[0][0].keyword)
        if len(readers) == 1:
            if value != readers[0][0].default:  # a default is the keyword's default too
                settings[readers[0][0].keyword] = value
            continue
        if value is None:
            continue
        asked = [(option, switch) for option, switch in readers if getattr(args, switch.keyword) not in (None, False)]
        if len(asked) > 1:
            both = " and ".join(switch.flag_name for _, switch in asked)
            defaults = ", ".join(f"{option.default} for {switch.flag_name}" for option, switch in asked)
            raise UserError(f"{flag} {value}: both {both} read it; fix: run the two in separate runs, or leave {flag} "
                            f"out ({defaults})")
        settings[asked[0][0].keyword] = value
    return settings
