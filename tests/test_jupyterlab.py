"""JupyterLab for real: the notebooks' kernel lives in .venv, the files are clean notebooks, and a Jupyter
server on loopback lists and opens every notebook and runs one through a kernel it starts."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import nbformat
import pytest

from helpers import kernel
from helpers.common.errors import UserError
from helpers.common.paths import NOTEBOOK_DIR, REPO_ROOT

NOTEBOOKS = sorted(p for p in NOTEBOOK_DIR.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
RUN_THROUGH_THE_SERVER = "00_environment_and_corpus.ipynb"  # the quickest lesson, run whole


@pytest.fixture(scope="module")
def venv_kernels():
    return kernel.installed_kernels(sys.executable)


def test_the_project_kernel_is_registered_inside_the_venv(venv_kernels):
    spec = venv_kernels[kernel.KERNEL_NAME]
    assert Path(spec["resource_dir"]).is_relative_to(Path(sys.prefix))  # --sys-prefix, not the user's folder
    assert spec["spec"]["display_name"] == kernel.KERNEL_DISPLAY_NAME
    assert Path(spec["spec"]["argv"][0]).resolve() == Path(sys.executable).resolve()


def test_make_registers_the_kernel_and_lab_listens_on_loopback_only():
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert "--sys-prefix --name $(KERNEL_NAME)" in makefile and f"KERNEL_NAME := {kernel.KERNEL_NAME}" in makefile
    commands = subprocess.run(["make", "-n", "lab"], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
    lab = next(line for line in commands.splitlines() if "jupyter lab" in line)
    assert "--ip 127.0.0.1" in lab and lab.endswith(" notebooks/"), lab


def test_batch_runs_use_the_project_kernel():
    from helpers.runs import command as runs

    assert runs.KERNEL == kernel.KERNEL_NAME


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(NOTEBOOK_DIR)))
def test_notebook_is_valid_names_a_venv_kernel_and_keeps_no_widget_state(path, venv_kernels):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    name = notebook.metadata.get("kernelspec", {}).get("name")
    assert name in venv_kernels, f"{path.name} names kernel {name!r}; .venv has {sorted(venv_kernels)}"
    assert name == kernel.KERNEL_NAME, f"{path.name} names {name!r}: run python -m helpers.kernel {path}"
    assert "widgets" not in notebook.metadata, f"{path.name} keeps saved widget state"


def test_set_notebook_kernel_changes_only_the_kernel_and_widget_state(tmp_path):
    source = NOTEBOOK_DIR / "04_blending.ipynb"
    original = json.loads(source.read_text(encoding="utf-8"))
    original["metadata"]["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    original["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    path = tmp_path / "lesson.ipynb"
    path.write_text(json.dumps(original, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    assert kernel.set_notebook_kernel(path, kernel.KERNEL_NAME) is True
    changed = json.loads(path.read_text(encoding="utf-8"))
    assert changed["metadata"]["kernelspec"] == {"display_name": kernel.KERNEL_DISPLAY_NAME,
                                                 "language": "python", "name": kernel.KERNEL_NAME}
    assert "widgets" not in changed["metadata"]
    assert changed["cells"] == original["cells"]  # ids, sources and outputs untouched
    assert path.read_text(encoding="utf-8").endswith("}\n") and '\n "cells": [' in path.read_text(encoding="utf-8")
    nbformat.validate(nbformat.read(path, as_version=4))
    assert kernel.set_notebook_kernel(path, kernel.KERNEL_NAME) is False  # a second run changes nothing

    kernel.set_notebook_kernel(path, "python3")
    assert json.loads(path.read_text())["metadata"]["kernelspec"]["display_name"] == "python3"
    assert [p.name for p in tmp_path.iterdir()] == ["lesson.ipynb"]  # no temporary left behind


def test_set_notebook_kernel_refuses_what_is_not_a_notebook(tmp_path):
    path = tmp_path / "broken.ipynb"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(UserError, match="fix:"):
        kernel.set_notebook_kernel(path)
    assert path.read_text(encoding="utf-8") == "{not json"


# --- a real server -------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """`jupyter lab` on 127.0.0.1 with a token, its runtime and config in a temporary folder."""

    def __init__(self, tmp: Path):
        self.port, self.token = free_port(), uuid.uuid4().hex
        self.base = f"http://127.0.0.1:{self.port}"
        self.runtime = tmp / "runtime"
        env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(self.runtime), "JUPYTER_CONFIG_DIR": str(tmp / "config"),
               "JUPYTER_DATA_DIR": str(tmp / "data")}  # the user's own kernels are out of sight: .venv's must do
        self.log = (tmp / "server.log").open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip", "127.0.0.1", f"--port={self.port}",
             "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
             f"--ServerApp.root_dir={NOTEBOOK_DIR}"] + (["--allow-root"] if os.geteuid() == 0 else []),
            env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def request(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Authorization": f"token {self.token}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
            return json.loads(text) if text else None

    def wait_ready(self, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.process.returncode}")
            try:
                self.request("GET", "/api/status")
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("jupyter lab did not answer")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory, corpus_dir):
    tmp = tmp_path_factory.mktemp("jupyter")
    running = Server(tmp)
    try:
        running.wait_ready()
        yield running
    except Exception:
        print((tmp / "server.log").read_text())
        raise
    finally:
        running.stop()


def execute(ws, session: str, code: str, timeout: float = 120) -> list[dict]:
    """Run `code` on the kernel behind the websocket `ws`; return its iopub messages (errors included)."""
    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": session, "username": "test",
                   "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True},
    }))
    messages, replied, idle = [], False, False
    deadline = time.monotonic() + timeout
    while not (replied and idle):
        ws.settimeout(max(deadline - time.monotonic(), 0.1))
        message = json.loads(ws.recv())
        if message.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind = message["header"]["msg_type"]
        if message["channel"] == "shell" and kind == "execute_reply":
            replied = True
        elif kind == "status" and message["content"]["execution_state"] == "idle":
            idle = True
        elif message["channel"] == "iopub":
            messages.append(message)
    return messages


def test_server_listens_on_loopback_with_a_token(server):
    info = [json.loads(p.read_text()) for p in server.runtime.glob("jpserver-*.json")]
    assert [(i["port"], i["token"]) for i in info] == [(server.port, server.token)]
    assert "127.0.0.1" in info[0]["url"] and not info[0]["password"]
    with pytest.raises(urllib.error.HTTPError) as refused:  # no token, no notebooks
        urllib.request.urlopen(server.base + "/api/contents", timeout=10)
    assert refused.value.code == 403


def test_server_lists_and_opens_every_notebook(server):
    root = server.request("GET", "/api/contents")
    listed = {item["path"] for item in root["content"] if item["type"] == "notebook"}
    for folder in (item["path"] for item in root["content"] if item["type"] == "directory"):
        listed |= {item["path"] for item in server.request("GET", f"/api/contents/{folder}")["content"]
                   if item["type"] == "notebook"}
    assert listed == {p.relative_to(NOTEBOOK_DIR).as_posix() for p in NOTEBOOKS}
    for path in sorted(listed):
        opened = server.request("GET", f"/api/contents/{path}?type=notebook&content=1")
        assert opened["format"] == "json" and opened["content"]["nbformat"] == 4
        on_disk = nbformat.read(NOTEBOOK_DIR / path, as_version=4)
        assert len(opened["content"]["cells"]) == len(on_disk.cells)
    assert kernel.KERNEL_NAME in server.request("GET", "/api/kernelspecs")["kernelspecs"]


def test_server_runs_a_notebook_through_the_project_kernel_and_stops_it(server):
    import websocket

    session = server.request("POST", "/api/sessions", {"path": RUN_THROUGH_THE_SERVER, "type": "notebook",
                                                       "name": "", "kernel": {"name": kernel.KERNEL_NAME}})
    kernel_id = session["kernel"]["id"]
    assert session["kernel"]["name"] == kernel.KERNEL_NAME
    ws = websocket.create_connection(f"ws://127.0.0.1:{server.port}/api/kernels/{kernel_id}/channels",
                                     header=[f"Authorization: token {server.token}"], timeout=60)
    try:
        where = execute(ws, session["id"], "import os, sys\nprint(sys.prefix, os.getcwd(), sep='|')")
        printed = "".join(m["content"]["text"] for m in where if m["header"]["msg_type"] == "stream")
        prefix, cwd = printed.strip().split("|")
        assert Path(prefix).resolve() == Path(sys.prefix).resolve() and Path(cwd).resolve() == NOTEBOOK_DIR
        notebook = nbformat.read(NOTEBOOK_DIR / RUN_THROUGH_THE_SERVER, as_version=4)
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type != "code":
                continue
            errors = [m["content"] for m in execute(ws, session["id"], cell.source)
                      if m["header"]["msg_type"] == "error"]
            assert not errors, f"cell {index}: {errors[0]['ename']}: {errors[0]['evalue']}"
    finally:
        ws.close()
    server.request("DELETE", f"/api/sessions/{session['id']}")
    assert server.request("GET", "/api/kernels") == []
