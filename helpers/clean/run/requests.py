"""What a cleaning run is asked to do, checked before anything is written: its inputs (one per file the given paths
stand for, `helpers.corpus.inputs`), their ranges, the names their outputs take under the output folder."""

from __future__ import annotations

from pathlib import Path

from ...common.errors import UserError
from ...corpus.columnar import SAVED_STATE
from ...corpus.inputs import input_files, open_input
from ...corpus.ranges import is_compressed
from ...engines.choice import check_engine_flags
from ..steps.base import Labeller
from ..steps.registry import refuse_nothing_asked
from .options import RunOptions
from .output_folder import REMOVED, REPORT
from .parquet import saved_folder
from .passes import RangeTask


def range_tasks(sources: list, columns: list[tuple[str, ...]], parts: int) -> list[RangeTask]:
    """Every input's ranges, in input order; a Parquet file without rows has one empty range, so that its
    output is written too (with its schema, and no row)."""
    ranges = [(index, source, start, end) for index, source in enumerate(sources)
              for start, end in source.plan(parts) or [(0, 0)]]
    return [RangeTask(input_index=index, source=source.absolute(), start=start, end=end, index=number,
                      columns=columns[index]) for number, (index, source, start, end) in enumerate(ranges)]


def check_request(paths: list[Path], out: Path, options: RunOptions, steps: list) -> tuple[list, list[Path]]:
    """Refuse, before anything is written, what cannot give a sound run; the inputs, one per file the given ones
    stand for (`helpers.corpus.inputs`), and the empty files passed over (with `--skip-bad-records`)."""
    if not steps:
        refuse_nothing_asked()
    step_names = [step.name for step in steps]
    for step in steps:
        if isinstance(step, Labeller) and options.text_key in step.fields:
            raise UserError(f"--json-key {options.text_key}: the {step.name} step writes a label of that name, which "
                            "would replace the text; fix: pass the field that holds the text, or rename it")
    for name in sorted({name for name in step_names if step_names.count(name) > 1}):
        raise UserError(f"two steps named '{name}' (removed.jsonl and the report name steps); fix: run each once, "
                        "or give one another name")
    check_engine_flags(options.engine, options.workers, options.ray_address, ("--parts", options.ranges))
    if not paths:
        raise UserError("no input; fix: name one or more JSONL or Parquet files with --input")
    files = [file for path in paths for file in input_files(path)]
    empty = [file for file in files if file.is_file() and file.stat().st_size == 0]
    if empty and not options.skip_bad_records:
        raise UserError(f"{empty[0]}: empty file, no record in it; fix: leave it out of --input, or pass "
                        "--skip-bad-records to go on without it (the report names it)")
    if len(empty) == len(files):
        raise UserError(f"every input is empty ({', '.join(map(str, empty[:3]))}); fix: check --input")
    sources = [open_input(file) for file in files if file not in empty]
    paths = [source.path for source in sources]
    names = [output_name(path) for path in paths]
    for name in sorted({name for name in names if names.count(name) > 1}):
        raise UserError(f"two inputs would both be written as {name} (each output is named after its input); "
                        "fix: rename one")
    for path in paths:
        if output_name(path) in (REPORT, REMOVED):
            raise UserError(f"{path}: an input may not be called {path.name}, the name of a report; fix: rename it")
        if (out / output_name(path)).resolve() == path.resolve():
            raise UserError(f"{path}: --output-dir {out} would overwrite this input; fix: choose another folder")
    if out.exists() and not out.is_dir():
        raise UserError(f"--output-dir {out}: a file, not a folder; fix: name a folder")
    return sources, empty


def shown_name(path: Path) -> str:
    """An input file as the report and removed.jsonl name it: its name, under its folder's for a saved dataset."""
    return output_name(path) if saved_folder(path) else path.name


def output_name(path: Path) -> str:
    """The name of an input file's cleaned output under OUT: the file's own, less `.gz` or `.zst` (the output
    is plain JSONL); a saved dataset's Arrow file goes in a folder named as the dataset's."""
    folder = saved_folder(path)
    if folder is not None:
        return f"{folder.name}/{path.name}"
    return path.name[:-len(path.suffix)] if is_compressed(path) else path.name


def saved_metadata(paths: list[Path]) -> dict[str, tuple[Path, list[Path]]]:
    """For each saved dataset among the inputs, the names under OUT of its state.json and dataset_info.json,
    with its folder and its Arrow files."""
    saved: dict[Path, list[Path]] = {}
    for path in paths:
        folder = saved_folder(path)
        if folder is not None:
            saved.setdefault(folder, []).append(path)
    return {f"{folder.name}/{name}": (folder, files) for folder, files in saved.items()
            for name in (SAVED_STATE, "dataset_info.json")}
