"""The settings of a cleaning run as a whole, apart from its steps': where it runs, how the input is cut, where the
text is, what the driver may hold. One frozen object, handed whole to the driver and to every worker pass; each
field's command-line flag and help live beside it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace

from ...common.errors import UserError
from ...engines.choice import ENGINES
from ..steps.registry import registered
from ..text.band_files import parse_size


def _flag(help: str, **cli) -> dict:
    """A field's command line: its help and argparse's settings (`flag` when it is not `--field-name`,
    `cli_default` when the command's default is not the keyword's)."""
    return {"help": help, **cli}


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """What the whole run needs to know, picklable."""

    workers: int = field(default=1, metadata=_flag("local worker processes", type=int,
                                                   cli_default=os.cpu_count() or 1))
    parts: int | None = field(default=None, metadata=_flag(
        "ranges per input, of bytes or of Parquet row groups (default: --workers)", type=int))
    engine: str = field(default="local", metadata=_flag("local processes, or Ray tasks", choices=ENGINES))
    ray_address: str | None = field(default=None, metadata=_flag(
        "join this Ray cluster (--engine ray), e.g. HEAD:6379"))
    text_key: str = field(default="text", metadata=_flag(
        "the field (JSONL) or column (Parquet) holding the text", flag="--json-key"))
    memory_limit: int | str = field(default="2GB", metadata=_flag(
        "what this process may hold for the steps that spill to disk (--fuzzy), e.g. 2GB or 512MB (default 2GB; band "
        "keys are sorted on disk in slices that fit)", needs_spilling=True))
    skip_bad_records: bool = field(default=False, metadata=_flag(
        "skip bad lines (and null Parquet texts), listing each in removed.jsonl", action="store_true"))
    progress: bool = field(default=True, metadata=_flag("no progress bars", flag="--no-progress",
                                                        action="store_false"))

    def __post_init__(self):
        if isinstance(self.memory_limit, str):
            object.__setattr__(self, "memory_limit", parse_size(self.memory_limit))

    @property
    def ranges(self) -> int:
        """Ranges to cut each input into: `parts`, else one per worker."""
        return self.parts or self.workers

    @classmethod
    def of(cls, options: "RunOptions | None", given: dict) -> "RunOptions":
        """`options` (or the defaults) with the keywords in `given` that are run options set."""
        chosen = {key: value for key, value in given.items() if key in run_keywords()}
        return replace(options or cls(), **chosen)


def run_keywords() -> tuple[str, ...]:
    return tuple(each.name for each in fields(RunOptions))


def add_run_flags(parser) -> None:
    """The run's flags on `parser` (a `CommandParser`), from `RunOptions`' fields; `--memory-limit` is refused
    without a step that spills to disk."""
    spilling = tuple(kind.options[0].flag_name for kind in registered() if kind.spills)
    for each in fields(RunOptions):
        cli = dict(each.metadata)
        flag = cli.pop("flag", "--" + each.name.replace("_", "-"))
        default = cli.pop("cli_default", each.default)
        if "action" not in cli and "choices" not in cli:
            cli.setdefault("metavar", flag[2:].upper().replace("-", "_"))
        if cli.pop("needs_spilling", False):
            parser.add_needing(flag, spilling, default, dest=each.name, **cli)
        else:
            parser.add_argument(flag, dest=each.name, default=default, **cli)


def run_options(args) -> RunOptions:
    """The run's options the parsed `args` give."""
    return RunOptions(**{each.name: getattr(args, each.name) for each in fields(RunOptions)})


def check_run_keywords_free() -> None:
    """Refuse a registered step whose setting takes a keyword or flag of the run's own (`workers`, `--json-key`)."""
    taken = {each.name: each.metadata.get("flag", "--" + each.name.replace("_", "-")) for each in fields(RunOptions)}
    for kind in registered():
        for option in kind.options:
            if option.keyword in taken or option.flag_name in [*taken.values(), "--input", "--output-dir", "--steps-from"]:
                raise UserError(f"the {kind.name} step's setting {option.keyword} ({option.flag_name}) is the run's "
                                "own; fix: give it another keyword and flag")
