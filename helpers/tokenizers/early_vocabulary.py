"""The fast encoder's vocabulary read from a command's first instant, beside the imports it then makes.

Reading fastokens' vocabulary takes a fixed 0.6 s for Llama 3, most of a 90 MB run's fast path; the command
decides on its encoder only once it has imported the package and loaded the tokenizer (a quarter of a second
more). So the last command line that encoded with fastokens leaves a note (`remember`): how to read that
tokenizer's vocabulary, the tokenizer's fingerprint, and the digest of the files it was made from. The next
command with the same `--tokenizer` starts reading from that note on a thread of its own as it starts (`start`),
once the thread has found the files' digest unchanged, and only where its flags and its input's size say it will
choose fastokens; the run then takes the encoder (`take`) if, and only if, its tokenizer has the fingerprint the
note names. A stale or missing note costs nothing but the read it does not save: the run reads the vocabulary
itself, and writes a new note.

This module imports only the standard library and two small modules of the package (`common.files`,
`common.paths`), so that it can run before anything else.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from ..common.files import write_text_atomically
from ..common.paths import CACHE_DIR

NOTE_DIR = CACHE_DIR / "encoders"
_started: dict[str, Future] = {}  # fingerprint -> the read begun by `start`


def note_path(tokenizer_argument: str) -> Path:
    """Where the note for a `--tokenizer` argument lives: by name, or by a digest of a folder's full path."""
    key = tokenizer_argument if tokenizer_argument.replace("-", "").isalnum() else hashlib.sha256(
        str(Path(tokenizer_argument).resolve()).encode()).hexdigest()[:16]
    return NOTE_DIR / f"early-{key}.json"


def files_digest(paths: list[str]) -> str:
    """One digest of the files' bytes (a tokenizer's model files: 4 MB for Llama 3, read in 10 ms)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


def read_vocabulary(recipe: dict):
    """fastokens' encoder as `recipe` says to read it: a `tokenizer.json` (`{"file": path}`), or a tiktoken file
    with one of fastokens' own patterns (`{"tiktoken": path, "preset": name, "special_tokens": {...}}`)."""
    import fastokens

    if "tiktoken" in recipe:
        return fastokens.Tokenizer.from_tiktoken(recipe["tiktoken"], encoding=recipe["preset"],
                                                 special_tokens=recipe["special_tokens"])
    return fastokens.Tokenizer.from_file(recipe["file"])


def encoding_seconds(costs: dict, megabytes: float, processes: int, partitions: int = 1) -> tuple[float, float]:
    """Seconds of encoding `megabytes` with fastokens (its vocabulary read included, once in each partition, on
    `processes` at once) and with the reference on `processes`, from the proof's measured `costs`
    (`vocabulary_read_s`, `fast_mb_s`, `reference_mb_s`)."""
    reads = costs["vocabulary_read_s"] * partitions / min(partitions, processes)
    return reads + megabytes / costs["fast_mb_s"], megabytes / (costs["reference_mb_s"] * processes)


def remember(tokenizer_argument: str, note: dict) -> None:
    """Leave `note` (fingerprint, sources, digest, recipe, costs, margin) for the next command with this
    `--tokenizer`; written only where it changed."""
    path = note_path(tokenizer_argument)
    text = json.dumps(note, sort_keys=True)
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, text)


def _flags(argv: list[str]) -> argparse.Namespace:
    """The few flags of the command line that decide whether it will encode with fastokens."""
    parser = argparse.ArgumentParser(add_help=False)
    for flag, default in (("--tokenizer", None), ("--input", None), ("--encoder", "auto"), ("--partitions", "1"),
                          ("--engine", "local"), ("--workers", None)):
        parser.add_argument(flag, default=default)
    parser.add_argument("--parse-special-tokens", action="store_true")
    return parser.parse_known_args(argv)[0]


def _wanted(flags: argparse.Namespace, note: dict) -> bool:
    """Whether a run with these flags will encode with fastokens in this process: not the reference, not special
    strings parsed, one local partition, and with `auto` an input large enough to pay for the read."""
    if flags.encoder == "reference" or flags.parse_special_tokens or flags.partitions != "1" or flags.engine != "local":
        return False
    try:
        megabytes = os.stat(flags.input).st_size / 1e6
        processes = max(1, min(int(flags.workers or os.cpu_count() or 1), os.cpu_count() or 1))
    except (OSError, TypeError, ValueError):
        return False
    with_fast, with_reference = encoding_seconds(note["costs"], megabytes, processes)
    return flags.encoder == "fast" or with_reference * note["margin"] >= with_fast


def _read_if_unchanged(note: dict):
    """The encoder `note` describes, or None where its files changed since (their digest differs)."""
    try:
        if files_digest(note["sources"]) != note["digest"]:
            return None
        return read_vocabulary(note["recipe"])
    except Exception:  # noqa: BLE001  a note that no longer holds: the run reads the vocabulary itself
        return None


def start(argv: list[str]) -> None:
    """Begin reading the vocabulary that a note names for this command line's `--tokenizer`, where the run will
    want it; nothing otherwise (no note, an unreadable one, other flags, a small input)."""
    flags = _flags(argv)
    if not flags.tokenizer:
        return
    try:
        note = json.loads(note_path(flags.tokenizer).read_text(encoding="utf-8"))
        if not _wanted(flags, note):
            return
    except (OSError, ValueError, KeyError, TypeError):
        return
    reader = ThreadPoolExecutor(1, thread_name_prefix="early-vocabulary")
    _started[note["fingerprint"]] = reader.submit(_read_if_unchanged, note)
    reader.shutdown(wait=False)


def take(fingerprint: str):
    """The encoder `start` read for a tokenizer with this fingerprint (waiting for the read to end), or None."""
    future = _started.pop(fingerprint, None)
    return None if future is None else future.result()


def started(fingerprint: str) -> bool:
    return fingerprint in _started
