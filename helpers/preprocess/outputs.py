"""A preprocessing run's outputs: one `IndexedWriter` per key, filled, then moved into place all together
with their sidecars, or not at all (any failure, Ctrl-C and SIGTERM included, removes every temporary file)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from ..common.stop_signals import check_signals, signals_held
from ..datasets.indexed import IndexedWriter
from ..datasets.sidecar import sidecar_path, write_sidecar
from .summary import Summary


def _forget_sidecars(prefixes) -> None:
    """Remove old sidecars before new data takes their place: a crash then leaves none, never a stale one."""
    for prefix in prefixes:
        sidecar_path(prefix).unlink(missing_ok=True)


def remove_dataset(prefix: str | os.PathLike) -> None:
    """Remove a finished dataset's files (`.bin`, `.idx`, sidecar), whichever exist."""
    for path in (Path(f"{prefix}.bin"), Path(f"{prefix}.idx"), sidecar_path(prefix)):
        path.unlink(missing_ok=True)


def _commit(writers: dict[str, IndexedWriter], describe: Callable[[str, Path], dict] | None) -> None:
    """Move every key's dataset into place, then write its sidecar (`describe`, when given, says what it
    holds); a failure part way removes the outputs already moved."""
    check_signals()
    with signals_held():
        moved: list[Path] = []
        try:
            _forget_sidecars(writer.prefix for writer in writers.values())
            for writer in writers.values():
                moved.append(writer.finalize())
            for key, written in zip(writers, moved):
                if describe is not None:
                    write_sidecar(written, describe(key, written))
        except BaseException:
            for written in moved:
                remove_dataset(written)
            raise


def write_datasets(prefixes: dict[str, Path], dtype: str, describe, fill: Callable[[dict], Summary]) -> Summary:
    """One writer per key, created inside the `try`; `fill(writers)` adds the documents, then all are
    committed. On any failure (Ctrl-C and SIGTERM included) every temporary file is removed."""
    writers: dict[str, IndexedWriter] = {}
    try:
        for key, prefix in prefixes.items():
            writers[key] = IndexedWriter(prefix, dtype)
        summary = fill(writers)
        _commit(writers, describe)
    except BaseException:
        for writer in writers.values():
            writer.abort()
        raise
    return summary
