"""Reading a small YAML (or JSON) settings file, with errors that name the file, the line and the fix."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .errors import UserError


def read_yaml(path: str | os.PathLike, what: str, example: str) -> Any:
    """The parsed content of `path`; a missing file or bad syntax is a one-line `UserError`.

    `what` names the kind of file in messages ("grid file"), `example` shows a valid line.
    """
    import yaml

    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such {what}; fix: check the path")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise UserError(f"{where}: not valid YAML/JSON ({getattr(err, 'problem', err)}); fix: write e.g. {example}") from None
