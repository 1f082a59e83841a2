"""Command lines that refuse a wrong flag as they refuse any other bad input: one line naming what is wrong
and the fix, exit code 2, no usage block to read through. A flag that only means something beside another
(`--threshold` beside `--fuzzy`) is refused without it, in the same way, rather than ignored."""

from __future__ import annotations

import argparse
import sys

from .errors import UserError


class CommandParser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` whose errors are one `error: ...; fix: ...` line (its subcommands too)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.needing: list[tuple[argparse.Action, tuple[str, ...], object]] = []

    def error(self, message: str):
        sys.stderr.write(f"error: {self.prog}: {message}; fix: run {self.prog} --help for the flags and "
                         "their values\n")
        sys.exit(2)

    def add_needing(self, flag: str, needs: tuple[str, ...], default=None, **options) -> argparse.Action:
        """`flag`, which only one of `needs` reads (`"--fuzzy"`, or a flag and its value: `"--format shards"`): given
        without any of them, `parse_args` refuses it; not given, it is `default`."""
        action = self.add_argument(flag, default=None, **options)
        self.needing.append((action, needs, default))
        return action

    def parse_args(self, args=None, namespace=None):
        parsed = super().parse_args(args, namespace)
        for action, needs, default in self.needing:
            value = getattr(parsed, action.dest)
            if value is None:
                setattr(parsed, action.dest, default)
            elif not any(self._present(parsed, need) for need in needs):
                flag = action.option_strings[0]
                shown = " ".join(map(str, value)) if isinstance(value, list) else value
                given = flag if value is True else f"{flag} {shown}"
                readers = " or ".join(needs)
                raise UserError(f"{given}: only {readers} {'reads' if len(needs) == 1 else 'read'} it; fix: add "
                                f"{' or '.join(self._written(need) for need in needs)}, or leave {flag} out")
        return parsed

    def _present(self, parsed: argparse.Namespace, need: str) -> bool:
        flag, _, value = need.partition(" ")
        given = getattr(parsed, self._option_string_actions[flag].dest)
        return given == value if value else given not in (None, False, [])

    def _written(self, need: str) -> str:
        """`need` as it is typed: a flag that takes values with its metavar (`--decontaminate EVAL`)."""
        action = self._option_string_actions[need.partition(" ")[0]]
        if " " in need or action.nargs == 0:
            return need
        return f"{need} {action.metavar or action.dest.upper()}"
