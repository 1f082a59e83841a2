"""`python -m helpers.audit`: audit batches saved from someone else's run.

    python -m helpers.audit batches.pt --vocab-size 128256 --labels shifted
    python -m helpers.audit rank0.pt rank1.pt --vocab-size 32000 --ranks
    python -m helpers.audit batches.pt --vocab-size 128256 --decontaminate humaneval --tokenizer llama3

Each file is `torch.save`d batches (a list of them, or one batch: dicts or Hugging Face `BatchEncoding`s
with `input_ids`, megatron-core's dicts with `tokens`, `(x, y)` pairs or 2-D id tensors) or a `.npy` of ids
(`[steps, rows, length]`, or one `[rows, length]` batch). The files are
one stream, read in the order given, or with `--ranks` one stream per rank. With `--decontaminate`, a batch holding
an evaluation item's n-gram is a finding too (`eval-overlap`, `helpers.audit.eval_overlap`). Prints the report's table;
exits 1 when there is a finding, 2 for a file it cannot read or a batch it cannot audit.
`python -m helpers.audit ledger STATE` says what a run was trained on instead (`helpers.audit.ledger`).
"""

from __future__ import annotations

import pickle
import re
import sys
from dataclasses import MISSING, Field, fields
from pathlib import Path
from typing import Iterator

import numpy as np

from ..common.cli import CommandParser
from ..common.errors import UserError
from ..decontamination.evals import load_evals
from ..decontamination.flags import add_eval_flags, eval_keys, refuse_without_evals
from ..decontamination.lengths import TOKEN_NGRAM
from ..tokenizers.zoo import load_tokenizer
from .eval_overlap import eval_overlap
from .settings import AuditSettings
from .stream import audit_ranks


def read_batches(path: Path) -> list:
    """The batches saved in one file (see the module docstring)."""
    if not path.is_file():
        raise UserError(f"{path}: no such file; fix: name files of torch.save'd batches or .npy arrays of ids")
    try:
        if path.suffix == ".npy":
            array = np.load(path, allow_pickle=False)
            return list(array) if array.ndim == 3 else [array]
        saved = _torch_load(path)
    except Exception as error:  # noqa: BLE001 - any unreadable file is the user's, said in one line
        raise UserError(f"{path}: cannot be read as saved batches ({_reason(error)}); fix: save a list of batches "
                        "(dicts of tensors) with torch.save, or ids with numpy.save") from None
    return saved if isinstance(saved, list) else [saved]


def _torch_load(path: Path):
    """torch.load with weights only (no code runs from the file), Hugging Face's BatchEncoding allowed: it is
    what every collator returns, a dict of tensors underneath."""
    import torch

    allowed = []
    try:
        from transformers import BatchEncoding
        allowed.append(BatchEncoding)
    except ImportError:
        pass
    with torch.serialization.safe_globals(allowed):
        return torch.load(path, map_location="cpu", weights_only=True)


def _reason(error: Exception) -> str:
    """Why a file could not be loaded, in a few words: the class torch refused, else the error's first line,
    without terminal escapes and cut at a word."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip()
    refused = re.search(r"Unsupported global: GLOBAL ([\w.]+)", text)
    if refused:
        return f"it holds a {refused.group(1)}, which a weights-only load refuses; save dict(batch) instead"
    if isinstance(error, (pickle.UnpicklingError, EOFError, IndexError)) or "central directory" in text:
        return f"not a file torch.save wrote, or one cut short ({type(error).__name__})"
    line = text.splitlines()[0] if text else ""
    if len(line) > 120:
        line = line[:120].rsplit(" ", 1)[0] + " ..."
    return f"{type(error).__name__}: {line}" if line else type(error).__name__


def _stream(paths: list[Path]) -> Iterator:
    for path in paths:
        yield from read_batches(path)


def _flagged() -> list[Field]:
    """The fields of `AuditSettings` the command line sets, each by a flag of its name (`--vocab-size`)."""
    return [each for each in fields(AuditSettings) if each.metadata["flag"]]


def add_setting_flags(parser) -> None:
    """A flag for each setting the command line sets, with the setting's default, choices and documentation."""
    for each in _flagged():
        choices = each.metadata["choices"]
        required = {"required": True} if each.default is MISSING else {"default": each.default}
        parser.add_argument("--" + each.name.replace("_", "-"), type=None if choices else int, choices=choices,
                            help=each.metadata["doc"], **required)


def settings_of(args) -> AuditSettings:
    """The `AuditSettings` the flags give."""
    return AuditSettings(**{each.name: getattr(args, each.name) for each in _flagged()})


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["ledger"]:  # python -m helpers.audit ledger STATE: what a run was trained on
        from .ledger import main as ledger

        return ledger(argv[1:])
    parser = CommandParser(prog="python -m helpers.audit", description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="torch.save'd batches or .npy ids")
    add_setting_flags(parser)
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--ranks", action="store_true", help="each file is one rank's stream")
    add_eval_flags(parser, "a batch holding one of their n-grams is a finding (eval-overlap); needs --tokenizer")
    parser.add_argument("--tokenizer", default=None, help="zoo name or Hugging Face folder the ids come from")
    parser.add_argument("--ngram", type=int, default=None, help=f"tokens per n-gram (default {TOKEN_NGRAM})")
    args = parser.parse_args(argv)
    refuse_without_evals(args, tokenizer=args.tokenizer, ngram=args.ngram)
    overlap = None
    if args.decontaminate is not None:
        args.ngram = TOKEN_NGRAM if args.ngram is None else args.ngram
        if args.ngram < 1:
            raise UserError(f"--ngram {args.ngram}: an n-gram has at least one token; fix: e.g. --ngram {TOKEN_NGRAM}")
        tokenizer = load_tokenizer(args.tokenizer) if args.tokenizer is not None else None
        overlap = eval_overlap(load_evals(args.decontaminate, eval_keys(args.eval_keys) or None), tokenizer,
                               args.ngram, args.eod_id)
    streams = [read_batches(path) for path in args.files] if args.ranks else [_stream(args.files)]
    report = audit_ranks(streams, settings_of(args), max_steps=args.max_steps, overlap=overlap)
    print(report.summary())
    return 0 if report.ok else 1
