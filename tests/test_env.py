"""Device choice, version report, and metrics recorded in a notebook and read back."""

from __future__ import annotations

import json

import nbformat
import numpy as np
import pytest
import torch

from helpers import env


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


def test_record_converts_numbers_and_rejects_what_json_cannot_hold():
    assert env.record("x", np.float32(1.5)) == 1.5
    assert env.record("nested", {"a": [np.int64(3), torch.tensor(2.0)]}) == {"a": [3, 2.0]}
    with pytest.raises(TypeError):
        env.record("bad", object())


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
