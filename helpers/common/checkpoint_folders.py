"""Where a run's checkpoints are: `step-0000040/run.json` folders, the highest complete one the latest.

Read by `helpers.training` when it resumes and by `python -m helpers.audit ledger`, which needs no more of a
checkpoint than its `run.json`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

RUN_FILE = "run.json"
FOLDER = re.compile(r"step-(\d{7})")


def latest_checkpoint(folder: str | os.PathLike) -> Path | None:
    """The complete checkpoint (one with its run.json) of the highest step in `folder`, or None."""
    found = [(int(match[1]), path) for path in Path(folder).glob("step-*")
             if (match := FOLDER.fullmatch(path.name)) and (path / RUN_FILE).exists()]
    return max(found)[1] if found else None
