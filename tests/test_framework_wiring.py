"""What notebook 08 quotes and skips: excerpts read from the example scripts, and one line for a framework whose
package is missing."""

from __future__ import annotations

import pytest

from helpers.common.errors import UserError
from helpers.workshop import frameworks
from helpers.workshop.frameworks import excerpt, not_installed


def test_an_excerpt_is_the_files_own_lines_from_first_to_last():
    text = excerpt("examples/trainer.py", "TrainingArguments(", "remove_unused_columns")
    header, *body = text.splitlines()
    assert header.startswith("examples/trainer.py, lines ") and "TrainingArguments(" in body[0]
    assert "remove_unused_columns" in body[-1] and all(line.startswith("    ") for line in body)
    start, end = map(int, header.rstrip(":").split("lines ")[1].split("-"))
    assert end - start + 1 == len(body)


def test_an_excerpt_of_a_line_the_file_lacks_is_one_clear_error():
    with pytest.raises(UserError, match="has no line with 'no such line'"):
        excerpt("examples/trainer.py", "no such line")


def test_a_missing_package_is_one_line_with_its_fix(monkeypatch):
    assert not_installed("helpers.training") is None
    monkeypatch.setitem(frameworks.PACKAGES, "deepspeed", ("no_such_package.sub", "pip install -e '.[deepspeed]'"))
    assert not_installed("deepspeed") == ("deepspeed: no_such_package.sub is not installed, so it is skipped; "
                                          "fix: pip install -e '.[deepspeed]'")
