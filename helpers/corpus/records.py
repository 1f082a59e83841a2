"""The good records of a batch, and its bad ones, by the same rules for every reader (preprocessing and every
pass of cleaning): a batch of JSONL lines (`helpers.corpus.ranges`) or of columnar rows
(`helpers.corpus.columnar`) in, `(number, place, raw line, record)` out for each good record, where `number` and
`place` are the line and its place in it (bare CRs: `helpers.corpus.jsonl`), or the row in its file and its
group's number; `raw` is the line's bytes (None for a row). A bad record goes to the caller's `bad`, with where
it is in words, and is not yielded."""

from __future__ import annotations

from typing import Callable, Iterator

from .columnar import RowsBatch
from .jsonl import BadRecord, is_blank, location, numbered_lines, parse_fields, parse_record

NULL_KIND = "null value"

Bad = Callable[..., None]  # (number, place, kind, reason, where in words[, record]), by keyword


def null_reason(key: str) -> str:
    return f"column '{key}' is null; fix: drop the row or store text (an empty string is an empty document)"


def records(batch, keys: tuple[str, ...], bad: Bad, counts: dict, *, lists: bool = False,
            whole: bool = False, with_record: bool = False) -> Iterator[tuple[int, int, bytes | None, dict]]:
    """The good records of `batch` whose fields (columns) `keys` hold text: strings, or with `lists` lists of
    strings. A JSONL record holds `keys` only, or with `whole` all its fields; a row holds the batch's columns.
    `counts["bytes"]` adds the batch's bytes of JSONL, or its good rows' UTF-8 bytes of `keys`;
    `counts["blank"]` its blank lines, `counts["read"]` its lines or rows. With `with_record`, `bad` is also given
    the bad record as read (`record`; None for a line that holds no JSON object), so that its id can be named."""
    if not with_record:
        bad = _without_record(bad)
    if isinstance(batch, RowsBatch):
        yield from _rows(batch, keys, bad, counts)
        return
    source, first_line, lines = batch
    counts["read"] = counts.get("read", 0) + len(lines)
    counts["bytes"] += sum(map(len, lines))
    parse = parse_record if whole else parse_fields
    for number, place, line in numbered_lines(lines, first_line):
        if is_blank(line):
            counts["blank"] += 1
            continue
        try:
            record = parse(line, keys, lists)
        except BadRecord as error:
            bad(number=number, place=place, kind=error.kind, reason=error.reason, where=location(source, number, place),
                record=error.record)
            continue
        yield number, place, line, record


def _without_record(bad: Bad) -> Bad:
    """`bad` called as it was written: with where the record is and what is wrong, not the record itself."""
    def called(record, **where_and_why) -> None:
        bad(**where_and_why)
    return called


def _rows(batch: RowsBatch, keys: tuple[str, ...], bad: Bad, counts: dict) -> Iterator[tuple[int, int, None, dict]]:
    """A batch of rows as records; a null where text belongs is a bad record, as a JSON null is."""
    columns = batch.columns
    counts["read"] = counts.get("read", 0) + len(columns[keys[0]])
    for index in range(len(columns[keys[0]])):
        record = {name: values[index] for name, values in columns.items()}
        null = next((key for key in keys if record[key] is None or (isinstance(record[key], list)
                                                                    and None in record[key])), None)
        row = batch.first_row + index
        if null is not None:
            bad(number=row, place=batch.index, kind=NULL_KIND, reason=null_reason(null), where=batch.location(index),
                record=record)
            continue
        counts["bytes"] += sum(len(text.encode("utf-8")) for key in keys for text in texts_of(record[key]))
        yield row, batch.index, None, record


def texts_of(value: str | list[str]) -> list[str]:
    """A field's strings: the string itself, or a list of strings (a document of several sequences)."""
    return [value] if isinstance(value, str) else value
