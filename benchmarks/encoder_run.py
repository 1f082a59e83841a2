"""One encoder on one input, in a process of its own (so that its thread pool is sized afresh): the seconds it
takes to read its vocabulary, the seconds it takes to encode every text, and the ids it made, for
`preprocess_encoders.py` to compare with the reference's document by document.

    python benchmarks/encoder_run.py ENCODER THREADS TOKENIZER TEXTS.jsonl OUT_FOLDER

ENCODER is tiktoken (the reference), fastokens, gigatoken, toktok, riptoken, kitoken or tokie. It prints one JSON
line: `read_s`, `encode_s` and `version`, or `missing` (not installed) or `unsupported` (no encoding for this
vocabulary), in words; the ids go to OUT_FOLDER/ids.npy (uint32) and offsets.npy (each text's start, and the end).
"""

from __future__ import annotations

import json
import os
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DISTRIBUTIONS = {"tiktoken": "tiktoken", "fastokens": "fastokens", "gigatoken": "gigatoken", "toktok": "toktok-rs",
                 "riptoken": "riptoken", "kitoken": "kitoken", "tokie": "tokie"}
# what sizes each encoder's thread pool: Rayon's variable, and fastokens' own (it does not read Rayon's)
THREAD_VARIABLES = ("RAYON_NUM_THREADS", "FASTOKENS_BPE_THREADS")
TOKTOK_ENCODINGS = {"cl100k": "cl100k_base"}  # the bundled encodings of the zoo's vocabularies (no Llama 3)


def texts_of(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line)["text"] for line in lines if line.strip()]


def reader(encoder: str, tokenizer, folder: Path):
    """A function that reads `encoder`'s vocabulary of `tokenizer` and returns its encode function (texts to ids
    and offsets, special-token strings as text, `threads` threads); the files it reads are made here, untimed."""
    from helpers.tokenizers.encoders import encode_flat, fast_recipe, tokenizer_json
    from helpers.tokenizers.early_vocabulary import read_vocabulary

    if encoder == "tiktoken":
        import tiktoken

        def read():
            encoding = tiktoken.Encoding(name=tokenizer.name, pat_str=tokenizer.pattern,
                                         mergeable_ranks=tokenizer.ranks, special_tokens=tokenizer.special_tokens)
            return lambda texts, threads: encoding.encode_ordinary_batch(texts, num_threads=threads)
        return read  # lists of ints, made flat after the clock stops
    if encoder == "fastokens":
        recipe = fast_recipe(tokenizer)
        return lambda: (lambda fast: lambda texts, threads: encode_flat(fast, texts))(read_vocabulary(recipe))
    if encoder == "gigatoken":
        return _gigatoken_reader(tokenizer, tokenizer_json(tokenizer), folder)
    if encoder in SAVED_FORMS:
        return _saved_form_reader(encoder, tokenizer, folder)
    if encoder == "riptoken":
        import riptoken

        return lambda: (lambda core: lambda texts, threads: core.encode_ordinary_batch(texts))(
            riptoken.CoreBPE(riptoken.load_tiktoken_bpe(str(tokenizer.bpe_file)), {}, tokenizer.pattern))
    import toktok

    name = TOKTOK_ENCODINGS[tokenizer.name]
    return lambda: (lambda bundled: lambda texts, threads: bundled.encode_batch_to_numpy(texts, threads=threads))(
        toktok._encoding(name))  # its id-returning surface (the public one counts only)


def _without_special_tokens(hf_json: Path, target: Path) -> Path:
    """`hf_json` (a `tokenizer.json`) written to `target` without its special tokens, so that their strings are
    text to a peer that would otherwise split them out."""
    content = json.loads(hf_json.read_text(encoding="utf-8"))
    content["added_tokens"] = []
    target.write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
    return target


