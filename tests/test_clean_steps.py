"""The step interface of `helpers.clean` (`helpers.clean.steps.base`): a filter and a formatter written outside the
package run between the package's own steps, on real text, with the same outputs for 1, 2 and 7 parts; every
removal names its step and its reason; the result is what applying the steps one document at a time gives."""

from __future__ import annotations

import json
import re

import pytest

from helpers.clean import clean
from helpers.clean.steps.exact import ExactDedup
from helpers.clean.steps.normalize import Normalize
from helpers.clean.steps.registry import read_settings, steps_asked, switches
from helpers.clean.steps.base import Dedup, DocumentStep, Filter, Formatter, Labeller
from helpers.clean.text.text_keys import exact_digest, is_empty, normalize_text
from helpers.common.errors import UserError

DOMAINS = ("literature", "docs", "code")


class ShortLines(Filter):
    """Drops a document whose non-empty lines are shorter than `limit` characters on average (verse, terse code)."""

    name = "short_lines"

    def __init__(self, limit: float):
        self.limit = limit

    def reason(self, text: str) -> str | None:
        lines = [line for line in text.split("\n") if line.strip()]
        mean = sum(map(len, lines)) / max(len(lines), 1)
        return f"mean line length {mean:.1f} < {self.limit:g}" if mean < self.limit else None


class Lowercase(Formatter):
    name = "lowercase"

    def format(self, text: str, notes: dict) -> str:
        return text.lower()


def steps() -> list:
    return [Normalize(), ShortLines(45), Lowercase(), ExactDedup()]


def expected(corpus_dir) -> tuple[dict, list]:
    """Per input, the texts kept; and every removal (file, step, reason): the steps applied to one document at a
    time, in order, the first of each lowercased text kept across all inputs."""
    kept, removed, seen = {}, [], set()
    for domain in DOMAINS:
        kept[domain] = []
        for number, line in enumerate(open(corpus_dir / f"{domain}.jsonl", encoding="utf-8"), start=1):
            text = normalize_text(json.loads(line)["text"])
            if is_empty(text):
                removed.append((f"{domain}.jsonl", number, "normalize", "no visible text left after normalising"))
                continue
            reason = ShortLines(45).reason(text)
            if reason is not None:
                removed.append((f"{domain}.jsonl", number, "short_lines", reason))
                continue
            text = text.lower()
            if exact_digest(text) in seen:
                removed.append((f"{domain}.jsonl", number, "exact", None))
                continue
            seen.add(exact_digest(text))
            kept[domain].append(text)
    return kept, removed


@pytest.mark.parametrize("parts, workers", [(1, 1), (2, 2), (7, 2)])
def test_steps_written_outside_the_package_run_between_its_own(corpus_dir, tmp_path, parts, workers):
    inputs = [corpus_dir / f"{domain}.jsonl" for domain in DOMAINS]
    report = clean(inputs, tmp_path, steps=steps(), parts=parts, workers=workers, progress=False)
    kept, removed = expected(corpus_dir)
    assert 0 < sum(map(len, kept.values())) < sum(1 for domain in DOMAINS for _ in open(corpus_dir / f"{domain}.jsonl"))
    assert {reason[2] for reason in removed} >= {"short_lines", "exact"}  # the filter and the dedup both decide
    for domain in DOMAINS:
        written = [json.loads(line)["text"] for line in open(tmp_path / f"{domain}.jsonl", encoding="utf-8")]
        assert written == kept[domain]
    listed = [json.loads(line) for line in open(tmp_path / "removed.jsonl", encoding="utf-8")]
    assert [(entry["file"], entry["line"], entry["step"], entry.get("reason")) for entry in listed] == removed
    assert report["settings"]["steps"] == ["normalize", "short_lines", "lowercase", "exact"]
    assert [row["step"] for row in report["inputs"][0]["steps"]] == ["read", "normalize", "short_lines", "lowercase",
                                                                     "exact"]


