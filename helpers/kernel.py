"""The notebooks' Jupyter kernel: its name, which kernels `.venv` has, and how a notebook is pointed at one.

`make` registers the kernel inside `.venv` (`ipykernel install --sys-prefix`), so `.venv`'s JupyterLab,
nbval and papermill find it on a fresh clone; a notebook names it in `metadata.kernelspec`.

    python -m helpers.kernel notebooks/*.ipynb notebooks/solutions/*.ipynb   # name the project's kernel

rewrites each notebook's kernel spec (and drops saved widget state, which only replays stale bars),
keeping cell ids, outputs and the file's JSON layout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from .common.cli import CommandParser
from .common.errors import UserError, run_cli
from .common.files import write_text_atomically

KERNEL_NAME = "pretraining-data"
KERNEL_DISPLAY_NAME = "Pretraining data (.venv)"


def installed_kernels(python: str | os.PathLike = sys.executable) -> dict[str, dict[str, Any]]:
    """The kernel specs the Jupyter of `python`'s environment finds, by name (`jupyter kernelspec list`)."""
    listing = subprocess.run([str(python), "-m", "jupyter", "kernelspec", "list", "--json"],
                             capture_output=True, text=True, check=True)
    return json.loads(listing.stdout)["kernelspecs"]


def _write_notebook(path: Path, notebook: dict[str, Any]) -> None:
    """Write in the layout Jupyter and papermill use, so a diff shows only what changed."""
    write_text_atomically(path, json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")


def set_notebook_kernel(path: str | os.PathLike, name: str = KERNEL_NAME,
                        display_name: str | None = None, drop_widget_state: bool = True) -> bool:
    """Point the notebook at `path` to the kernel `name`; return whether the file changed.

    `display_name` defaults to the project's for its own kernel and to `name` otherwise. Saved widget state
    (`metadata.widgets`) is dropped too unless `drop_widget_state` is false.
    """
    path = Path(path)
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise UserError(f"{path}: not a readable notebook ({error}); fix: give the path of an .ipynb file")
    if display_name is None:
        display_name = KERNEL_DISPLAY_NAME if name == KERNEL_NAME else name
    metadata = notebook.setdefault("metadata", {})
    before = json.dumps(metadata, sort_keys=True)
    metadata["kernelspec"] = {"display_name": display_name, "language": "python", "name": name}
    if drop_widget_state:
        metadata.pop("widgets", None)
    if json.dumps(metadata, sort_keys=True) == before:
        return False
    _write_notebook(path, notebook)
    return True


def main(argv: list[str] | None = None) -> None:
    parser = CommandParser(prog="python -m helpers.kernel", description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path, help=".ipynb files to point at the kernel")
    parser.add_argument("--name", default=KERNEL_NAME, help=f"kernel name (default {KERNEL_NAME})")
    parser.add_argument("--keep-widget-state", action="store_true", help="keep metadata.widgets")
    args = parser.parse_args(argv)
    for path in args.notebooks:
        changed = set_notebook_kernel(path, args.name, drop_widget_state=not args.keep_widget_state)
        print(f"{path}: {'kernel ' + args.name if changed else 'unchanged'}")


if __name__ == "__main__":
    run_cli(main)
