"""Progress bars are for a person watching: off in a headless run, whose saved notebook would otherwise keep them
as stderr blocks; messages for the user reach a notebook on stdout."""

from __future__ import annotations

import io
import sys

import nbformat
import pytest
from nbclient import NotebookClient

from helpers.common import progress


def run_cell(source: str, tmp_path) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    NotebookClient(notebook, kernel_name="python3", timeout=120,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    return notebook


def test_headless_bars_are_off_even_when_asked_for(monkeypatch):
    monkeypatch.setenv("HELPERS_HEADLESS", "1")
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    assert progress.progress_bar(total=3, file=io.StringIO(), disable=False).disable
    monkeypatch.setenv("HELPERS_HEADLESS", "0")
    assert not progress.progress_bar(total=3, file=io.StringIO(), disable=False).disable


def test_an_executed_headless_notebook_keeps_no_bar_and_no_widget(monkeypatch, tmp_path):
    monkeypatch.setenv("HELPERS_HEADLESS", "1")
    monkeypatch.delenv("TQDM_DISABLE", raising=False)  # the kernel inherits this environment
    notebook = run_cell("from helpers.common.progress import progress_bar\n"
                        "import time\n"
                        "for _ in progress_bar(range(40), desc='work', mininterval=0.01):\n"
                        "    time.sleep(0.005)\n"
                        "print('done')", tmp_path)
    outputs = notebook.cells[0].outputs
    assert [(o.output_type, o.name, o.text) for o in outputs] == [("stream", "stdout", "done\n")]
    assert "widgets" not in notebook.metadata


def test_a_message_for_the_user_goes_to_stdout_in_a_kernel_and_stderr_in_a_terminal(tmp_path):
    from helpers.common.headless import message_stream

    assert message_stream() is sys.stderr
    notebook = run_cell("from helpers.common.headless import message_stream\n"
                        "print('note: read me', file=message_stream())", tmp_path)
    assert [(o.name, o.text) for o in notebook.cells[0].outputs] == [("stdout", "note: read me\n")]


def test_the_loaders_data_line_reaches_a_notebook_on_stdout(tmp_path):
    notebook = run_cell("from helpers.loading.loader import log\nlog.warning('SYNTHETIC DATA, asked for by name')",
                        tmp_path)
    assert [(o.name, o.text) for o in notebook.cells[0].outputs] == [
        ("stdout", "helpers.loading.loader: SYNTHETIC DATA, asked for by name\n")]


@pytest.mark.parametrize("value", ["0", ""])
def test_a_live_kernel_keeps_the_widget_bar(monkeypatch, tmp_path, value):
    monkeypatch.setenv("HELPERS_HEADLESS", value)
    notebook = run_cell("from tqdm.notebook import tqdm_notebook\nfrom helpers.common.progress import bar_class\n"
                        "print(issubclass(bar_class(), tqdm_notebook))", tmp_path)
    assert notebook.cells[0].outputs[0].text.strip() == "True"
