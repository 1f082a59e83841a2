"""Opt-in: Megatron-LM's own `tools/preprocess_data.py`, from a checkout, writes the same `.bin/.idx` bytes
as `helpers.preprocess` on the same JSONL with the same tokenizer.

The script lives in the Megatron-LM repository, not in the megatron-core wheel, so this runs only where a
checkout is named: `MEGATRON_LM=/path/to/Megatron-LM make test` (a tag matching the installed megatron-core,
e.g. core_v0.16.1), with MEGATRON_PYTHONPATH naming a folder of the extra packages its training code imports
where they are missing. Everywhere else it is reported as skipped, with this reason; the always-on peer
tests compare against megatron-core's own builder and encode loop (tests/megatron_reference.py).
"""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.common.paths import REPO_ROOT

CHECKOUT = os.environ.get("MEGATRON_LM")
pytestmark = pytest.mark.skipif(not CHECKOUT, reason="opt-in: set MEGATRON_LM to a Megatron-LM checkout")


def test_megatron_lms_preprocess_data_writes_our_bytes(corpus_dir, tmp_path):
    source = tmp_path / "docs.jsonl"
    source.write_bytes((corpus_dir / "docs.jsonl").read_bytes())
    folder = tmp_path / "llama3-hf"
    subprocess.run([sys.executable, "-m", "helpers.tokenizers", "export", "llama3", str(folder)], check=True,
                   cwd=REPO_ROOT)
    path = os.pathsep.join(p for p in (CHECKOUT, os.environ.get("MEGATRON_PYTHONPATH"), os.environ.get("PYTHONPATH"))
                           if p)
    theirs = subprocess.run([sys.executable, str(Path(CHECKOUT) / "tools" / "preprocess_data.py"), "--input",
                             str(source), "--output-prefix", str(tmp_path / "theirs"), "--tokenizer-type",
                             "HuggingFaceTokenizer", "--tokenizer-model", str(folder), "--workers", "2",
                             "--append-eod", "--log-interval", "1000000"],
                            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path}, timeout=1800)
    assert theirs.returncode == 0, theirs.stderr[-3000:]
    ours = subprocess.run([sys.executable, "-m", "helpers.preprocess", "--input", str(source), "--output-prefix",
                           str(tmp_path / "ours"), "--tokenizer", "llama3", "--workers", "2", "--append-eod",
                           "--parse-special-tokens", "--no-progress"], capture_output=True, text=True, cwd=REPO_ROOT)
    assert ours.returncode == 0, ours.stderr[-3000:]
    for suffix in (".bin", ".idx"):
        assert filecmp.cmp(tmp_path / f"theirs_text_document{suffix}", tmp_path / f"ours_text_document{suffix}",
                           shallow=False), suffix