def test_the_flags_give_the_package_steps_in_order():
    settings = read_settings(dict(normalize=True, exact=True, lines=True, fuzzy=True, pii=True, languages="en",
                                  filters=("c4-quality", "gopher-quality")))
    made = steps_asked(settings)
    assert [step.name for step in made] == ["normalize", "language", "c4_quality", "gopher_quality", "exact", "lines",
                                            "fuzzy", "pii"]
    assert all(isinstance(step, DocumentStep) for step in made[:4] + made[-1:])
    assert all(isinstance(step, Dedup) for step in made[4:-1])


def test_two_steps_of_one_name_are_refused(corpus_dir, tmp_path):
    with pytest.raises(UserError, match="two steps named 'normalize'"):
        clean([corpus_dir / "docs.jsonl"], tmp_path, steps=[Normalize(), Normalize()], progress=False)


class LineCount(Labeller):
    """Labels each document with its line count and first word; drops one of fewer than `least` lines."""

    name = "line_count"
    fields = {"line_count": "float", "first_word": "string"}

    def __init__(self, least: int):
        self.least = least

    def judge(self, text: str) -> tuple[str | None, dict]:
        count = text.count("\n") + 1
        labels = {"line_count": float(count), "first_word": (text.split() or [""])[0]}
        return (f"lines: {count} < {self.least}" if count < self.least else None), labels


@pytest.mark.parametrize("parts", [1, 5])
def test_a_labeller_s_labels_are_written_as_fields_and_columns(corpus_dir, tmp_path, parts):
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = [json.loads(line) for line in open(corpus_dir / "docs.jsonl", encoding="utf-8")]
    parquet = tmp_path / "docs.parquet"
    pq.write_table(pa.Table.from_pylist(records), parquet, row_group_size=10)
    report = clean([corpus_dir / "docs.jsonl"], tmp_path / "jsonl", steps=[LineCount(20), ExactDedup()], parts=parts,
                   workers=2, progress=False)
    clean([parquet], tmp_path / "parquet", steps=[LineCount(20), ExactDedup()], parts=parts, workers=2, progress=False)
    judged = [(record, LineCount(20).judge(record["text"])) for record in records]
    wanted = [{**record, **labels} for record, (reason, labels) in judged if reason is None]
    assert 0 < len(wanted) < len(records) and report["inputs"][0]["steps"][1]["removed"] > 0
    written = [json.loads(line) for line in open(tmp_path / "jsonl" / "docs.jsonl", encoding="utf-8")]
    assert written == [record for record in wanted if record["id"] not in
                       {entry["id"] for entry in map(json.loads, open(tmp_path / "jsonl" / "removed.jsonl"))}]
    table = pq.read_table(tmp_path / "parquet" / "docs.parquet")
    assert table.schema.names == [*records[0], "line_count", "first_word"]
    assert table.schema.field("line_count").type == pa.float64()
    assert table.to_pylist() == written


def test_a_step_setting_beside_steps_of_one_s_own_is_refused(corpus_dir, tmp_path):
    with pytest.raises(UserError, match="so threshold would be ignored"):
        clean([corpus_dir / "docs.jsonl"], tmp_path, steps=[Normalize()], threshold=0.5, progress=False)


def test_an_unknown_keyword_is_refused_as_python_refuses_one(corpus_dir, tmp_path):
    with pytest.raises(TypeError, match="unexpected keyword argument 'thresold'"):
        clean([corpus_dir / "docs.jsonl"], tmp_path, exact=True, thresold=0.5, progress=False)


def test_the_on_off_switches_come_from_the_registry():
    assert switches() == ("normalize", "exact", "lines", "fuzzy", "pii")


@pytest.mark.parametrize("settings, message", [
    (dict(exact=True, threshold=0.9), "threshold=0.9: only the fuzzy step reads it, and it is not asked for"),
    (dict(fuzzy=True, threshold="high"), "threshold='high': needs a number; fix: e.g. threshold=0.8"),
    (dict(lines=True, line_min_count=2.5), "line_min_count=2.5: needs a whole number"),
])
def test_a_setting_python_cannot_use_is_refused_in_one_line(corpus_dir, tmp_path, settings, message):
    with pytest.raises(UserError, match=re.escape(message)):
        clean([corpus_dir / "docs.jsonl"], tmp_path, progress=False, **settings)
