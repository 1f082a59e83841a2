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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(NOTEBOOK_DIR)))
def test_no_stderr_output(path):
    """Progress bars are off in headless runs and messages for the user go to stdout in a kernel: a viewer draws
    stderr as an error block."""
    found = [index for index, cell in code_cells(path) for output in cell.outputs if output.get("name") == "stderr"]
    assert not found, f"{path.name}: stderr outputs in cells {sorted(set(found))}"


MACHINE_PATH = re.compile(r"(?<![\w.])(/work/|/home/|/tmp/|/Users/|/root/|/private/|[A-Z]:\\)")


def output_text(output) -> str:
    if "text" in output:
        return output.text
    return "\n".join(str(value) for kind, value in output.get("data", {}).items() if kind.startswith("text/"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(NOTEBOOK_DIR)))
def test_no_path_of_the_machine_that_ran_it(path):
    """Printed paths are relative to the notebook (helpers.common.paths.shown): a reader's machine has other ones."""
    found = [(index, MACHINE_PATH.search(output_text(output)).group(0)) for index, cell in code_cells(path)
             for output in cell.outputs if MACHINE_PATH.search(output_text(output))]
    assert not found, f"{path.name}: absolute paths in outputs of cells {found}"


LOGGER_LINE = re.compile(r"^(helpers(\.\w+){2,}|megatron(\.\w+)+|\[?(INFO|WARNING|DEBUG)\]?)[: ]", re.M)


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if "results" not in p.parts],
                         ids=lambda p: str(p.relative_to(NOTEBOOK_DIR)))
def test_no_logger_line(path):
    """A logger's line (`helpers.loading.loader: ...`, `INFO: ...`) is a log, not a lesson: a notebook prints what
    the reader needs in its own words (`loader.describe()` for where the batches come from). `results/` holds
    records of runs on a GPU, kept as they printed."""
    found = [(index, LOGGER_LINE.search(output_text(output)).group(0)) for index, cell in code_cells(path)
             for output in cell.outputs if LOGGER_LINE.search(output_text(output))]
    assert not found, f"{path.name}: logger lines in outputs of cells {found}"
