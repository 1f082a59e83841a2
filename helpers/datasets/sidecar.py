"""The sidecar: a small JSON file beside a Megatron prefix that says which tokenizer made the data.

    data/megatron/docs_text_document.bin   tokens            (Megatron reads it)
    data/megatron/docs_text_document.idx   index             (Megatron reads it)
    data/megatron/docs_text_document.json  the sidecar       (Megatron ignores it)

`helpers.preprocess` writes it once the `.bin/.idx` are in place; `helpers.check` and the loader read it,
so the tokenizer is named once, when the data is made, instead of again at every later step. Its
fingerprint catches a tokenizer that changed since (a `bpe-N` retrained on other text), which would
otherwise decode the data into the wrong words without a sound. Data made by Megatron's own tool has
no sidecar: then the tokenizer must be named.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..common.errors import UserError
from ..common.files import write_text_atomically
from ..tokenizers.zoo import HuggingFaceFolderTokenizer, ZooTokenizer, load_tokenizer

FORMAT = "megatron"
REQUIRED = {"dtype": str, "append_eod": bool, "documents": int, "sequences": int, "tokens": int}
REQUIRED_TOKENIZER = {"name": str, "fingerprint": str, "vocab_size": int, "eod_id": int}


def sidecar_path(prefix: str | os.PathLike) -> Path:
    """`{prefix}.json`, beside `{prefix}.bin` and `{prefix}.idx`."""
    return Path(f"{prefix}.json")


def write_sidecar(prefix: str | os.PathLike, content: dict) -> Path:
    """Write the sidecar under a temporary name, then rename it into place: never half a file."""
    return write_text_atomically(sidecar_path(prefix), json.dumps(content, indent=2, ensure_ascii=False) + "\n")


def _problem(content) -> str | None:
    """What is wrong with a parsed sidecar, or None."""
    if not isinstance(content, dict):
        return f"a JSON {type(content).__name__}, not an object"
    if content.get("format") != FORMAT:
        return f"format is {content.get('format')!r}, not {FORMAT!r}"
    tokenizer = content.get("tokenizer")
    if not isinstance(tokenizer, dict):
        return "no 'tokenizer' object"
    for where, fields in ((tokenizer, REQUIRED_TOKENIZER), (content, REQUIRED)):
        for name, kind in fields.items():
            if not isinstance(where.get(name), kind):
                prefix = "tokenizer." if where is tokenizer else ""
                return f"'{prefix}{name}' is missing or not a {kind.__name__}"
    return None


def read_sidecar(prefix: str | os.PathLike) -> dict | None:
    """The sidecar's contents, or None when there is none; a malformed one is a `UserError`."""
    path = sidecar_path(prefix)
    if not path.exists():
        return None
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        problem = f"not valid JSON ({err})"
    else:
        problem = _problem(content)
    if problem:
        raise UserError(f"{path}: malformed sidecar, {problem}; fix: re-run helpers.preprocess to rewrite it "
                        "(or delete it and name the tokenizer with --tokenizer)")
    return content


def recorded_name(tokenizer: ZooTokenizer) -> str:
    """The name a sidecar records: the zoo name, or a folder's absolute path (it loads from anywhere)."""
    if isinstance(tokenizer, HuggingFaceFolderTokenizer):
        return str(Path(tokenizer.name).resolve())
    return tokenizer.name


def tokenizer_identity(tokenizer: ZooTokenizer) -> dict:
    """The sidecar's `tokenizer` entry: name, fingerprint, vocab size, EOD and BOS ids."""
    return {"name": recorded_name(tokenizer), "fingerprint": tokenizer.fingerprint,
            "vocab_size": tokenizer.vocab_size, "eod_id": tokenizer.eod_id, "bos_id": tokenizer.bos_id}


def _load(name: str | ZooTokenizer) -> ZooTokenizer:
    return name if isinstance(name, ZooTokenizer) else load_tokenizer(name)


