"""Device choice, version report, and metrics recorded in a notebook and read back."""

from __future__ import annotations

import json

import nbformat
import numpy as np
import pytest
import torch

from helpers.workshop import env


def test_cpu_when_no_gpu(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert env.choose_device() == "cpu"
    assert capsys.readouterr().out.startswith("device: cpu (")


@pytest.mark.parametrize("version, expected", [("2.1.2", "cpu"), ("2.2.0+cpu", "cpu"), ("2.3.0", "mps"), ("2.13.0", "mps")])
def test_mps_only_on_a_recent_enough_torch(monkeypatch, version, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch, "__version__", version)
    assert env.choose_device(verbose=False) == expected


def test_cuda_first(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: "NVIDIA H100")
    assert env.choose_device(verbose=False) == "cuda"


def test_version_report_names_the_packages():
    report = env.version_report()
    assert report["torch"] == torch.__version__
    assert report["numpy"] == np.__version__
    assert {"python", "platform", "cpu_count", "transformers", "tiktoken"} <= set(report)


def test_metric_output_converts_numbers_and_rejects_what_json_cannot_hold():
    assert env.metric_output("x", np.float32(1.5)) == {env.METRIC_MIME: {"name": "x", "value": 1.5}}
    nested = env.metric_output("nested", {"a": [np.int64(3), torch.tensor(2.0)]})
    assert nested[env.METRIC_MIME]["value"] == {"a": [3, 2.0]}
    with pytest.raises(TypeError):
        env.metric_output("bad", object())
    with pytest.raises(TypeError):
        env.record("bad", object())


def test_record_in_a_kernel_shows_nothing_returns_none_and_is_read_back(tmp_path):
    """A cell that records three metrics and ends with record(...) keeps three invisible outputs."""
    from nbclient import NotebookClient

    source = ("import numpy as np\nfrom helpers.workshop.env import record\n"
              "record('a', np.float32(1.5))\nrecord('b', [1, 2])\nrecord('a', 2.5)")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    NotebookClient(notebook, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = notebook.cells[0].outputs
    assert [o.output_type for o in outputs] == ["display_data"] * 3  # no execute_result: record returns None
    for output in outputs:
        assert set(output.data) == {env.METRIC_MIME}  # no text/plain: nothing for a reader to see
    path = tmp_path / "run.ipynb"
    nbformat.write(notebook, path)
    nbformat.validate(nbformat.read(path, as_version=4))
    assert env.read_metrics(path) == {"a": 2.5, "b": [1, 2]}


def test_read_metrics_reads_outputs_back_last_value_wins(tmp_path):
    def metric(name, value):
        return nbformat.v4.new_output("display_data", data={env.METRIC_MIME: {"name": name, "value": value},
                                                             "text/plain": f"{name} = {value}"})

    cell = nbformat.v4.new_code_cell("...")
    cell.outputs = [metric("loss", 3.2), nbformat.v4.new_output("stream", text="hi"), metric("loss", 2.9)]
    other = nbformat.v4.new_code_cell("...")
    other.outputs = [metric("tokens", 1000)]
    path = tmp_path / "run.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[cell, other, nbformat.v4.new_markdown_cell("x")]), path)
    assert env.read_metrics(path) == {"loss": 2.9, "tokens": 1000}
    json.loads(path.read_text())  # still a valid notebook
