"""The framework examples under `examples/` run as a user runs them: on real data their loss falls below
what random tokens give on the same steps, random tokens come only by name and say so, and missing data is
one line and exit 2 in every one."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from helpers.common.paths import REPO_ROOT
from helpers.preprocess import preprocess

EXAMPLES = ["trainer.py"]
TINY = ["--steps", "20", "--batch-size", "8", "--seq-length", "64", "--model", "hidden_size=64",
        "--model", "intermediate_size=128", "--model", "num_hidden_layers=2", "--model", "num_attention_heads=4"]
FINAL_LOSS = re.compile(r"loss [0-9.]+ -> ([0-9.]+)")


@pytest.fixture(scope="module")
def prefix(corpus_dir, tmp_path_factory) -> str:
    """The docs domain of the real corpus as byte ids (a 258-id vocabulary keeps the model tiny)."""
    made = preprocess(corpus_dir / "docs.jsonl", tmp_path_factory.mktemp("examples") / "docs", "bytes",
                      append_eod=True, workers=2, progress=False)
    return made.outputs["text"]


def run_example(name: str, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO_ROOT / "examples" / name), *arguments], capture_output=True,
                          text=True, timeout=600)


@pytest.mark.parametrize("name", EXAMPLES)
def test_real_data_beats_random_tokens_on_the_same_steps(name, prefix):
    real = run_example(name, "--data-path", prefix, *TINY)
    synthetic = run_example(name, "--synthetic", "--vocab-size", "258", *TINY)
    assert real.returncode == 0 and synthetic.returncode == 0, real.stderr + synthetic.stderr
    assert "real data:" in real.stderr and "SYNTHETIC DATA, asked for by name" in synthetic.stderr
    real_loss, random_loss = (float(FINAL_LOSS.search(run.stdout)[1]) for run in (real, synthetic))
    assert real_loss < random_loss - 1.0, (real_loss, random_loss)


@pytest.mark.parametrize("name", EXAMPLES)
def test_missing_data_is_one_line_and_exit_2(name, tmp_path):
    for arguments in ([], ["--data-path", str(tmp_path / "absent_text_document")]):
        run = run_example(name, *arguments, *TINY)
        assert run.returncode == 2 and "fix:" in run.stderr and "Traceback" not in run.stderr, run.stderr
        assert len(run.stderr.strip().splitlines()) == 1, run.stderr
