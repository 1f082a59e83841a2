"""The machine's own kinds of text (`helpers.corpus.machine_text`) written as corpus domains: one JSONL file per
kind, in the corpus's record shape, so that a kind is tokenized and blended like literature, docs and code.

Mixing laws need more domains than the corpus's three, and text the project did not write: licences and manual
pages are on every Linux machine, and differ from each other and from the corpus.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..common.errors import UserError
from ..common.files import written_atomically
from .machine_text import KINDS, sources, texts

MACHINE_DOMAIN_BYTES = 1_000_000  # about as much text as the docs domain holds twice over


def write_machine_domain(kind: str, path: str | Path, limit_bytes: int = MACHINE_DOMAIN_BYTES) -> Path:
    """Write `path` (JSONL: text, title, source, id) from the machine's text of `kind`, unless it is there already.
    The file appears under its name only when complete."""
    path = Path(path)
    if kind not in KINDS:
        raise UserError(f"unknown kind of machine text {kind!r}; fix: use one of {', '.join(KINDS)}")
    if path.exists():
        return path
    try:
        documents = list(zip(sources(kind, limit_bytes), texts(kind, limit_bytes)))
    except RuntimeError as err:  # this machine holds none of it
        raise UserError(f"{err}; fix: name another kind ({', '.join(KINDS)})") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    with written_atomically(path) as out:
        for number, (source, text) in enumerate(documents):
            record = {"text": text, "title": Path(source).name, "source": source, "id": f"{kind}-{number:06d}"}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path
