"""The size of the package's pieces, read from its source: no function takes more than 10 parameters (a settings
object is handed whole instead), none is longer than 60 lines, no module docstring runs past 25 lines (long
explanations live in docs/), and no module imports another module's private (`_name`) names."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers.common.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "helpers"
MOST_PARAMETERS = 10  # self and cls not counted; *args and **kwargs one each
MOST_LINES = 60
MOST_DOCSTRING_LINES = 25


def _functions(tree: ast.AST):
    return [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _parameters(function: ast.FunctionDef) -> int:
    arguments = function.args
    names = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    count = len(names) + (arguments.vararg is not None) + (arguments.kwarg is not None)
    return count - (bool(arguments.args) and arguments.args[0].arg in ("self", "cls"))


def shape_faults(path: Path, own: str = "helpers") -> list[str]:
    """What in the module at `path` breaks the limits above; `own`: the package whose private names are checked."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    faults = []
    docstring = ast.get_docstring(tree, clean=False) or ""
    if len(docstring.splitlines()) > MOST_DOCSTRING_LINES:
        faults.append(f"module docstring of {len(docstring.splitlines())} lines")
    for function in _functions(tree):
        if _parameters(function) > MOST_PARAMETERS:
            faults.append(f"{function.name} takes {_parameters(function)} parameters")
        if function.end_lineno - function.lineno + 1 > MOST_LINES:
            faults.append(f"{function.name} is {function.end_lineno - function.lineno + 1} lines long")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(own)):
            faults += [f"imports {alias.name} from {node.module}" for alias in node.names
                       if alias.name.startswith("_") and not alias.name.startswith("__")]
    return faults


def test_every_module_of_the_package_keeps_the_limits():
    faults = [f"{path.relative_to(REPO_ROOT)}: {fault}" for path in sorted(PACKAGE.rglob("*.py"))
              for fault in shape_faults(path)]
    assert not faults, "\n".join(faults)


def test_the_limits_are_seen_in_real_source(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(60))
    docstring = '"""' + "\n".join(["line"] * 26) + '"""\n'
    source = (docstring + "from .table import _rolled\nfrom helpers.common import _hidden\nimport re\n"
              "def crowded(a, b, c, d, e, f, g, h, i, j, k):\n    pass\n"
              "class Fine:\n    def method(self, a, b, c, d, e, f, g, h, i, j):\n        pass\n"
              f"def long():\n{body}\n")
    path = tmp_path / "bad.py"
    path.write_text(source)
    assert shape_faults(path) == ["module docstring of 26 lines", "crowded takes 11 parameters",
                                  "long is 61 lines long", "imports _rolled from table",
                                  "imports _hidden from helpers.common"]
