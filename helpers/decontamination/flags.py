"""The command-line flags every decontaminating command shares (`helpers.clean`, `helpers.check`, `helpers.audit`):
`--decontaminate EVAL...` and `--eval-keys FIELDS`, and the refusal of a flag that only they read when they are
absent, so that it is never ignored silently."""

from __future__ import annotations

from ..common.errors import UserError


def add_eval_flags(parser, reads: str) -> None:
    """`--decontaminate` (with `reads`: what the command does with the sets) and `--eval-keys`."""
    parser.add_argument("--decontaminate", nargs="+", default=None, metavar="EVAL",
                        help=f"evaluation sets, JSONL or Parquet files or humaneval: {reads}")
    parser.add_argument("--eval-keys", default=None, metavar="FIELDS",
                        help="the evaluation items' fields to protect, comma-separated (default: a named set's own, "
                             "else text)")


def eval_keys(fields: str | list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """`--eval-keys` (a comma-separated string, or a list) as a tuple of fields; empty when none are named."""
    if isinstance(fields, str):
        fields = fields.split(",")
    return tuple(field for field in fields or () if field)


def refuse_without_evals(args, **flags) -> None:
    """Refuse, in one line, each of `flags` (flag name with `_` for `-`: its value) given without `--decontaminate`,
    `--eval-keys` always among them."""
    for name, value in {"eval_keys": args.eval_keys, **flags}.items():
        if value is not None and args.decontaminate is None:
            flag = "--" + name.replace("_", "-")
            given = flag if value is True else f"{flag} {value}"
            raise UserError(f"{given}: only --decontaminate reads it; fix: add --decontaminate EVAL, or leave "
                            f"{flag} out")
