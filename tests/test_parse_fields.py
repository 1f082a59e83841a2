"""`parse_fields` (orjson, what preprocessing reads with) gives `parse_record`'s verdict on every line: the
same texts for a good one, the same kind and message for a bad one."""

from __future__ import annotations

import pytest

from helpers.corpus.jsonl import BadRecord, parse_fields, parse_record

GOOD = [
    b'{"text": "plain"}\n',
    b'{"text": "a pair \\ud83d\\ude00 is one character", "id": 3}',
    b'{"text": "", "title": "empty text is a document"}',
    b'{"title": "t", "text": "caf\xc3\xa9 \\u00e9 \\u0000 nul"}',
    b' {"text": "spaces round it"} \r',
    b'{"text": ["a", "list", "of strings"]}',
    b'{"text": "x", "n": 123456789012345678901234567890}',  # orjson reads this integer as a float
    b'{"text": "x", "score": NaN, "big": 1e400}',  # and refuses these two: parse_record reads the line
    b'{"text": "same name twice, elsewhere", "meta": {"text": 1}}',
]
BAD = [
    b'{"text": "broken"',
    b'{"text": "a\xff"}',
    b'\xef\xbb\xbf{"text": "a BOM"}',
    b'{"text": "lone \\ud800 surrogate"}',
    b'{"text": "lone low \\udc00"}',
    b'{"text": 5}',
    b'{"text": null}',
    b'{"text": ["a", 2]}',
    b'{"body": "no text"}',
    b'["not", "an object"]',
    b'{"text": "one", "text": "two"}',
    b'{"text": "x\x01"}',
    b'[' * 2000 + b']' * 2000,
]


@pytest.mark.parametrize("line", GOOD)
def test_a_good_line_gives_the_same_texts(line):
    assert parse_fields(line, ("text",), allow_lists=True) == {"text": parse_record(line, ("text",), True)["text"]}


@pytest.mark.parametrize("line", BAD)
def test_a_bad_line_gives_the_same_kind_and_message(line):
    def verdict(parse):
        try:
            parse(line, ("text",), True)
        except BadRecord as bad:
            return bad.kind, bad.reason
        return None

    expected = verdict(parse_record)
    assert expected is not None and verdict(parse_fields) == expected


def test_only_the_fields_asked_for_are_kept():
    assert parse_fields(b'{"text": "a", "title": "b", "n": 1}', ("title", "text")) == {"title": "b", "text": "a"}


def test_a_list_is_refused_where_lists_are_not_allowed():
    with pytest.raises(BadRecord, match="not a string"):
        parse_fields(b'{"text": ["a"]}', ("text",))
