"""What a cleaning run owns in its output folder: `removed.jsonl`, `report.json` and the files the report lists
under `outputs`. A run into a folder an earlier run wrote replaces that run whole: the earlier run's outputs this
run does not write are removed as this run's move into place, and the report (`cleared`) and the summary name
them, so that no file of the earlier run is left looking like this run's. Files no run listed are left alone."""

from __future__ import annotations

import json
from pathlib import Path

from ...common.errors import UserError
from ...corpus.ranges import COMPRESSED

REPORT, REMOVED = "report.json", "removed.jsonl"


def earlier_outputs(out: Path) -> list[str]:
    """The outputs the run that wrote `out`'s report.json listed, as names under `out` (none without a report; a
    report written before reports listed them: its inputs' names, `.gz` or `.zst` dropped). A report.json that is
    no cleaning run's is refused: what else in the folder is a run's could not be told."""
    path = out / REPORT
    if not path.is_file():
        return []
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        if "outputs" in report:
            return [str(name) for name in report["outputs"]]
        return [_without_compression(str(item["file"])) for item in report["inputs"]]
    except (ValueError, KeyError, TypeError):
        raise UserError(f"{path}: not the report of a cleaning run, so the run that wrote this folder cannot be told; "
                        f"fix: choose another --output-dir, or move {REPORT} away") from None


def _without_compression(name: str) -> str:
    suffix = Path(name).suffix
    return name[:-len(suffix)] if suffix in COMPRESSED else name


def stale_outputs(out: Path, earlier: list[str], written: list[str], inputs: list[Path]) -> list[str]:
    """The names in `earlier` this run does not write: files inside `out`, never one of this run's `inputs`."""
    root = out.resolve()
    keep = set(written) | {REPORT, REMOVED}
    read = {path.resolve() for path in inputs}
    stale = []
    for name in dict.fromkeys(earlier):
        path = (out / name).resolve()
        if name not in keep and path.parent.is_relative_to(root) and path.is_file() and path not in read:
            stale.append(name)
    return stale


def clear(out: Path, names: list[str]) -> None:
    """Remove the earlier run's files `names`, and a folder of theirs (a saved dataset's) left empty."""
    for name in names:
        path = out / name
        path.unlink(missing_ok=True)
        if path.parent != out and not any(path.parent.iterdir()):
            path.parent.rmdir()
