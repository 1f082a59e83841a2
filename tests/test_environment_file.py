"""environment.yml stays in step with pyproject.toml (same packages, conda-forge only); constraints.txt pins them."""

from __future__ import annotations

import re
import sys

import yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 has no tomllib; the test extra installs tomli there
    import tomli as tomllib

from helpers.common.paths import REPO_ROOT

# PyPI name -> conda-forge name, where they differ.
CONDA_NAMES = {"torch": "pytorch"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement.strip(), maxsplit=1)[0].lower()


def _without_marker(requirement: str) -> str:
    """`tomli>=2.0; python_version < '3.11'` -> `tomli>=2.0`: conda's file has no environment markers."""
    return requirement.split(";", 1)[0].strip()


def _load():
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    env = yaml.safe_load((REPO_ROOT / "environment.yml").read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    return project, env, conda, pip


def test_only_conda_forge():
    _, env, _, _ = _load()
    assert env["channels"] == ["conda-forge"]


def test_every_dependency_is_in_the_environment():
    project, _, conda, pip = _load()
    declared = {_name(r) for r in project["dependencies"] + project["optional-dependencies"]["test"]}
    provided = {_name(d) for d in conda} | {_name(d) for d in pip if not d.startswith("-e")}
    missing = {CONDA_NAMES.get(n, n) for n in declared} - provided
    assert not missing, f"in pyproject.toml but not in environment.yml: {sorted(missing)}"
    extra = provided - {CONDA_NAMES.get(n, n) for n in declared} - {"python", "pip"}
    assert not extra, f"in environment.yml but not in pyproject.toml: {sorted(extra)}"


def test_versions_agree():
    project, _, conda, pip = _load()
    declared = {CONDA_NAMES.get(_name(r), _name(r)): _without_marker(r).split(_name(r), 1)[-1].strip()
                for r in project["dependencies"] + project["optional-dependencies"]["test"]}
    for entry in conda + [p for p in pip if not p.startswith("-e")]:
        name = _name(entry)
        if name in declared:
            assert entry.lower().split(name, 1)[-1].strip() == declared[name].lower(), entry


def test_the_workshop_packages_are_named_and_the_package_installed_editable():
    _, _, conda, pip = _load()
    names = {_name(d) for d in conda}
    for required in ["jupyterlab", "papermill", "numpy", "pytorch", "transformers", "matplotlib",
                     "nbval", "ipykernel", "tqdm"]:
        assert required in names
    assert "-e ." in pip


def test_constraints_pin_every_dependency_but_torch_with_an_exact_version():
    """constraints.txt (which `make` installs with, on Python 3.11) holds one exact version of every package that
    `make workshop` and `make test` install, torch apart (the Makefile installs it on its own), so that a
    dependency added to pyproject.toml is pinned there too."""
    project, _, _, _ = _load()
    extras = project["optional-dependencies"]
    declared = {_name(r) for r in project["dependencies"] + extras["test"] + extras["workshop"]
                if "python_version <" not in r}
    lines = [line for line in (REPO_ROOT / "constraints.txt").read_text().splitlines() if line and line[0] != "#"]
    requirements = [line.split(";", 1)[0].strip() for line in lines]
    assert all(re.fullmatch(r"[a-z0-9.-]+==[A-Za-z0-9.+]+", r) for r in requirements), "one exact version a line"
    pinned = {requirement.split("==")[0] for requirement in requirements}
    missing = {name.replace("_", "-") for name in declared} - {"torch"} - pinned
    assert not missing, f"in pyproject.toml but not pinned in constraints.txt: {sorted(missing)}"
    assert "torch" not in pinned
