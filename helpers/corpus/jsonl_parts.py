"""Cleaned parts of a JSONL input: each range's kept records written as a part file, in order, then the parts
joined byte for byte. A record whose text is unchanged is copied as it was read; one whose text changed is the
same JSON object with the new text, and the labels a step gave it (fields added or replaced)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np

from ..common.files import written_atomically
from .records import Bad, records


def write_jsonl_part(source, start: int, end: int | None, part: str, *, text_key: str, removed: np.ndarray,
                     rewrite: Callable[[int, str], str | None], bad: Bad,
                     labels: Callable[[int], dict] | None = None) -> tuple[int, int]:
    """The kept records of bytes `[start, end)` of `source` into the part file `part`, written under a name of
    this process and renamed when complete, so a retried task only writes it again: each good record not
    `removed` with its text `rewrite(position, text)` (its position among the range's good records), or
    dropped where that is None, and with `labels`, the fields `labels(position)` gives set in it. Returns
    (records, bytes) written."""
    written = size = position = 0
    counts = {"bytes": 0, "blank": 0}
    with written_atomically(part, "wb") as out:
        for batch in source.batches(start, end):
            for _, _, raw, record in records(batch, (text_key,), bad, counts, whole=True):
                position += 1
                if removed[position - 1]:
                    continue
                text = record[text_key]
                new_text = rewrite(position - 1, text)
                if new_text is None:
                    continue
                added = labels(position - 1) if labels is not None else None
                if new_text == text and not added:
                    line = raw.rstrip(b"\r\n") + b"\n"
                else:
                    record[text_key] = new_text
                    record.update(added or {})
                    line = _serialised(record)
                out.write(line)
                written += 1
                size += len(line)
    return written, size


def _serialised(record: dict) -> bytes:
    """A record as one JSONL line: UTF-8 as written, or, where another field holds a lone surrogate
    (which only the text field is checked for), with every non-ASCII character escaped, which keeps it."""
    try:
        return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(record) + "\n").encode("ascii")


def join_jsonl_parts(parts: list[Path], joined: Path) -> None:
    """JSONL parts, in order, into one file, 16 MiB at a time; each part is removed once copied."""
    with open(joined, "wb") as out:
        for part in parts:
            with open(part, "rb") as handle:
                while block := handle.read(16 << 20):
                    out.write(block)
            part.unlink()
