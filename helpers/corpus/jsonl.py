"""JSONL records: the rules every reader in `helpers` applies, written once.

Lines. A file is read as bytes and cut where Python's text mode cuts it, which is what Megatron-LM's
`tools/preprocess_data.py` reads with: `\\n`, `\\r\\n` or a bare `\\r` ends a line. Line numbers count
`\\n` (what `wc -l`, `sed -n 5p` and most editors count); a record that only a bare `\\r` separates from
the one before is named by its line and its place in it: `file:3 (record 2 of the line, after a bare CR)`.
Blank lines are not records. A UTF-8 byte order mark at the very start of the file is skipped, as
Python's `utf-8-sig` codec does (Megatron's reader stops on it); anywhere else it is a bad record.

Records. A line is a good record when its bytes are UTF-8, it is one JSON object, and every field asked
for is there once and is a string, or, where lists are allowed (preprocessing, as Megatron's tool does), a
list of strings (a field named twice is refused: a JSON reader keeps one of the two values without a word).
No string may hold a lone surrogate: JSON allows the escape `\\ud800` on its own, but UTF-8 cannot
encode it, so no tokenizer can read it. A bad record raises `BadRecord`: its kind (for the counts of
`--skip-bad-records`) and one line saying what is wrong and how to fix it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Iterator

import orjson

from ..common.errors import UserError

UTF8_BOM = b"\xef\xbb\xbf"
JSON_TYPES = {dict: "object", list: "array", str: "string", int: "number", float: "number", bool: "boolean",
              type(None): "null"}


class BadRecord(ValueError):
    """A line that is not a usable record: `kind` names the rule it breaks, `reason` says it with a fix; `record`
    is the JSON object the line holds, where it holds one (its other fields, an id, are still readable)."""

    def __init__(self, kind: str, reason: str, record: dict | None = None):
        super().__init__(reason)
        self.kind, self.reason, self.record = kind, reason, record


def offering_skip(where: str, reason: str, skipped: str) -> str:
    """A bad record's one line, its fix ending with the way past it, `--skip-bad-records` (`skipped`: what becomes of
    the records it skips), so that a user with a large file need not repair it line by line."""
    what, _, fix = reason.partition("; fix: ")
    return (f"{where}: {what}; fix: {fix + ', or ' if fix else ''}pass --skip-bad-records to go on without such "
            f"records ({skipped})")


def check_json_keys(keys: Iterable[str]) -> tuple[str, ...]:
    """The fields to read; none, or one named twice (each would be written twice), is refused."""
    keys = tuple(keys)
    if not keys:
        raise UserError("no field to read; fix: name at least one with --json-keys")
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise UserError(f"--json-keys: {', '.join(repr(k) for k in twice)} named twice; fix: name each field once")
    return keys


def split_line(raw: bytes) -> list[bytes]:
    """A `\\n`-terminated line cut into the lines text mode sees: a bare `\\r` ends one too."""
    if b"\r" not in raw:
        return [raw]
    return raw.splitlines() or [raw]


def numbered_lines(raw_lines: Iterable[bytes], first_line: int = 1) -> Iterator[tuple[int, int, bytes]]:
    """(line number, place in the line, line) for raw `\\n`-lines numbered from `first_line`; the place is
    0 unless bare CRs cut the line, then 1, 2, ... The file's leading byte order mark is dropped."""
    for number, raw in enumerate(raw_lines, start=first_line):
        if number == 1 and raw.startswith(UTF8_BOM):
            raw = raw[len(UTF8_BOM):]
        pieces = split_line(raw)
        if len(pieces) == 1:
            yield number, 0, pieces[0]
        else:
            for place, piece in enumerate(pieces, start=1):
                yield number, place, piece


def location(source: str | os.PathLike, number: int, place: int = 0) -> str:
    """`file:line`, with the record's place when bare CRs cut the line."""
    where = f"{source}:{number}"
    return where if not place else f"{where} (record {place} of the line, after a bare CR)"


def is_blank(line: bytes) -> bool:
    return not line.strip()


def _json_type(value) -> str:
    return JSON_TYPES.get(type(value), type(value).__name__)


def _texts_of(record: dict, key: str, allow_lists: bool) -> list[str]:
    """The strings held by field `key`, or a `BadRecord` saying why it holds none."""
    if key not in record:
        raise BadRecord("missing key", f"record has no '{key}' field (fields: {', '.join(sorted(record)) or 'none'}); "
                                       "fix: add it, or name the field that holds the text (--json-keys of "
                                       "helpers.preprocess, --json-key of helpers.clean)")
    value = record[key]
    if isinstance(value, str):
        return [value]
    wanted = "a string or a list of strings" if allow_lists else "a string"
    if not (allow_lists and isinstance(value, list)):
        raise BadRecord("non-string value", f"field '{key}' is a JSON {_json_type(value)}, not {wanted}; "
                                            "fix: store text as a string")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise BadRecord("non-string value", f"field '{key}' item {i} is a JSON {_json_type(item)}, not a string; "
                                                "fix: store text as a string or a list of strings")
    return value


