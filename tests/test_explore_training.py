"""The steps-and-preset knob of notebook 06: loss curves redrawn from recorded CSV logs."""

from __future__ import annotations

import csv
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import pytest  # noqa: E402

from helpers.training.train import LOG_COLUMNS  # noqa: E402
from helpers.workshop import env  # noqa: E402
from helpers.workshop.explore import training  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def write_log(path, losses):
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=LOG_COLUMNS, restval="")
        writer.writeheader()
        for step, loss in enumerate(losses):
            writer.writerow({"step": step, "loss": loss, "tokens": 2048})


def write_executed(path, parameters, metrics):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("...")])
    notebook.metadata["papermill"] = {"parameters": parameters}
    nbformat.write(notebook, path)
    env.metrics_file(path).write_text("".join(env.metric_line(k, v) + "\n" for k, v in metrics.items()))


@pytest.fixture
def runs_root(tmp_path):
    """This notebook's run (100 steps), a grid run of the h100 preset (40 steps) and an unfinished one."""
    write_log(tmp_path / "06" / "real.csv", [8.3 - 0.01 * i for i in range(100)])
    write_log(tmp_path / "06" / "synthetic.csv", [8.35] * 100)
    grid = tmp_path / "06_h100" / "1-model_overrides=layers6"
    write_log(grid / "06_training" / "real.csv", [10.4 - 0.05 * i for i in range(40)])
    write_log(grid / "06_training" / "synthetic.csv", [10.4] * 40)
    write_executed(grid / "06_training.ipynb", {"preset": "h100", "tokenizer": "mistral",
                                                "model_overrides": {"num_hidden_layers": 6}},
                   {"ln_vocab": math.log(32000), "real_final_loss": 8.4})
    stopped = tmp_path / "06_h100" / "2-stopped"
    write_log(stopped / "06_training" / "real.csv", [10.4])
    write_executed(stopped / "06_training.ipynb", {"preset": "h100"}, {})
    return tmp_path


def test_recorded_runs_are_labelled_by_preset_and_read_from_csv(runs_root):
    runs = training.recorded_runs(runs_root, current=("cpu-tiny", runs_root / "06", math.log(4096)))
    assert list(runs) == ["cpu-tiny (this notebook)", "h100, mistral, layers=6"]  # the stopped run is left out
    h100 = runs["h100, mistral, layers=6"]
    assert h100.preset == "h100" and h100.steps == 40 and h100.ln_vocab == pytest.approx(math.log(32000))
    assert h100.logs["real"][3] == {"step": 3.0, "loss": pytest.approx(10.25), "tokens": 2048.0}
    assert runs["cpu-tiny (this notebook)"].steps == 100


@pytest.mark.parametrize("preset, steps, shown, ln_vocab", [
    ("cpu-tiny (this notebook)", 30, 30, math.log(4096)),
    ("h100, mistral, layers=6", 500, 40, math.log(32000)),   # more steps than recorded: all of them
])
def test_draw_shows_the_chosen_run_up_to_steps(runs_root, preset, steps, shown, ln_vocab):
    runs = training.recorded_runs(runs_root, current=("cpu-tiny", runs_root / "06", math.log(4096)))
    fig = training.draw_loss_curves(runs, preset, steps)
    (ax,) = fig.axes
    assert ax.get_xlabel() == "step" and ax.get_ylabel().startswith("training loss")
    assert preset in ax.get_title() and f"the first {shown} of" in ax.get_title()
    curves = {line.get_label(): line.get_ydata() for line in ax.get_lines()}
    assert len(curves["real blended corpus"]) == len(curves["synthetic random tokens"]) == shown
    assert f"ln V = {ln_vocab:.2f} (uniform guess)" in curves
    assert curves["real blended corpus"][-1] == pytest.approx(runs[preset].logs["real"][shown - 1]["loss"])


def test_headless_explorer_names_its_knobs(runs_root, monkeypatch, capsys):
    monkeypatch.setenv("HELPERS_HEADLESS", "1")
    runs = training.recorded_runs(runs_root, current=("cpu-tiny", runs_root / "06", math.log(4096)))
    training.explore_loss_curves(runs)
    assert capsys.readouterr().out.strip() == ("Loss curves of 2 recorded runs "
                                               "(in a live JupyterLab session: preset, steps redraw it)")
    assert not plt.get_fignums()  # nothing drawn headless


def test_live_explorer_offers_every_recorded_run(runs_root, monkeypatch):
    import ipywidgets

    shown = []
    monkeypatch.setenv("HELPERS_HEADLESS", "0")
    monkeypatch.setattr("IPython.display.display", lambda widget: shown.append(widget))
    runs = training.recorded_runs(runs_root, current=("cpu-tiny", runs_root / "06", math.log(4096)))
    training.explore_loss_curves(runs, preset="h100, mistral, layers=6")
    (widget,) = shown
    assert isinstance(widget, ipywidgets.interactive)
    menu, slider = widget.children[:2]
    assert list(menu.options) == list(runs) and menu.value == "h100, mistral, layers=6"
    assert (slider.min, slider.max, slider.value) == (1, 100, 40)


def test_a_folder_without_logs_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="real.csv"):
        training.read_run(tmp_path, "cpu-tiny", 8.3)
