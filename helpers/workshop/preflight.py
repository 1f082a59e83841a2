"""Is this machine ready for the workshop? One command a room can run before it starts:

    make preflight                                   # or: .venv/bin/python -m helpers.workshop.preflight

checks Python, free disk, torch, the corpus and the notebooks' kernel, and prints one line for each: `ok` with
what it found, or `FAIL` with what is wrong and the one command that fixes it. Exit 0 when all pass, 1 otherwise.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..common.cli import CommandParser
from ..common.errors import UserError, run_cli
from ..common.paths import RAW_DIR, REPO_ROOT
from ..corpus.build import corpus_paths
from ..kernel import KERNEL_NAME, installed_kernels

MIN_PYTHON = (3, 10)
# Room for what the notebooks write beside .venv, with a wide margin: after `make workshop` on a fresh clone of a
# 2-core machine, data/ held 107 MB and runs/ 58 MB (.venv itself 2.5 GB with the CPU build of torch).
NEED_FREE_GB = 2.0


@dataclass(frozen=True)
class Finding:
    name: str
    ok: bool
    detail: str  # what was found, or what is wrong with its fix

    def line(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'}  {self.name:<7} {self.detail}"


def check_python(version: tuple[int, ...] = tuple(sys.version_info[:3])) -> Finding:
    shown = ".".join(map(str, version))
    if tuple(version[:2]) >= MIN_PYTHON:
        return Finding("python", True, shown)
    return Finding("python", False, f"{shown} is older than {'.'.join(map(str, MIN_PYTHON))}; fix: install "
                                    "Python 3.10 or newer, remove .venv, then run make workshop")


def check_disk(folder: Path = REPO_ROOT, need_gb: float = NEED_FREE_GB) -> Finding:
    free_gb = shutil.disk_usage(folder).free / 1e9
    if free_gb >= need_gb:
        return Finding("disk", True, f"{free_gb:,.1f} GB free")
    return Finding("disk", False, f"{free_gb:,.1f} GB free, the workshop needs {need_gb:g} GB; fix: free space on "
                                  f"the disk of {folder}")


def check_torch() -> Finding:
    if importlib.util.find_spec("torch") is None:
        return Finding("torch", False, "not installed in this Python; fix: make workshop")
    import torch

    from .env import choose_device

    return Finding("torch", True, f"{torch.__version__}, device {choose_device(verbose=False)}")


def check_corpus(folder: Path = RAW_DIR) -> Finding:
    try:
        paths = corpus_paths(folder)
    except UserError as error:
        return Finding("corpus", False, f"{str(error).split('; fix:')[0]}; fix: make corpus")
    megabytes = sum(path.stat().st_size for path in paths.values()) / 1e6
    return Finding("corpus", True, f"{megabytes:.1f} MB in {len(paths)} files")


def check_kernel(python: str = sys.executable) -> Finding:
    try:
        kernels = installed_kernels(python)
    except (subprocess.CalledProcessError, OSError, ValueError):  # no Jupyter in this Python
        return Finding("kernel", False, "Jupyter is not installed in this Python; fix: make workshop")
    if KERNEL_NAME in kernels:
        return Finding("kernel", True, f"{KERNEL_NAME} registered")
    return Finding("kernel", False, f"{KERNEL_NAME} is not registered; fix: make workshop")


CHECKS: tuple[Callable[[], Finding], ...] = (check_python, check_disk, check_torch, check_corpus, check_kernel)


def preflight() -> list[Finding]:
    return [check() for check in CHECKS]


def main(argv=None) -> int:
    CommandParser(prog="python -m helpers.workshop.preflight", description=__doc__.split("\n\n")[0]).parse_args(argv)
    findings = preflight()
    for finding in findings:
        print(finding.line())
    failed = [f.name for f in findings if not f.ok]
    print(f"preflight: {'ready' if not failed else 'not ready (' + ', '.join(failed) + ')'}")
    return 1 if failed else 0


if __name__ == "__main__":
    run_cli(main)
