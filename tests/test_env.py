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
    assert {"python", "transformers", "tiktoken", "megatron-core"} <= set(report)


def test_the_printed_report_is_one_line_and_names_a_missing_package(monkeypatch, capsys):
    env.print_version_report()
    printed = capsys.readouterr().out
    assert printed.startswith("python ") and f"torch {torch.__version__};" in printed and printed.count("\n") == 1
    real_version = env.package_version
    monkeypatch.setattr(env, "package_version", lambda name: None if name == "tiktoken" else real_version(name))
    assert env.print_version_report()["tiktoken"] is None
    assert "NOT INSTALLED: tiktoken (fix: make workshop)" in capsys.readouterr().out


def test_metric_line_converts_numbers_and_rejects_what_json_cannot_hold():
    assert json.loads(env.metric_line("x", np.float32(1.5))) == {"name": "x", "value": 1.5}
    nested = json.loads(env.metric_line("nested", {"a": [np.int64(3), torch.tensor(2.0)]}))
    assert nested["value"] == {"a": [3, 2.0]}
    with pytest.raises(TypeError):
        env.metric_line("bad", object())
    with pytest.raises(TypeError):
        env.record("bad", object())  # refused in the cell, with or without a metrics file


def run_cell(source: str, tmp_path):
    """Execute one code cell in a fresh kernel (it inherits this process's environment); its outputs."""
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    NotebookClient(notebook, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(tmp_path)}}).execute()
    return notebook.cells[0].outputs


RECORDING_CELL = ("import numpy as np\nfrom helpers.workshop.env import record\n"
                  "record('a', np.float32(1.5))\nrecord('b', [1, 2])\nrecord('a', 2.5)")


def test_record_leaves_no_output_and_the_run_reads_every_metric_back(tmp_path, monkeypatch):
    """A cell that records three metrics and ends with record(...) has no output at all; the file the run named
    holds them, and the last value of a name wins."""
    executed = tmp_path / "run.ipynb"
    monkeypatch.setenv(env.METRICS_FILE_ENV, str(env.metrics_file(executed)))
    assert run_cell(RECORDING_CELL, tmp_path) == []
    assert env.read_metrics(executed) == {"a": 2.5, "b": [1, 2]}


def test_record_by_hand_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv(env.METRICS_FILE_ENV, raising=False)
    assert run_cell(RECORDING_CELL, tmp_path) == []
    assert list(tmp_path.iterdir()) == []
    assert env.read_metrics(tmp_path / "never-run.ipynb") == {}


def test_read_metrics_leaves_out_a_last_line_cut_short(tmp_path):
    executed = tmp_path / "run.ipynb"
    env.metrics_file(executed).write_text(env.metric_line("loss", 3.2) + "\n" + '{"name": "tok', encoding="utf-8")
    assert env.read_metrics(executed) == {"loss": 3.2}
