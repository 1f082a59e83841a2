"""What a learner opens holds nothing meant for machines: no test-runner markers in the code, and no output that
only a program reads (every committed notebook: lessons, solutions, results)."""

from __future__ import annotations

import re

import nbformat
import pytest

from helpers.common.paths import NOTEBOOK_DIR

NOTEBOOKS = sorted(p for p in NOTEBOOK_DIR.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def code_cells(path):
    return [(index, cell) for index, cell in enumerate(nbformat.read(path, as_version=4).cells)
            if cell.cell_type == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(NOTEBOOK_DIR)))
def test_no_test_markers_in_the_code(path):
    """nbval's markers are cell tags (`nbval-check-output`, ...), never `# NBVAL_...` comments a learner reads."""
    marked = [index for index, cell in code_cells(path) if re.search(r"#\s*NBVAL_", cell.source)]
    assert not marked, f"{path.name}: cells {marked} carry an NBVAL comment; tag them instead"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(NOTEBOOK_DIR)))
def test_no_output_of_an_application_type(path):
    """Metrics go to a file the headless runner names (helpers.workshop.env.record), not into the notebook."""
    found = [(index, kind) for index, cell in code_cells(path) for output in cell.outputs
             for kind in output.get("data", {}) if kind.startswith("application/")]
    assert not found, f"{path.name}: outputs meant for programs in cells {found}"
