"""Inspect and validate a Megatron indexed dataset before spending GPU hours on it.

    python -m helpers.check data/megatron/literature_text_document [--tokenizer llama3]

Prints the header in words and length statistics, then one line per check. Exit codes: 0 every check
holds, 1 a check failed (the FAIL lines say what and the fix), 2 the command could not run (a missing
file, an unknown tokenizer). Damaged or foreign files are reported, never crashed on: structure is checked
before any token is read, and tokens are scanned in chunks, so a file of any size is checked in bounded
memory.

The tokenizer comes from the dataset's sidecar (`helpers.datasets.sidecar`) when there is one, so the vocabulary,
EOD and text checks need no name; a named tokenizer that disagrees with the sidecar is refused. Without
a sidecar, name it with --tokenizer, or only the structure is checked.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import numpy as np

from ..common.cli import CommandParser
from ..common.errors import UserError
from ..datasets.indexed import HEADER, MAGIC, MAKE_PREFIX, IndexedDataset, IndexFormatError, bin_path, idx_path
from ..datasets.sidecar import read_sidecar, sidecar_path, tokenizer_for
from ..decontamination.evals import load_evals
from ..decontamination.flags import add_eval_flags, eval_keys, refuse_without_evals
from ..decontamination.lengths import TOKEN_NGRAM
from ..tokenizers.token_dtype import optimal_dtype
from ..tokenizers.zoo import load_tokenizer
from .contamination import eval_overlap

SCAN_CHUNK = 1 << 24  # tokens per chunk when scanning ids
TEXT_SAMPLES = 5


@dataclass
class Check:
    name: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'}  {self.name}: {self.detail}"


@dataclass
class Report:
    """Everything `check_dataset` found: header in words, statistics, and each check."""

    prefix: str
    tokenizer: str = ""  # which tokenizer the content checks used, and where it came from
    header: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    samples: list[str] = field(default_factory=list)
    overlaps: list[str] = field(default_factory=list)  # where evaluation n-grams were found (--decontaminate)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def add(self, name: str, ok: bool, detail: str) -> bool:
        self.checks.append(Check(name, bool(ok), detail))
        return bool(ok)

    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def lines(self) -> list[str]:
        out = [f"dataset {self.prefix}"]
        out += [f"  {k:<22} {v}" for k, v in self.header.items()]
        out.append(f"tokenizer {self.tokenizer}")
        if self.stats:
            out.append("statistics")
            out += [f"  {k:<22} {v}" for k, v in self.stats.items()]
        if self.samples:
            out.append("decoded samples")
            out += [f"  {s!r}" for s in self.samples]
        out.append("checks")
        out += [f"  {c.line()}" for c in self.checks]
        if self.overlaps:
            out.append("evaluation n-grams found (first of each item in each sequence)")
            out += [f"  {line}" for line in self.overlaps]
        out.append("all checks passed" if self.ok else f"{len(self.failures())} check(s) failed")
        return out


def describe_header(ds: IndexedDataset) -> dict:
    """The `.idx` header, field by field, in words."""
    return {
        "magic": f"{MAGIC!r} (Megatron indexed dataset)",
        "version": ds.version,
        "dtype": f"code {ds.dtype_code} = {ds.dtype.name} ({ds.dtype.itemsize} bytes per token)",
        "sequences": f"{len(ds):,}",
        "document indices": f"{ds.document_indices.size:,} = {ds.document_count:,} documents + 1 (they start at 0)",
        ".idx bytes": f"{idx_path(ds.prefix).stat().st_size:,} = {HEADER.size} header + 12 x sequences + 8 x indices",
        ".bin bytes": f"{ds.bin_bytes:,}",
    }


def _structure(ds: IndexedDataset, report: Report) -> bool:
    """Checks that must hold before any token may be read."""
    lengths = ds.sequence_lengths.astype(np.int64)
    itemsize = ds.dtype.itemsize
    integer = ds.dtype.kind in "iu"
    ok = report.add("integer ids", integer, f"{ds.dtype.name} holds whole numbers" if integer else
                    f"dtype code {ds.dtype_code} = {ds.dtype.name}, but token ids are integers (Megatron's "
                    "preprocessing writes uint16 or int32); fix: re-run the preprocessing")
    ok &= report.add("lengths", (lengths >= 0).all(), "every sequence length is non-negative"
                    if (lengths >= 0).all() else f"{int((lengths < 0).sum())} negative lengths; fix: re-run the preprocessing")
    expected_bin = int(lengths.sum()) * itemsize
    partial = f", not a multiple of {itemsize} (part of a token)" if ds.bin_bytes % itemsize else ""
    ok &= report.add(".bin size", expected_bin == ds.bin_bytes,
                     f"{ds.bin_bytes:,} bytes = sum of lengths x {itemsize}" if expected_bin == ds.bin_bytes else
                     f"{ds.bin_bytes:,} bytes{partial}, but the lengths need {expected_bin:,} (truncated or wrong "
                     "dtype?); fix: re-run the preprocessing")
    pointers = np.zeros_like(lengths)
    if lengths.size:
        np.cumsum(lengths[:-1] * itemsize, out=pointers[1:])
    bad = int((ds.sequence_pointers != pointers).sum())
    ok &= report.add("pointers", bad == 0, "each pointer is the running sum of length x itemsize" if bad == 0 else
                     f"{bad:,} pointers disagree with the lengths; fix: re-run the preprocessing")
    docs = ds.document_indices
    monotone = docs.size > 0 and docs[0] == 0 and bool((np.diff(docs) >= 0).all()) and docs[-1] == len(ds)
    ok &= report.add("document indices", monotone,
                     f"start at 0, never decrease, end at {len(ds):,} sequences" if monotone else
                     f"must start at 0, never decrease and end at {len(ds):,}; they start at "
                     f"{docs[0] if docs.size else 'nothing'} and end at {docs[-1] if docs.size else 'nothing'}; "
                     "fix: re-run the preprocessing")
    return bool(ok)


def _scan_ids(tokens: np.ndarray) -> tuple[int, int]:
    """Smallest and largest id, read in chunks so memory stays bounded."""
    if tokens.size == 0:
        return 0, 0
    chunks = [(int(c.min()), int(c.max())) for c in (tokens[i:i + SCAN_CHUNK] for i in range(0, tokens.size,
                                                                                             SCAN_CHUNK))]
    return min(c[0] for c in chunks), max(c[1] for c in chunks)


def _document_token_counts(ds: IndexedDataset) -> np.ndarray:
    cumulative = np.concatenate([[0], np.cumsum(ds.sequence_lengths, dtype=np.int64)])
    return cumulative[ds.document_indices[1:]] - cumulative[ds.document_indices[:-1]]


def _document_last_tokens(ds: IndexedDataset, tokens: np.ndarray) -> np.ndarray:
    """The last token of every non-empty document."""
    counts = _document_token_counts(ds)
    ends = np.cumsum(counts)[counts > 0] - 1
    return tokens[ends].astype(np.int64)


def _looks_like_text(text: str) -> bool:
    text = text.strip("\ufffd")  # a sample cut mid-character leaves a replacement at either end
    if not text:
        return True
    replacement = text.count("\ufffd") / len(text)
    printable = sum(c.isprintable() or c in "\n\t\r" for c in text) / len(text)
    return replacement < 0.02 and printable > 0.9


def _choose_tokenizer(prefix, tokenizer, report: Report) -> tuple:
    """The tokenizer for the content checks and the sidecar (or None for either), saying where it came from.

    A named tokenizer that disagrees with the sidecar is refused (`UserError`); a malformed sidecar is a
    failed check, and the run goes on as if there were none.
    """
    try:
        sidecar = read_sidecar(prefix)
    except UserError as err:
        report.add("sidecar", False, str(err))
        sidecar = None
    if sidecar is not None:
        chosen = tokenizer_for(prefix, tokenizer)
        how = "named, and agrees with" if tokenizer is not None else "from"
        report.tokenizer = f"{chosen.name} ({how} the sidecar {sidecar_path(prefix).name})"
        return chosen, sidecar
    if tokenizer is None:
        report.tokenizer = "none (no sidecar, no --tokenizer): structural checks only"
        return None, None
    chosen = load_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
    report.tokenizer = f"{chosen.name} (named; the data has no sidecar)"
    return chosen, None


def _matches_sidecar(ds: IndexedDataset, sidecar: dict, report: Report) -> None:
    """The sidecar describes this data: same dtype and counts as when it was written."""
    found = {"dtype": ds.dtype.name, "documents": ds.document_count, "sequences": len(ds), "tokens": ds.num_tokens}
    differ = [f"{name} {sidecar[name]} in the sidecar, {value} in the data" for name, value in found.items()
              if sidecar[name] != value]
    report.add("sidecar matches data", not differ,
               "dtype and counts as recorded when the data was made" if not differ else
               "; ".join(differ) + "; fix: the data changed after preprocessing, re-run helpers.preprocess")


def check_dataset(prefix: str | os.PathLike, tokenizer=None, expect_eod: bool | None = None,
                  samples: int = TEXT_SAMPLES, evals: list | None = None, ngram: int = TOKEN_NGRAM) -> Report:
    """Run every check; a tokenizer (the sidecar's, or a zoo name or object) enables the content checks, and with
    `evals` (`helpers.decontamination.EvalSet`s) the search for their `ngram`-token n-grams.

    `expect_eod` defaults to the sidecar's `append_eod`, and to True without a sidecar (Megatron's
    `--append-eod`). Damage is a failed check; an exception from here is a bug, and is raised.
    """
    report = Report(str(prefix))
    _run_checks(report=report, prefix=prefix, tokenizer=tokenizer, expect_eod=expect_eod, samples=samples,
                evals=evals, ngram=ngram)
    return report


def _checked_to_the_end(prefix: str, tokenizer, expect_eod: bool | None, evals: list | None = None,
                        ngram: int = TOKEN_NGRAM) -> Report:
    """`check_dataset` for the command line: an exception no check foresaw becomes a failed check saying
    the checks did not finish, so a traceback never stands where a verdict should be.

    A `UserError` (a bad tokenizer name) and an `OSError` (an unreadable path) still go up: they are
    input errors (exit 2), not findings about the data.
    """
    report = Report(prefix)
    try:
        _run_checks(report=report, prefix=prefix, tokenizer=tokenizer, expect_eod=expect_eod, samples=TEXT_SAMPLES,
                    evals=evals, ngram=ngram)
    except (UserError, OSError):
        raise
    except Exception as err:  # noqa: BLE001 - reported as unfinished, with the exception named
        reason = " ".join(f"{type(err).__name__}: {err}".split())
        report.add("checks finished", False, f"stopped by {reason}; fix: the files are damaged in a way no check "
                                             "names, re-run the preprocessing (if they are good, report this)")
    return report


def _run_checks(report: Report, prefix, tokenizer, expect_eod: bool | None, samples: int, evals: list | None = None,
                ngram: int = TOKEN_NGRAM) -> None:
    """Every check, in order, into `report`: header, structure, then content (only on sound structure)."""
    tokenizer, sidecar = _choose_tokenizer(prefix, tokenizer, report)
    if evals and tokenizer is None:
        raise UserError(f"{prefix}: --decontaminate encodes the evaluation items with the data's tokenizer, and the "
                        "data has no sidecar naming it; fix: name it with --tokenizer")
    try:
        ds = IndexedDataset(prefix)
    except IndexFormatError as err:
        report.add("header", False, str(err))
        return
    report.header = describe_header(ds)
    report.add("header", True, f"magic, version 1, dtype code {ds.dtype_code} ({ds.dtype.name}), sizes consistent")
    if not _structure(ds, report):
        return
    if not report.add("tokens", ds.num_tokens > 0, f"{ds.num_tokens:,} tokens" if ds.num_tokens else
                      f"not one token in {ds.document_count:,} documents; fix: check the input had text under "
                      "the --json-keys given, and re-run the preprocessing"):
        return

    tokens = ds.tokens  # exactly num_tokens long once the structure checks passed
    highest = _statistics(ds, tokens, report)
    if sidecar is not None:
        _matches_sidecar(ds, sidecar, report)
    if tokenizer is None:
        return
    _vocabulary(highest, ds.dtype, tokenizer, report)
    if expect_eod is None:
        expect_eod = sidecar["append_eod"] if sidecar is not None else True
    if expect_eod:
        _eod_at_ends(ds, tokens, tokenizer.eod_id, report)
    _decoded_samples(ds, tokenizer, samples, report)
    if evals:
        report.overlaps = eval_overlap(ds, tokens, tokenizer, evals=evals, ngram=ngram, report=report)


def _statistics(ds: IndexedDataset, tokens: np.ndarray, report: Report) -> int:
    """Counts, document lengths and the id range; the one id check that needs no tokenizer. Returns the
    largest id."""
    doc_tokens = _document_token_counts(ds)
    low, high = _scan_ids(tokens)
    report.stats = {
        "tokens": f"{ds.num_tokens:,}",
        "documents": f"{ds.document_count:,} ({int((doc_tokens == 0).sum()):,} empty)",
        "tokens per document": (f"mean {doc_tokens.mean():,.1f}, median {np.median(doc_tokens):,.0f}, "
                                f"p90 {np.percentile(doc_tokens, 90):,.0f}, max {doc_tokens.max():,}")
        if doc_tokens.size else "no documents",
        "id range": f"{low:,} .. {high:,}",
    }
    report.add("ids non-negative", low >= 0, "no negative id" if low >= 0 else
               f"smallest id is {low:,}; fix: the .bin was damaged or written in another dtype, re-run the preprocessing")
    return high


def _vocabulary(high: int, dtype: np.dtype, tokenizer, report: Report) -> None:
    """Every id (the largest is `high`) is below the vocabulary size, and the dtype can hold the vocabulary."""
    vocab = tokenizer.vocab_size
    report.add("ids < vocab", high < vocab, f"largest id {high:,} < vocab {vocab:,} of {tokenizer.name}" if high < vocab
               else f"id {high:,} is not below the vocab size {vocab:,} of {tokenizer.name}; "
                    "fix: the dataset was made with another tokenizer")
    holds = np.iinfo(dtype).max >= vocab - 1
    wanted = optimal_dtype(vocab)
    report.add("dtype vs vocab", holds,
               f"{dtype.name} holds every id of a {vocab:,} vocabulary (Megatron would choose {wanted.name})" if holds
               else f"{dtype.name} cannot hold ids up to {vocab - 1:,}: ids were cut; fix: preprocess again, "
                    f"Megatron uses {wanted.name} for this vocabulary")


def _eod_at_ends(ds: IndexedDataset, tokens: np.ndarray, eod_id: int, report: Report) -> None:
    ends = _document_last_tokens(ds, tokens)
    missing = int((ends != eod_id).sum())
    report.add("EOD at document ends", missing == 0,
               f"every non-empty document ends with EOD {eod_id}" if missing == 0 else
               f"{missing:,} of {ends.size:,} documents do not end with EOD {eod_id}; "
               "fix: preprocess with --append-eod (or pass --no-eod if that was meant)")


def _decoded_samples(ds: IndexedDataset, tokenizer, samples: int, report: Report) -> None:
    """The starts of a few sequences, spread over the dataset, decode to readable text."""
    picks = np.linspace(0, len(ds) - 1, num=min(samples, len(ds)), dtype=np.int64)
    texts = []
    for i in picks:
        ids = ds.get(int(i), 0, min(int(ds.sequence_lengths[i]), 48)).tolist()
        ids = [t for t in ids if 0 <= t < tokenizer.vocab_size]  # ids out of range fail their own checks
        texts.append(tokenizer.decode(ids))
    report.samples = texts
    textual = sum(_looks_like_text(t) for t in texts)
    report.add("decodes to text", textual == len(texts),
               f"{textual} of {len(texts)} samples decode to readable text" if textual == len(texts) else
               f"only {textual} of {len(texts)} samples decode to readable text; fix: check the tokenizer matches")


def main(argv: list[str] | None = None) -> int:
    parser = CommandParser(prog="python -m helpers.check", description=__doc__.split("\n\n")[0])
    parser.add_argument("prefix", help="dataset prefix, without .bin/.idx")
    parser.add_argument("--tokenizer", help="zoo name or Hugging Face folder (default: the sidecar's; must agree "
                                            "with it): enables vocab, EOD and text checks")
    parser.add_argument("--no-eod", action="store_true",
                        help="documents were written without --append-eod (default: the sidecar says)")
    add_eval_flags(parser, "a check that the data holds none of their token n-grams")
    parser.add_argument("--ngram", type=int, default=None, help=f"tokens per n-gram (--decontaminate; default "
                                                                 f"{TOKEN_NGRAM})")
    args = parser.parse_args(argv)
    refuse_without_evals(args, ngram=args.ngram)
    args.ngram = TOKEN_NGRAM if args.ngram is None else args.ngram
    if args.ngram < 1:
        raise UserError(f"--ngram {args.ngram}: an n-gram has at least one token; fix: e.g. --ngram {TOKEN_NGRAM}")
    evals = None
    if args.decontaminate is not None:
        evals = load_evals(args.decontaminate, eval_keys(args.eval_keys) or None)
    prefix = re.sub(r"\.(bin|idx|json)$", "", args.prefix)  # the prefix, however it was named
    missing = [path.name for path in (idx_path(prefix), bin_path(prefix)) if not path.is_file()]
    if missing:
        fix = MAKE_PREFIX if len(missing) == 2 else "re-run the preprocessing: only one of the pair is there"
        raise UserError(f"{prefix}: no file {' and no file '.join(missing)}; fix: {fix}")
    report = _checked_to_the_end(prefix, args.tokenizer, expect_eod=False if args.no_eod else None, evals=evals,
                                 ngram=args.ngram)
    for line in report.lines():
        print(line)
    return 0 if report.ok else 1

