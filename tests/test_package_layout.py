"""The shape of `helpers`: subpackages in layers that import only downwards, no import cycle, a short top
level, and calls that name their arguments. Read from the source, so a change that breaks the layout fails
here before anyone has to notice it in a diagram."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers.common.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "helpers"

# Bottom to top: a package may import from the layers below its own, never from its own layer or above.
LAYERS = [
    {"common"},
    {"engines", "corpus", "kernel"},
    {"tokenizers", "decontamination"},  # decontamination reads evaluation sets (corpus) and is handed tokenizers
    {"datasets"},
    {"check", "preprocess", "clean", "loading"},
    {"audit"},  # reads any loader's batches, and a loader's state (its ledger)
    {"training"},
    {"workshop"},
    {"runs"},
]
MAX_TOP_LEVEL = 16  # __init__ and 15 packages: one per concept a learner meets
MAX_POSITIONAL = 4


def _modules() -> dict[str, Path]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's own modules that `name` imports, anywhere in it (function bodies included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            candidates = [target] + [f"{target}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        found.update(c for c in candidates if c in modules and c != name)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _top(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_top_level_package_has_a_layer_and_the_top_level_is_short():
    entries = {p.stem if p.suffix == ".py" else p.name for p in PACKAGE.iterdir()
               if p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists())}
    assert len(entries) <= MAX_TOP_LEVEL, sorted(entries)
    layered = set().union(*LAYERS)
    assert entries - {"__init__"} == layered, "give every top-level package a layer in LAYERS, and no other"


def test_packages_import_only_from_layers_below_their_own():
    layer = {package: level for level, packages in enumerate(LAYERS) for package in packages}
    upward = []
    for module, targets in _graph().items():
        for target in targets:
            here, there = _top(module), _top(target)
            if here is None or here == there:
                continue
            if layer[there] >= layer[here]:
                upward.append(f"{module} -> {target}")
    assert not upward, "imports that do not run downwards:\n" + "\n".join(sorted(upward))


def test_no_import_cycle():
    graph = _graph()
    state: dict[str, str] = {}

    def visit(module: str, trail: list[str]) -> None:
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                raise AssertionError("import cycle: " + " -> ".join(trail[trail.index(target):] + [target]))
            if target not in state:
                visit(target, trail + [target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_no_call_passes_more_than_four_arguments_by_position():
    crowded = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and len(node.args) > MAX_POSITIONAL:
                crowded.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno} {ast.unparse(node.func)}")
    assert not crowded, "name the arguments (or hand a settings object) in:\n" + "\n".join(crowded)


def test_the_layout_checks_see_an_upward_import_and_a_crowded_call(tmp_path):
    """The checks above read real source: an upward import and a five-argument call are found."""
    source = "from ..runs import command\nf(1, 2, 3, 4, 5)\n"
    path = tmp_path / "helpers" / "common" / "bad.py"
    path.parent.mkdir(parents=True)
    path.write_text(source)
    modules = {"helpers.common.bad": path, "helpers.runs.command": tmp_path / "unused.py"}
    assert _imports("helpers.common.bad", path, modules) == {"helpers.runs.command"}
    calls = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call) and len(n.args) > MAX_POSITIONAL]
    assert len(calls) == 1
