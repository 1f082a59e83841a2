"""JSONL → Megatron `.bin/.idx`, byte-identical to Megatron-LM's `tools/preprocess_data.py`, and faster.
Parquet and Arrow inputs too (`helpers.corpus.columnar`): the same records give the same bytes.

    python -m helpers.preprocess --input data/raw/literature.jsonl --output-prefix data/megatron/literature \\
        --tokenizer llama3 --json-keys text --workers 2 --append-eod

Same flags as Megatron where Megatron has them; output `{prefix}_{key}_document.bin/.idx`, and beside it a
JSON sidecar `{prefix}_{key}_document.json` naming the tokenizer (see `helpers.datasets.sidecar`).
`preprocess()` runs from one `PreprocessSettings` (or any of its fields given by keyword); the command line
builds that object from its flags. What each document becomes, where the output differs from Megatron's
tool on purpose, how the encoders, `--partitions` and `--engine ray` share the work, and what a failed or
killed run leaves behind: docs/preprocessing.md.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..common.cli import CommandParser
from ..common.errors import UserError
from ..common.files import remove_stale_temporaries, temporary_name
from ..common.headless import message_stream
from ..common.progress import progress_bar
from ..common.settings import with_keywords
from ..corpus.inputs import open_input
from ..corpus.jsonl import check_json_keys
from ..datasets.indexed import IndexedDataset
from ..datasets.sidecar import data_facts, recorded_name, tokenizer_identity
from ..engines.choice import ENGINES, check_engine_flags
from ..tokenizers.encoders import ENCODERS, choose_encoder, leave_early_note, load_fast_early
from ..tokenizers.zoo import load_tokenizer
from .outputs import RunFacts, datasets_written, remove_dataset
from .partitions import LocalPartitions, PartsJob, part_prefixes, preprocess_partitions
from .ray_runner import RayPartitions
from .settings import PreprocessSettings
from .summary import Summary, require_documents
from .workers import RunSettings, encode_range


def output_prefix(prefix: str | os.PathLike, key: str) -> Path:
    """Megatron's naming: `{prefix}_{key}_document`."""
    return Path(f"{prefix}_{key}_document")


def preprocess(input_path: str | os.PathLike, prefix: str | os.PathLike, tokenizer: str,
               json_keys: tuple[str, ...] | None = None, settings: PreprocessSettings | None = None,
               **options) -> Summary:
    """Tokenize a JSONL file (or Parquet: a file or a folder of them) into one Megatron indexed dataset per key,
    run as `settings` says (its defaults when None); `json_keys` and `options`, any of its fields by keyword
    (`append_eod=True`), are put in over it."""
    given = {} if json_keys is None else {"json_keys": json_keys}
    settings = with_keywords(settings or PreprocessSettings(), {**given, **options}, "preprocess")
    input_path = Path(input_path)
    json_keys = check_json_keys(settings.json_keys)
    check_engine_flags(settings.engine, settings.workers, settings.ray_address, ("--partitions", settings.partitions))
    if settings.engine == "local" and settings.partitions > settings.workers:
        raise UserError(f"--partitions {settings.partitions} needs at least {settings.partitions} workers (one per "
                        f"partition), not {settings.workers}; fix: raise --workers or lower --partitions")
    source = open_input(input_path)
    source.check_columns(json_keys, flag="--json-keys", lists=True)
    made_by = load_tokenizer(tokenizer)  # once here; each worker process loads it once for all its batches
    chosen = _encoder_for(made_by, source, json_keys, settings)
    if settings.one_run and (chosen.fast or chosen.too_small):  # proved: the next command reads it early
        leave_early_note(tokenizer, made_by)
    for_workers = RunSettings(tokenizer=recorded_name(made_by), json_keys=json_keys, append_eod=settings.append_eod,
                              parse_special=settings.parse_special_tokens, skip_bad_records=settings.skip_bad_records,
                              dtype=made_by.megatron_dtype.name, fast_encoder=chosen.fast)
    facts = RunFacts(tokenizer=tokenizer_identity(made_by), append_eod=settings.append_eod,
                     parse_special_tokens=settings.parse_special_tokens, input_files=source.files,
                     encoder=chosen.name)
    prefixes = {key: output_prefix(prefix, key) for key in json_keys}
    for final in prefixes.values():
        remove_stale_temporaries(final)
    ranges = source.plan(settings.partitions)
    if settings.partitions > 1 and len(ranges) < settings.partitions and source.compressed:
        print(f"note: {input_path}: a compressed file cannot be cut into byte ranges, so it runs as {len(ranges)} "
              f"{'Ray task' if settings.engine == 'ray' else 'partition'}{'s' * (len(ranges) > 1)}, "
              f"not {settings.partitions}", file=message_stream())
    start = time.perf_counter()
    meter = None
    try:
        meter = _Progress(source, settings.progress, settings.log_interval)
        if settings.engine == "local" and len(ranges) == 1:
            with datasets_written(prefixes, for_workers.dtype, facts) as writers:
                summary = encode_range(for_workers, source, ranges[0], writers, workers=settings.workers,
                                       report=meter.report)
                require_documents(summary, input_path)
        else:
            engine_for_parts = (RayPartitions(settings.ray_address, settings.workers, meter)
                                if settings.engine == "ray" else LocalPartitions(settings.workers, meter))
            job = PartsJob(for_workers, source, ranges, part_prefixes(prefixes, len(ranges)))
            summary = preprocess_partitions(job, prefixes, facts, engine_for_parts)
    finally:
        if meter is not None:
            meter.close()
    summary.seconds = time.perf_counter() - start
    summary.encoder = chosen.name + (f" ({chosen.reason})" if chosen.too_small else "")
    return summary


