"""How a preprocessing run goes: every option of `preprocess()` and of its command line in one object, each
with its name, default and meaning written once (see docs/preprocessing.md for the longer story)."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True, kw_only=True)
class PreprocessSettings:
    """The options of one run; `preprocess()` takes the whole object, or any of its fields by keyword."""

    json_keys: tuple[str, ...] = ("text",)  # the fields to tokenize, one output each
    workers: int = 1  # encoding processes here; with engine "ray", the CPUs of the Ray started for the run
    append_eod: bool = False  # the EOD id after each non-empty document
    parse_special_tokens: bool = False  # special-token strings in a text become their ids, as Megatron does
    skip_bad_records: bool = False  # skip and count bad records instead of stopping at the first
    partitions: int = 1  # contiguous byte ranges of the input run at the same time: the same bytes as one pass
    log_interval: int = 0  # documents between log lines when `progress` is off (0: none)
    progress: bool = True  # a progress bar over the input
    engine: str = "local"  # "local" processes, or "ray" tasks (one per partition)
    ray_address: str | None = None  # with engine "ray": the cluster to join (None: a Ray started here)
    encoder: str = "auto"  # "auto", "fast" (fastokens) or "reference": the same bytes either way
    one_run: bool = False  # this process preprocesses this input only (the command line): "auto" weighs reading
    # fastokens' vocabulary against the input's size; a script that goes on to more files reads it once for all

    @classmethod
    def from_flags(cls, flags) -> PreprocessSettings:
        """The settings of the command line's parsed `flags`: each flag named as a setting gives it,
        `--no-progress` turns `progress` off, and the command line is one run."""
        given = {field.name: getattr(flags, field.name) for field in fields(cls) if hasattr(flags, field.name)}
        return cls(**{**given, "json_keys": tuple(flags.json_keys), "progress": not flags.no_progress,
                      "one_run": True})
