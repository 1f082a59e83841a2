"""Files that are whole or absent: everything the package writes goes to a hidden temporary name beside
its destination and is renamed into place only when complete, so a failed, interrupted or killed run
never leaves a half-written file that looks valid.

One naming scheme for every temporary: `.NAME[.DETAIL].tmp-PID`, the writer's process id last. A killed
writer (SIGKILL leaves no chance to clean up) is told from a live one by that id: `remove_stale_temporaries`
removes only what dead processes left.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

_TEMPORARY_PID = re.compile(r"\.tmp-(\d+)")


def temporary_name(path: str | os.PathLike, detail: str = "") -> Path:
    """The hidden name `path` has while it is written: `.NAME.tmp-PID`, or `.NAME.DETAIL.tmp-PID` where
    one process writes several temporaries for the same destination (a thread, a purpose)."""
    path = Path(path)
    hidden = path.name if path.name.startswith(".") else f".{path.name}"
    return path.with_name(f"{hidden}{'.' + detail if detail else ''}.tmp-{os.getpid()}")


def temporary_pid(name: str) -> int | None:
    """The process id of the writer of a temporary name (the last one, for a temporary of a temporary)."""
    pids = _TEMPORARY_PID.findall(name)
    return int(pids[-1]) if pids else None


def process_alive(pid: int) -> bool:
    """Whether a process with this id runs on this machine (on Windows, where signal 0 would kill it,
    always assumed)."""
    if os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def remove_stale_temporaries(prefix: str | os.PathLike) -> list[Path]:
    """Remove the hidden files `.NAME.*.tmp-PID*` beside `prefix` whose last PID is no running process:
    what killed runs left. A live writer's files stay."""
    prefix = Path(prefix)
    hidden = prefix.name if prefix.name.startswith(".") else f".{prefix.name}"
    try:
        entries = list(os.scandir(prefix.parent))
    except FileNotFoundError:
        return []
    removed = []
    for entry in entries:
        if not entry.name.startswith(f"{hidden}."):
            continue
        pid = temporary_pid(entry.name[len(hidden):])
        if pid is not None and not process_alive(pid) and entry.is_file(follow_symlinks=False):
            Path(entry.path).unlink(missing_ok=True)
            removed.append(Path(entry.path))
    return removed


@contextmanager
def written_atomically(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8",
                       newline: str | None = None) -> Iterator[IO]:
    """Open a temporary beside `path` for writing (`mode` "w" or "wb"); on a clean exit it replaces `path`,
    on any error (Ctrl-C included) it is removed and `path` is as it was. `newline` is `open`'s."""
    path = Path(path)
    temporary = temporary_name(path)
    try:
        text = "b" not in mode
        with open(temporary, mode, encoding=encoding if text else None, newline=newline if text else None) as handle:
            yield handle
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_text_atomically(path: str | os.PathLike, text: str) -> Path:
    """Write `text` (UTF-8) to `path`, whole or not at all."""
    with written_atomically(path) as handle:
        handle.write(text)
    return Path(path)