def _gigatoken_reader(tokenizer, hf_json: Path, folder: Path):
    """gigatoken reads cl100k from its tiktoken file with its own GPT-4 pattern, and other vocabularies from the
    same `tokenizer.json` as fastokens' (its `.tiktoken` reader stops on Llama 3), less the special tokens, so
    that their strings are text; its results are awkward arrays, imported here with the read."""
    import gigatoken.gigatoken_rs as gigatoken

    if tokenizer.name == "cl100k":
        load = lambda: gigatoken.BPETokenizer.from_tiktoken(str(tokenizer.bpe_file), "gpt4", {})  # noqa: E731
    else:
        definition = _without_special_tokens(hf_json, folder / "gigatoken.json")
        load = lambda: gigatoken.load_hf_json(definition.read_bytes())  # noqa: E731

    def read():
        import awkward  # noqa: F401  (what every encode call returns)

        peer = load()

        def encode(texts, threads):
            layout = peer.encode_batch(texts, parallel=threads > 1).layout
            return np.asarray(layout.content.data), np.asarray(layout.offsets.data)
        return encode
    return read


SAVED_FORMS = ("kitoken", "tokie")  # the peers that save what they read in a form of their own, read back fast


def _saved_form_reader(encoder: str, tokenizer, folder: Path):
    """kitoken and tokie read from the form they saved (made here, untimed: a parsed vocabulary kept beside the
    tokenizer, as a cache of one would be): kitoken's made from the tiktoken file, tokie's from the same
    `tokenizer.json` as fastokens' less its special tokens (whose strings are text here)."""
    from helpers.tokenizers.encoders import tokenizer_json

    saved = folder / f"{encoder}.saved"
    if encoder == "kitoken":
        import kitoken

        kitoken.Kitoken.from_tiktoken_file(str(tokenizer.bpe_file)).to_file(str(saved))
        return lambda: (lambda peer: lambda texts, threads: peer.encode_all(texts))(
            kitoken.Kitoken.from_file(str(saved)))
    import tokie

    definition = _without_special_tokens(tokenizer_json(tokenizer), folder / "tokie.json")
    tokie.Tokenizer.from_json(str(definition)).save(str(saved))
    return lambda: (lambda peer: lambda texts, threads: [encoding.ids for encoding in peer.encode_batch(
        texts, add_special_tokens=False)])(tokie.Tokenizer.from_file(str(saved)))


def _flat(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    flat = np.fromiter((i for ids in lists for i in ids), dtype=np.uint32, count=int(lengths.sum()))
    return flat, np.concatenate([[0], np.cumsum(lengths)])


def run(encoder: str, threads: int, tokenizer_name: str, texts_path: Path, out: Path) -> dict:
    """Read, encode, save; what it took."""
    try:
        version = metadata.version(DISTRIBUTIONS[encoder])
    except metadata.PackageNotFoundError:
        return {"missing": f"not installed; fix: pip install {DISTRIBUTIONS[encoder]}"}
    from helpers.tokenizers.zoo import load_tokenizer

    tokenizer = load_tokenizer(tokenizer_name)
    if encoder == "toktok" and tokenizer.name not in TOKTOK_ENCODINGS:
        return {"unsupported": f"no {tokenizer.name} vocabulary (it bundles cl100k_base, o200k_base, "
                               "o200k_harmony and qwen3.5 only)"}
    read = reader(encoder, tokenizer, out)
    texts = texts_of(texts_path)
    start = time.perf_counter()
    encode = read()
    read_s = time.perf_counter() - start
    start = time.perf_counter()
    made = encode(texts, threads)
    ids, offsets = (made, None) if isinstance(made, list) else made
    encode_s = time.perf_counter() - start
    if isinstance(ids, list):
        ids, offsets = _flat(ids)
    np.save(out / "ids.npy", np.asarray(ids, dtype=np.uint32))
    np.save(out / "offsets.npy", np.asarray(offsets, dtype=np.int64))
    return {"read_s": read_s, "encode_s": encode_s, "version": version}


if __name__ == "__main__":
    name, count, vocabulary, source, folder = sys.argv[1:6]
    for variable in THREAD_VARIABLES:
        os.environ.setdefault(variable, count)
    print(json.dumps(run(name, int(count), vocabulary, Path(source), Path(folder))))
