"""The domains a mixture is made of, tokenized once: the corpus's three and some of the machine's own kinds of
text, each a Megatron prefix in one folder, shared by every run of a swarm.

    prefixes = prepare_domains("data/raw", "data/megatron-10", ["licences", "man-pages"])
"""

from __future__ import annotations

import fcntl
from contextlib import contextmanager
from pathlib import Path
from typing import Sequence

from ..common.errors import UserError
from ..corpus.build import DOMAINS
from ..corpus.machine_domains import MACHINE_DOMAIN_BYTES, write_machine_domain
from ..datasets.indexed import idx_path
from ..preprocess import output_prefix, preprocess

MIX_TOKENIZER = "bytes"  # 258 ids: many short runs stay cheap on a CPU


def domain_names(machine_kinds: Sequence[str]) -> list[str]:
    """The corpus's domains, then the machine's kinds, in the order weights are given."""
    names = list(DOMAINS) + list(machine_kinds)
    if len(set(names)) != len(names):
        raise UserError(f"domains {', '.join(names)}: a name appears twice; fix: name each machine kind once")
    return names


@contextmanager
def one_preparer(data_dir: Path):
    """Hold `data_dir`'s lock file: the runs of a swarm that start together (`--jobs 2`) prepare the domains one
    after another, so that none reads a prefix another is still moving into place."""
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / ".prepare.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def prepare_domains(corpus_dir: str | Path, data_dir: str | Path, machine_kinds: Sequence[str],
                    tokenizer: str = MIX_TOKENIZER, machine_bytes: int = MACHINE_DOMAIN_BYTES) -> list[str]:
    """Each domain's Megatron prefix in `data_dir`, tokenized now when missing (later calls cost nothing).
    The machine's kinds are first written as JSONL into `data_dir/text/`."""
    corpus_dir, data_dir = Path(corpus_dir), Path(data_dir)
    names = domain_names(machine_kinds)
    with one_preparer(data_dir):
        return [prepare_domain(name, corpus_dir=corpus_dir, data_dir=data_dir, tokenizer=tokenizer,
                               machine_bytes=machine_bytes) for name in names]


def prepare_domain(name: str, *, corpus_dir: Path, data_dir: Path, tokenizer: str, machine_bytes: int) -> str:
    """One domain's prefix in `data_dir`, its text tokenized now when missing."""
    if name in DOMAINS:
        source = corpus_dir / f"{name}.jsonl"
        if not source.exists():
            raise UserError(f"{source}: no such corpus file; fix: build the corpus with "
                            "`python -m helpers.corpus --out data/raw`")
    else:
        source = write_machine_domain(name, data_dir / "text" / f"{name}.jsonl", machine_bytes)
    prefix = output_prefix(data_dir / name, "text")
    if not idx_path(prefix).exists():
        preprocess(source, data_dir / name, tokenizer, append_eod=True, workers=2, progress=False)
    return str(prefix)
