"""Cleaning and deduplication of JSONL, Parquet or saved datasets before they are tokenized, with an audit trail.

    python -m helpers.clean --input data/raw/literature.jsonl data/raw/docs.jsonl data/raw/code.jsonl \\
        --output-dir data/clean --normalize --exact --lines --fuzzy [--engine ray]

Writes, per input file, `OUT/<its name>` (the kept records, in order, in the input's format), `OUT/removed.jsonl`
(every record that went, the step that removed it and why) and `OUT/report.json`. The flags come from the
registered steps (`helpers.clean.steps.registry`) and the run's options (`helpers.clean.run.options`);
`--steps-from MODULE` first imports a module that registers steps of its own. docs/cleaning.md tells each step,
docs/architecture.md how to add one.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from ..common.cli import CommandParser
from ..common.errors import UserError
from .run.driver import clean
from .run.options import add_run_flags, check_run_keywords_free, run_options
from .run.report import summary_lines
from .steps.flags import add_step_flags, step_settings


def parser() -> CommandParser:
    """The command line: inputs, the output folder, every registered step's flags, the run's options."""
    made = CommandParser(prog="python -m helpers.clean", description=__doc__.split("\n\n")[0])
    made.add_argument("--input", required=True, nargs="+", type=Path,
                      help="JSONL files (.gz, .zst allowed), Parquet files, folders and quoted globs of either (each "
                           "file an input; a file in a folder that no reader takes is refused), saved Hugging Face "
                           "datasets")
    made.add_argument("--output-dir", required=True, type=Path,
                      help="writes OUT/<input file name> (JSONL as JSONL, Parquet as Parquet), removed.jsonl, "
                           "report.json")
    made.add_argument("--steps-from", action="append", default=[], metavar="MODULE",
                      help="import this module first: the steps it registers join the run's flags (repeatable)")
    check_run_keywords_free()
    add_step_flags(made)
    add_run_flags(made)
    return made


def import_step_modules(argv: list[str]) -> None:
    """Import each module `--steps-from` names in `argv`, before the flags are made from the registry."""
    early = CommandParser(prog="python -m helpers.clean", add_help=False)
    early.add_argument("--steps-from", action="append", default=[])
    for module in early.parse_known_args(argv)[0].steps_from:
        given = f"--steps-from {module}"
        if module.endswith(".py") or "/" in module:
            raise UserError(f"{given}: a module's name, not a file; fix: --steps-from {Path(module).stem}, with its "
                            "folder on PYTHONPATH")
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            if error.name != module.split(".")[0]:
                raise UserError(f"{given}: it needs {error.name}, which is not installed; fix: install it") from None
            raise UserError(f"{given}: no such module ({error}); fix: name a module on PYTHONPATH, e.g. my_steps for "
                            "my_steps.py in the current folder") from None
        except UserError as error:
            raise UserError(f"{given}: {error}") from None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    import_step_modules(argv)
    made = parser()
    unknown = [each for each in made.parse_known_args(argv)[1] if each.startswith("-")]
    if unknown:
        raise UserError(f"{unknown[0]}: no such flag; fix: see python -m helpers.clean --help (a step of one's own "
                        "brings its flags with --steps-from MODULE, given first)")
    args = made.parse_args(argv)
    report = clean(args.input, args.output_dir, options=run_options(args), **step_settings(args))
    for line in summary_lines(report):
        print(line)
    return 0
