"""What cleaning adds for columnar inputs (read and written through `helpers.corpus.inputs`): the columns its
first passes read, and the metadata of a dataset saved by Hugging Face `save_to_disk`.

A folder or a glob stands for its files, each an input of its own, cleaned into `OUT/<that file's name>`; a saved
dataset's Arrow files are cleaned into `OUT/<its folder's name>/`, beside a copy of its `dataset_info.json` and a
`state.json` listing them, so that `datasets.load_from_disk` opens the result. The first passes read only the
text column, and `id` where the file has one (the ids `removed.jsonl` names), a bounded number of rows at a time;
the last pass writes each range's kept rows in the input's format and schema
(`helpers.corpus.columnar_parts`). A null text is a bad record, named by file, row and group.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ...corpus.columnar import ARROW, SAVED_STATE, open_columnar
from ...corpus.columnar_parts import with_label_features


def saved_folder(file: Path) -> Path | None:
    """The folder written by `save_to_disk` that an Arrow file belongs to, if it does."""
    return file.parent if file.suffix == ARROW and (file.parent / SAVED_STATE).is_file() else None


def read_columns(source, text_key: str) -> tuple[str, ...]:
    """The columns the first passes read from a one-file columnar input: the text, then `id` where there is one.
    A file without the text column, or with one that holds something else than strings, is refused in one line."""
    source.check_columns((text_key,), flag="--json-key", lists=False)  # cleaning rewrites strings only
    schema = open_columnar(source.files[0]).schema
    return (text_key,) + (("id",) if "id" in schema.names and text_key != "id" else ())


def saved_state(folder: Path, files: list[str], written: list[Path], fields: dict | None = None) -> tuple[str, str]:
    """The `state.json` of a cleaned saved dataset, listing its `files`, with a fingerprint of their
    contents (a new one: the rows differ), and its `dataset_info.json` as the input had it, with the features of
    the label columns of `fields` (`helpers.clean.steps.base.Labeller`) added."""
    state = json.loads((folder / SAVED_STATE).read_text())
    digest = hashlib.sha256(state.get("_fingerprint", "").encode())
    for path in written:
        with open(path, "rb") as handle:
            while block := handle.read(16 << 20):
                digest.update(block)
    state["_data_files"] = [{"filename": name} for name in files]
    state["_fingerprint"] = digest.hexdigest()[:16]
    info = folder / "dataset_info.json"
    if not fields:
        return json.dumps(state, indent=2) + "\n", info.read_text() if info.is_file() else "{}\n"
    described = json.loads(info.read_text()) if info.is_file() else {}
    described["features"] = with_label_features(described.get("features", {}), fields)
    return json.dumps(state, indent=2) + "\n", json.dumps(described, indent=2) + "\n"
