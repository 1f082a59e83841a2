"""`benchmarks/outside_corpus.py` builds the quality benchmark's corpus of text the project did not write from the
machine's own files: every kind present, within its size, each record valid; a kind the machine lacks is an
error, never an empty file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import outside_corpus  # noqa: E402


def test_every_kind_is_built_within_its_size(tmp_path):
    sizes = outside_corpus.build(tmp_path, 0.05)
    assert set(sizes) == set(outside_corpus.KINDS)
    ids = set()
    for kind, (count, size) in sizes.items():
        records = [json.loads(line) for line in (tmp_path / f"{kind}.jsonl").read_text(encoding="utf-8").splitlines()]
        assert len(records) == count > 0 and size <= 50_000
        assert all(len(record["text"]) >= outside_corpus.MIN_CHARACTERS for record in records)
        ids.update(record["id"] for record in records)
    assert len(ids) == sum(count for count, _ in sizes.values())


def test_html_pages_lose_their_tags_scripts_and_styles():
    page = "<html><style>p {color: red}</style><body><h1>Title</h1><p>One &amp; two</p><script>x()</script></body>"
    assert outside_corpus.stripped_html(page) == "Title\nOne & two"


def test_a_kind_the_machine_lacks_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setitem(outside_corpus.PLACES, "texinfo", [str(tmp_path / "nowhere" / "*.info")])
    with pytest.raises(SystemExit, match="texinfo: no such text on this machine"):
        outside_corpus.build(tmp_path / "out", 0.01)
