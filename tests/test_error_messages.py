"""Every error the package raises for a user's mistake says what to do about it ("fix: ...")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from helpers.common.paths import REPO_ROOT

USER_ERRORS = {"UserError", "DataNotFoundError", "IndexFormatError"}


def _raised_messages(path: Path):
    """(line, message node) of every user error constructed in a module with its message written out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        name = getattr(node.func, "id", getattr(node.func, "attr", None))
        message = node.args[0]
        if name in USER_ERRORS and isinstance(message, (ast.Constant, ast.JoinedStr)):
            yield node.lineno, message


def _ends_with_a_passed_on_reason(message: ast.AST) -> bool:
    """`f"{where}: {reason}"`: the reason, made elsewhere, carries the fix."""
    return isinstance(message, ast.JoinedStr) and isinstance(message.values[-1], ast.FormattedValue)


MODULES = sorted((REPO_ROOT / "helpers").rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[p.relative_to(REPO_ROOT / "helpers").as_posix() for p in MODULES])
def test_every_user_error_says_the_fix(path):
    missing = []
    for line, message in _raised_messages(path):
        text = "".join(v.value for v in ast.walk(message) if isinstance(v, ast.Constant) and isinstance(v.value, str))
        if "fix" not in text and not _ends_with_a_passed_on_reason(message):
            missing.append(f"{path.relative_to(REPO_ROOT)}:{line}: {text[:80]!r}")
    assert not missing, "user errors without a fix: " + "; ".join(missing)