def _encoder_for(made_by, source, json_keys: tuple[str, ...], settings: PreprocessSettings):
    """The encoder of this run (`choose_encoder`), saying why where `auto` passes fastokens over; its vocabulary
    starts loading now where this process encodes. `auto` weighs that read against the input only where nothing
    else would pay for it: the command line's one run, or local partitions, processes that each read it."""
    local = settings.engine == "local"
    size = source.text_size(json_keys) if local and (settings.one_run or settings.partitions > 1) else None
    chosen = choose_encoder(made_by, settings.encoder, settings.parse_special_tokens, workers=settings.workers,
                            partitions=settings.partitions, one_run_of_megabytes=None if size is None else size / 1e6)
    if settings.encoder == "auto" and not chosen.fast and chosen.reason and not chosen.too_small:
        print(f"note: encoding with {chosen.name}, not fastokens: {chosen.reason}", file=message_stream())
    if chosen.fast and local and settings.partitions == 1:
        load_fast_early(made_by)  # this process encodes: its vocabulary loads while the input is read
    return chosen


class _Progress:
    """The one progress bar of a run over the whole input (or, with `progress` off, a log line every
    `log_interval` documents)."""

    def __init__(self, source, progress: bool, log_interval: int):
        total = source.known_size()  # None for compressed JSONL and for Parquet (whose counts are text bytes)
        self.bar = progress_bar(total=total, unit="B", unit_scale=True, desc=source.path.name) if progress else None
        self.progress, self.log_interval, self.next_log = progress, log_interval, log_interval
        self.start = time.perf_counter()
        self.bytes = 0

    def report(self, summary: Summary) -> None:
        """Move to the totals in `summary` (of the whole input so far)."""
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        if self.bar is not None:
            self.bar.update(summary.bytes_read - self.bytes)
            self.bar.set_postfix(docs_s=f"{summary.documents / elapsed:,.0f}",
                                 tok_s=f"{summary.tokens / elapsed:,.0f}", refresh=False)
        self.bytes = summary.bytes_read
        if self.log_interval and not self.progress and summary.documents >= self.next_log:
            print(f"processed {summary.documents:,} documents ({summary.documents / elapsed:,.0f} docs/s, "
                  f"{summary.bytes_read / 1e6 / elapsed:.2f} MB/s)", file=message_stream())
            self.next_log = (summary.documents // self.log_interval + 1) * self.log_interval

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def command_parser() -> CommandParser:
    """The flags of `python -m helpers.preprocess`: the settings' (`PreprocessSettings`, whose defaults they
    keep but for `--workers`, all the CPUs here) and the output format's."""
    defaults = PreprocessSettings()
    parser = CommandParser(prog="python -m helpers.preprocess", description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, type=Path,
                        help="JSONL file (.gz, .zst allowed) or a glob of them; Parquet: a file, a folder or a glob of "
                             "them; a folder from save_to_disk")
    parser.add_argument("--output-prefix", required=True, help="writes {prefix}_{key}_document.bin/.idx")
    parser.add_argument("--tokenizer", required=True, help="zoo name (llama3, mistral, ...) or a Hugging Face folder")
    parser.add_argument("--json-keys", nargs="+", default=list(defaults.json_keys),
                        help="fields to tokenize (one output each)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="encoding processes on this machine; with --engine ray, the CPUs of the Ray it "
                             "starts here (none with --ray-address)")
    parser.add_argument("--partitions", type=int, default=defaults.partitions,
                        help="cut the input into this many contiguous byte ranges (at line ends), run at the same "
                             "time with the workers shared among them; the output is byte-identical to one pass. "
                             "(Megatron's tool deals lines round-robin, which reorders documents unless "
                             "--keep-sequential-samples.) A .gz input runs as one partition")
    parser.add_argument("--engine", choices=ENGINES, default=defaults.engine,
                        help="local: processes on this machine (default); ray: each of the --partitions byte ranges "
                             "is one Ray task (one encoder each, as many at a time as Ray has CPUs) on a Ray "
                             "started here for the run with --workers CPUs, or on the cluster at --ray-address; "
                             "the same bytes either way. "
                             "On a cluster the input, the output folder and data/tokenizers must be on storage every "
                             "node sees at the same path, and helpers installed on every node")
    parser.add_argument("--ray-address", default=defaults.ray_address, metavar="ADDRESS",
                        help="with --engine ray: join the running cluster at this address (HEAD_IP:6379, as "
                             "`ray start --head` prints it) instead of starting Ray on this machine")
    parser.add_argument("--append-eod", action="store_true", help="append the EOD id to each non-empty document")
    parser.add_argument("--parse-special-tokens", action="store_true",
                        help="turn special-token strings in the text into their ids (what Megatron does)")
    parser.add_argument("--skip-bad-records", action="store_true", help="skip bad lines, counting each kind")
    parser.add_argument("--encoder", choices=ENCODERS, default=defaults.encoder,
                        help="auto: fastokens where it is proved to give the reference's ids for this vocabulary "
                             "(checked once, cached) and the input is large enough to pay for reading its "
                             "vocabulary, else the reference, saying why; fast: fastokens or an error; "
                             "reference: the tokenizer's own (tiktoken, sentencepiece, tokenizers). Same bytes")
    parser.add_needing("--log-interval", ("--no-progress",), 1000, type=int,
                       help="documents between log lines (--no-progress; default 1000)")
    parser.add_argument("--no-progress", action="store_true", help="log lines instead of a progress bar")
    parser.add_argument("--format", choices=["megatron", "npy", "shards"], default="megatron",
                        help="megatron .bin/.idx (default), one flat .npy, or fixed-size shards with train/val")
    parser.add_needing("--tokens-per-shard", ("--format shards",), 10_000_000, type=int,
                       help="tokens per shard (--format shards; default 10,000,000)")
    parser.add_needing("--val-fraction", ("--format shards",), 0.05, type=float,
                       help="share of shards in val/ (--format shards; default 0.05)")
    parser.add_needing("--shard-dtype", ("--format shards",),
                       help="shard dtype, e.g. uint32 (--format shards; default: Megatron's choice)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = command_parser().parse_args(argv)
    if args.format != "megatron" and not args.append_eod:
        raise UserError(f"--format {args.format} needs --append-eod: a flat token stream tells documents apart only "
                        "by EOD; fix: add --append-eod, or keep --format megatron")
    target = args.output_prefix
    if args.format != "megatron":
        remove_stale_temporaries(args.output_prefix)
        target = _conversion_prefix(args.output_prefix)
    summary = preprocess(args.input, target, args.tokenizer, settings=PreprocessSettings.from_flags(args))
    if args.format != "megatron":
        flat = FlatFormat(layout=args.format, tokens_per_shard=args.tokens_per_shard, val_fraction=args.val_fraction,
                          shard_dtype=args.shard_dtype)
        summary.outputs = convert_outputs(summary.outputs, args.output_prefix, flat, source=args.input)
    for line in summary.lines():
        print(line)
    return 0


def _conversion_prefix(prefix: str | os.PathLike) -> Path:
    """Where `--format npy/shards` first writes the indexed data it converts: a hidden name ending in this
    process's id, so that after a SIGKILL the next run for the same prefix removes it (see
    `remove_stale_temporaries`), and it never looks like a finished output."""
    return temporary_name(prefix, "indexed")


@dataclass(frozen=True, kw_only=True)
class FlatFormat:
    """`--format npy` or `shards` and its options: the flat token layout the indexed outputs become."""

    layout: str  # "npy" or "shards"
    tokens_per_shard: int = 10_000_000
    val_fraction: float = 0.05
    shard_dtype: str | None = None  # None: the dtype Megatron would choose


def convert_outputs(outputs: dict[str, str], prefix: str, flat: FlatFormat,
                    source: str | os.PathLike | None = None) -> dict[str, str]:
    """Turn each key's indexed output into `{prefix}_{key}.npy` or `{prefix}_{key}_shards/`, then remove it.
    Every output is checked before any is written: a layout that would lose documents is refused, in a
    line naming `source` (the input the data was made from, which the sidecars name too). The EOD id is
    the one each output's sidecar records."""
    from ..datasets.formats import indexed_to_npy, indexed_to_shards, require_boundaries

    converted = {}
    try:
        eod_ids = {key: data_facts(indexed).eod_id for key, indexed in outputs.items()}
        for key, indexed in outputs.items():
            require_boundaries(IndexedDataset(indexed), eod_ids[key], f"--format {flat.layout}",
                               f"{source or indexed} ('{key}')")
        for key, indexed in outputs.items():
            if flat.layout == "npy":
                converted[key] = str(indexed_to_npy(indexed, f"{prefix}_{key}.npy", eod_ids[key], source))
            else:
                converted[key] = str(indexed_to_shards(indexed, f"{prefix}_{key}_shards", flat.tokens_per_shard,
                                                       val_fraction=flat.val_fraction, dtype=flat.shard_dtype,
                                                       eod_id=eod_ids[key], source=source))
    finally:
        for indexed in outputs.values():
            remove_dataset(indexed)
    return converted

