"""A preprocessing run's outputs: one `IndexedWriter` per key, filled, then moved into place all together
with their sidecars, or not at all (any failure, Ctrl-C and SIGTERM included, removes every temporary file)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..common.stop_signals import check_signals, signals_held
from ..datasets.indexed import IndexedDataset, IndexedWriter
from ..datasets.sidecar import FORMAT, sidecar_path, write_sidecar


def _forget_sidecars(prefixes) -> None:
    """Remove old sidecars before new data takes their place: a crash then leaves none, never a stale one."""
    for prefix in prefixes:
        sidecar_path(prefix).unlink(missing_ok=True)


def remove_dataset(prefix: str | os.PathLike) -> None:
    """Remove a finished dataset's files (`.bin`, `.idx`, sidecar), whichever exist."""
    for path in (Path(f"{prefix}.bin"), Path(f"{prefix}.idx"), sidecar_path(prefix)):
        path.unlink(missing_ok=True)


@dataclass(frozen=True, kw_only=True)
class RunFacts:
    """What every output's sidecar says about the run that made it, fixed before the run starts."""

    tokenizer: dict  # `tokenizer_identity` of the tokenizer used
    append_eod: bool
    parse_special_tokens: bool
    input_files: list[Path]  # what the input was read from (`helpers.corpus.inputs`)
    encoder: str = ""  # the encoder that made the ids, with its version (the bytes are the same with any)

    def sidecar(self, key: str, written: Path) -> dict:
        """The sidecar of the finished output of `key`: these facts, and the counts read from its `.idx`."""
        dataset = IndexedDataset(written)
        return {"format": FORMAT, "tokenizer": self.tokenizer, "dtype": dataset.dtype.name,
                "append_eod": self.append_eod, "parse_special_tokens": self.parse_special_tokens, "json_key": key,
                "inputs": [{"path": str(file), "bytes": file.stat().st_size} for file in self.input_files],
                "documents": dataset.document_count, "sequences": len(dataset), "tokens": dataset.num_tokens,
                "encoder": self.encoder, "created_by": "helpers.preprocess"}


def _commit(writers: dict[str, IndexedWriter], facts: RunFacts | None) -> None:
    """Move every key's dataset into place, then write its sidecar (from `facts`; a part file has none); a
    failure part way removes the outputs already moved."""
    check_signals()
    with signals_held():
        moved: list[Path] = []
        try:
            _forget_sidecars(writer.prefix for writer in writers.values())
            for writer in writers.values():
                moved.append(writer.finalize())
            for key, written in zip(writers, moved):
                if facts is not None:
                    write_sidecar(written, facts.sidecar(key, written))
        except BaseException:
            for written in moved:
                remove_dataset(written)
            raise


@contextmanager
def datasets_written(prefixes: dict[str, Path], dtype: str, facts: RunFacts | None = None
                     ) -> Iterator[dict[str, IndexedWriter]]:
    """One writer per key, to fill inside the `with`; on a clean exit all are committed together. On any
    failure (Ctrl-C and SIGTERM included) every temporary file is removed."""
    writers: dict[str, IndexedWriter] = {}
    try:
        for key, prefix in prefixes.items():
            writers[key] = IndexedWriter(prefix, dtype)
        yield writers
        _commit(writers, facts)
    except BaseException:
        for writer in writers.values():
            writer.abort()
        raise