def _names_twice(line: str) -> set[str]:
    """The field names the record's top-level object holds more than once."""
    objects: list[list[str]] = []

    def keep_names(pairs):
        objects.append([name for name, _ in pairs])
        return dict(pairs)

    json.loads(line, object_pairs_hook=keep_names)
    names = objects[-1]  # the outermost object is completed last
    return {name for name in names if names.count(name) > 1}


def _check_named_once(raw: bytes, keys: tuple[str, ...]) -> None:
    """Refuse a record naming a field to read twice; the full check runs only when the name occurs twice."""
    for key in keys:
        if raw.count(json.dumps(key, ensure_ascii=False).encode()) > 1 and key in _names_twice(raw.decode("utf-8")):
            raise BadRecord("duplicate field", f"field '{key}' appears twice in the record (a JSON reader keeps one "
                                               "value and drops the other); fix: keep one per record")


def _check_surrogates(key: str, texts: list[str]) -> None:
    """Refuse a string holding a lone surrogate, which UTF-8 (and so every tokenizer) cannot encode."""
    for text in texts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:
            raise BadRecord("lone surrogate", f"field '{key}' holds a lone surrogate (\\u{ord(text[err.start]):04x} at "
                                              f"character {err.start}), which UTF-8 cannot encode; fix: repair the "
                                              "escape (a pair like \\ud83d\\ude00 is one character) or drop the "
                                              "record") from None


def parse_record(raw: bytes, keys: tuple[str, ...], allow_lists: bool = False) -> dict:
    """One JSONL line as a record whose fields `keys` hold text, or a `BadRecord`."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadRecord("invalid UTF-8",
                        f"invalid UTF-8 at byte {err.start}; fix: re-encode the file as UTF-8") from None
    if line.startswith("\ufeff"):
        raise BadRecord("byte order mark", "the line starts with a UTF-8 byte order mark (BOM), which only the "
                                           "start of a file may hold; fix: remove it (files joined with cat keep "
                                           "each one's BOM)")
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        raise BadRecord("invalid JSON", f"invalid JSON ({err.msg} at column {err.colno}); "
                                        "fix: one JSON object per line") from None
    except RecursionError:
        raise BadRecord("invalid JSON", "JSON nested too deep to read (arrays or objects hundreds of levels "
                                        "deep); fix: flatten the record") from None
    if not isinstance(record, dict):
        raise BadRecord("not an object", f"record is a JSON {_json_type(record)}, not an object; "
                                         "fix: one JSON object per line")
    try:
        _check_named_once(raw, keys)
        may_hold_surrogates = b"\\ud" in raw or b"\\uD" in raw  # only an escape can put one in a string
        for key in keys:
            texts = _texts_of(record, key, allow_lists)
            if may_hold_surrogates:
                _check_surrogates(key, texts)
    except BadRecord as bad:
        bad.record = record
        raise
    return record


def read_jsonl(path: str | os.PathLike, key: str = "text") -> Iterator[dict]:
    """Yield the records of a JSONL file whose `key` is a string; a bad one raises a `UserError` naming
    the file and line (the rules are in this module's docstring)."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file; fix: check the path")
    with path.open("rb") as handle:
        for number, place, line in numbered_lines(handle):
            if is_blank(line):
                continue
            try:
                yield parse_record(line, (key,))
            except BadRecord as bad:
                raise UserError(f"{location(path, number, place)}: {bad.reason}") from None


def parse_fields(raw: bytes, keys: tuple[str, ...], allow_lists: bool = False) -> dict:
    """`parse_record`'s verdict on a line, holding only the fields `keys` (all preprocessing reads), read
    about five times faster by orjson. orjson refuses what UTF-8 and JSON refuse, a byte order mark and
    every lone surrogate, so what it accepts needs only the field checks; whatever it refuses goes through
    `parse_record`, which accepts the same lines as before (a NaN or an integer too big for 64 bits
    elsewhere in the record) and words the message of the ones it refuses. Other fields are not kept:
    orjson reads integers past 64 bits as floats."""
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError:
        record = None
    if not isinstance(record, dict):
        return {key: value for key, value in parse_record(raw, keys, allow_lists).items() if key in keys}
    _check_named_once(raw, keys)
    for key in keys:
        _texts_of(record, key, allow_lists)
    return {key: record[key] for key in keys}
