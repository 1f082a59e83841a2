"""`eval-overlap`: the auditor, given evaluation sets and the run's tokenizer, names a live batch that holds an item's
n-gram in one line, with the item; the loader's batches of a dataset with planted HumanEval items are caught where
the oracle says and the clean ones pass; an item cut between two documents of a packed row is not joined across the
EOD; `python -m helpers.audit --decontaminate` does the same on saved batches; without the tokenizer, refused."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from helpers.audit import Auditor, DataBugError, audit
from helpers.audit.eval_overlap import EvalOverlap, eval_overlap
from helpers.common.errors import UserError
from helpers.loading.loader import make_dataloader
from helpers.preprocess import preprocess
from helpers.tokenizers.zoo import load_tokenizer


@pytest.fixture(scope="module")
def overlap(humaneval):
    return EvalOverlap([humaneval], load_tokenizer("llama3"))


def within_documents(row: np.ndarray, eod: int) -> list[np.ndarray]:
    """A packed row's documents (cut after each EOD)."""
    cuts = np.flatnonzero(row == eod) + 1
    return [piece for piece in np.split(row, cuts) if piece.size]


def oracle_rows(batch: np.ndarray, items: list[np.ndarray], n: int, eod: int) -> set[int]:
    """The rows with a window of n tokens inside one document equal to a window of an item, by tuples."""
    grams = {tuple(item[i:i + n].tolist()) for item in items for i in range(item.size - n + 1)}
    return {r for r, row in enumerate(batch) for piece in within_documents(row, eod)
            for i in range(piece.size - n + 1) if tuple(piece[i:i + n].tolist()) in grams}


def test_the_loader_s_batches_of_leaked_data_are_named_where_the_oracle_finds_them(humaneval, overlap, corpus_dir,
                                                                                    tmp_path):
    texts = [json.loads(line)["text"][:2000] for line in open(corpus_dir / "code.jsonl", encoding="utf-8")][:24]
    texts[17] += "\n" + humaneval.texts[12]  # a leak, said so: one solution pasted into a code document
    (tmp_path / "code.jsonl").write_text("".join(json.dumps({"text": text}) + "\n" for text in texts))
    prefix = preprocess(tmp_path / "code.jsonl", tmp_path / "code", "llama3", append_eod=True, workers=1,
                        progress=False).outputs["text"]
    loader = make_dataloader(prefix, split="1,0,0", seq_length=512, batch_size=4, seed=5, cache_dir=tmp_path)
    eod = load_tokenizer("llama3").eod_id
    expected, named = [], []
    for step, batch in enumerate(loader):
        ids = batch["input_ids"].numpy() if isinstance(batch, dict) else batch[0].numpy()
        rows = oracle_rows(ids, overlap.index.items, overlap.ngram, eod)
        expected.append(bool(rows))
        line = overlap.find(ids)
        named.append(line is not None)
        if line is not None:
            assert "humaneval HumanEval/12 " in line and f"{len(rows)} of 4 rows hold one" in line
    assert named == expected and any(expected) and not all(expected)
    report = audit(make_dataloader(prefix, split="1,0,0", seq_length=512, batch_size=4, seed=5, cache_dir=tmp_path),
                   vocab_size=128_256, overlap=overlap)
    assert [finding.code for finding in report.findings] == ["eval-overlap"]
    assert report.steps_with["eval-overlap", 0] == sum(expected)


def test_a_packed_row_is_not_joined_across_its_eod_and_the_live_auditor_raises(humaneval, overlap):
    item, eod = overlap.index.items[3], overlap.eod_id
    cut = item.size // 2
    packed = np.concatenate([[100, 101], item[:cut], [eod], item[cut:], [102]])
    assert overlap.find(packed[None, :]) is not None  # each half is longer than 32 tokens
    short = np.concatenate([[100, 101], item[cut - 20:cut], [eod], item[cut:cut + 20], [102]])
    assert overlap.find(short[None, :]) is None  # 40 tokens of the item, but only across the EOD
    assert overlap.find(np.concatenate([short[:22], short[23:]])[None, :]) is not None  # no EOD: one document
    for auditor in (Auditor(vocab_size=128_256, evals=[humaneval], tokenizer=load_tokenizer("llama3")),
                    Auditor(vocab_size=128_256, overlap=overlap)):  # the sets as one object, as audit() takes them
        auditor.step({"input_ids": torch.tensor(np.stack([short, short]))})
        with pytest.raises(DataBugError, match=r"eval-overlap \(rank 0, step 1\): row 1, tokens 2-34 hold an n-gram "
                                               r"of humaneval HumanEval/3"):
            auditor.step({"input_ids": torch.tensor(np.stack([short, np.concatenate([short[:22], short[23:], [7]])]))})


def test_the_command_line_audits_saved_batches_for_eval_n_grams(humaneval, overlap, tmp_path):
    item = overlap.index.items[40]
    batches = [torch.tensor(np.stack([np.arange(1000, 1000 + item.size + 2)] * 2)),
               torch.tensor(np.stack([np.concatenate([[5, 6], item]), np.arange(item.size + 2)]))]
    torch.save(batches, tmp_path / "batches.pt")
    command = [sys.executable, "-m", "helpers.audit", str(tmp_path / "batches.pt"), "--vocab-size", "128256"]
    done = subprocess.run([*command, "--decontaminate", "humaneval", "--tokenizer", "llama3"], capture_output=True,
                          text=True)
    assert done.returncode == 1 and "eval-overlap (rank 0, step 1): row 0, tokens 2-34" in done.stdout
    assert "humaneval HumanEval/40" in done.stdout
    with pytest.raises(UserError, match="fix: pass tokenizer="):
        eval_overlap([humaneval], None)
