"""Progress bars: text bars when headless, so the executed notebook keeps the bar's final line."""

from __future__ import annotations

import io
import re

import nbformat
import pytest
from nbclient import NotebookClient

from helpers.common import progress


def run_cell(source: str, tmp_path) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    NotebookClient(notebook, kernel_name="python3", timeout=120,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    return notebook


def shown(text: str) -> list[str]:
    """The lines a notebook viewer shows of a stream: each carriage return erases its line so far."""
    return [re.sub(r".*\r", "", line) for line in text.split("\n") if re.sub(r".*\r", "", line).strip()]


def test_headless_gives_the_text_bar(monkeypatch):
    from tqdm.std import tqdm as text_bar

    monkeypatch.setenv("HELPERS_HEADLESS", "1")
    assert progress.bar_class() is text_bar
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    bar = progress.progress_bar(total=3, file=io.StringIO(), disable=False)
    assert isinstance(bar, text_bar) and bar.mininterval == progress.HEADLESS_MININTERVAL
    bar.close()
    assert progress.progress_bar(total=3, file=io.StringIO(), disable=False, mininterval=0.5).mininterval == 0.5


def test_executed_headless_notebook_keeps_the_final_line_and_no_widget(monkeypatch, tmp_path):
    monkeypatch.setenv("HELPERS_HEADLESS", "1")
    monkeypatch.delenv("TQDM_DISABLE", raising=False)  # the kernel inherits this environment
    notebook = run_cell("from helpers.common.progress import progress_bar\n"
                        "import time\n"
                        "for _ in progress_bar(range(40), desc='work', mininterval=0.01):\n"
                        "    time.sleep(0.005)", tmp_path)
    outputs = notebook.cells[0].outputs
    assert {(o.output_type, o.name) for o in outputs} == {("stream", "stderr")}
    lines = shown("".join(o.text for o in outputs))
    assert len(lines) == 1 and lines[0].startswith("work: 100%") and "40/40" in lines[0], lines
    assert "widgets" not in notebook.metadata


@pytest.mark.parametrize("value", ["0", ""])
def test_a_live_kernel_keeps_the_widget_bar(monkeypatch, tmp_path, value):
    monkeypatch.setenv("HELPERS_HEADLESS", value)
    notebook = run_cell("from tqdm.notebook import tqdm_notebook\nfrom helpers.common.progress import bar_class\n"
                        "print(issubclass(bar_class(), tqdm_notebook))", tmp_path)
    assert notebook.cells[0].outputs[0].text.strip() == "True"