def _load_recorded(path: Path, name: str) -> ZooTokenizer:
    try:
        return load_tokenizer(name)
    except UserError as err:
        raise UserError(f"{path} names tokenizer '{name}', which does not load here: {err}; "
                        "fix: install what it needs, or name the tokenizer with --tokenizer") from None


def _verified(path: Path, recorded: dict, name: str | ZooTokenizer | None) -> ZooTokenizer:
    """The recorded tokenizer, loaded; refused when `name` disagrees or its vocabulary changed since."""
    tokenizer = _load_recorded(path, recorded["name"]) if name is None else _load(name)
    if recorded_name(tokenizer) != recorded["name"]:
        raise UserError(f"{path}: the data was made with tokenizer '{recorded['name']}', not '{tokenizer.name}'; "
                        f"fix: drop --tokenizer (the sidecar names it) or pass --tokenizer {recorded['name']}")
    if tokenizer.fingerprint != recorded["fingerprint"]:
        raise UserError(f"{path}: tokenizer '{tokenizer.name}' changed since the data was made (fingerprint "
                        f"{tokenizer.fingerprint}, the data's {recorded['fingerprint']}); "
                        "fix: re-run helpers.preprocess to remake the data with it")
    return tokenizer


def _no_sidecar(prefix) -> UserError:
    return UserError(f"{prefix}: no sidecar {sidecar_path(prefix).name}, so the tokenizer that made it is unknown "
                     "(data from Megatron's own tool has none); fix: pass --tokenizer NAME")


def tokenizer_for(prefix: str | os.PathLike, name: str | ZooTokenizer | None = None) -> ZooTokenizer:
    """The zoo tokenizer that made the data at `prefix`, from its sidecar.

    `name` (a zoo name, a folder, or a loaded tokenizer) must agree with the sidecar; without a sidecar
    it is required, and used as given.
    """
    sidecar = read_sidecar(prefix)
    if sidecar is not None:
        return _verified(sidecar_path(prefix), sidecar["tokenizer"], name)
    if name is None:
        raise _no_sidecar(prefix)
    return _load(name)


@dataclass(frozen=True, kw_only=True)
class DataFacts:
    """What a dataset's tokens mean: the tokenizer that made them, its vocabulary and special ids, the
    dtype on disk, and where these facts came from (`source`: the sidecar's path, or "named")."""

    tokenizer: str
    fingerprint: str
    vocab_size: int
    eod_id: int | None
    bos_id: int | None
    dtype: str
    append_eod: bool | None  # None where no sidecar says
    source: str


def data_facts(prefix: str | os.PathLike, tokenizer: str | ZooTokenizer | None = None) -> DataFacts:
    """Vocabulary size, EOD id, tokenizer name and dtype of the data at `prefix`, and where they came from.

    From the sidecar without loading any tokenizer when no `tokenizer` is named (a named one is loaded
    and must agree); without a sidecar, from the named tokenizer (dtype: the one Megatron would choose).
    `source` is the sidecar's path, or "named".
    """
    sidecar = read_sidecar(prefix)
    if sidecar is None:
        if tokenizer is None:
            raise _no_sidecar(prefix)
        named = _load(tokenizer)
        return _facts(tokenizer_identity(named), named.megatron_dtype.name, None, "named")
    if tokenizer is not None:
        _verified(sidecar_path(prefix), sidecar["tokenizer"], tokenizer)
    return _facts(sidecar["tokenizer"], sidecar["dtype"], sidecar["append_eod"], str(sidecar_path(prefix)))


def _facts(identity: dict, dtype: str, append_eod: bool | None, source: str) -> DataFacts:
    return DataFacts(tokenizer=identity["name"], fingerprint=identity["fingerprint"],
                     vocab_size=identity["vocab_size"], eod_id=identity["eod_id"], bos_id=identity.get("bos_id"),
                     dtype=dtype, append_eod=append_eod, source=source)
