"""Which encoder turns text into ids: the tokenizer's own (tiktoken, sentencepiece, `tokenizers`: the
reference) or fastokens, an exact BPE encoder several times faster, used for a vocabulary only once it has
been proved to give the reference's ids on this machine.

The proof: both encoders on a fixed sample of varied text (`parity_sample`: edge cases of every script,
emoji, combining marks and odd white space, and the Python standard library's source as code and prose),
every document compared id for id. The verdict is cached under `data/cache/encoders/`, keyed by the
tokenizer's fingerprint, fastokens' version and the sample's digest, so it runs once per vocabulary and
release. `auto` (the default) takes fastokens where it is proved and says in one line why not otherwise
(the command line, which encodes one input and ends, also takes the reference where the input is too small
for fastokens to pay for reading its vocabulary, by what the proof measured each encoder to cost, and its
summary says so);
`fast` insists (one line and exit 2 where it is not proved); `reference` never uses it. Special-token
strings parsed as special ids (`--parse-special-tokens`) always go through the reference, the only path
checked for them. Either way the `.bin/.idx` bytes are the same; the summary and the sidecar name the
encoder that made them.

    encoder = choose_encoder(load_tokenizer("llama3"), "auto")   # Encoder("fastokens 0.3.5", ...)
    ids, offsets = fast_tokenizer(zoo).encode_batch_flat(texts)  # flat uint32 ids, uint64 offsets
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import random
import sys
import sysconfig
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

from ..common.errors import UserError
from ..common.files import write_text_atomically
from ..common.paths import CACHE_DIR
from .bpe_merges import one_merge_per_token
from .early_vocabulary import files_digest, read_vocabulary, encoding_seconds, remember
from .early_vocabulary import started as started_early
from .early_vocabulary import take as take_early

ENCODERS = ("auto", "fast", "reference")
FAST = "fastokens"
PROOF_DIR = CACHE_DIR / "encoders"
# fastokens reads cl100k fastest through its own preset of the pattern (an explicit pattern is ~3x slower);
# the preset is proved like any other path before it is used
FAST_PRESETS = {"cl100k": "cl100k_base"}
# what the sample takes from the standard library: code with prose in its docstrings and comments
STDLIB_SOURCES = ("textwrap.py", "argparse.py", "difflib.py", "email/message.py", "json/decoder.py",
                  "unittest/case.py", "http/client.py", "calendar.py", "locale.py", "statistics.py")
EDGE_CASES = 5000
# how the kept tokenizer.json writes its merges: "a b" strings (fastokens reads them in two thirds of the time
# it takes for pairs), and for a tiktoken file one merge per token (`bpe_merges`: Llama 3's 127,156 instead
# of 280,147); part of the proof's key, since the proof is of this file
JSON_FORM = "one-merge-per-token-2"
REFERENCE_MARGIN = 1.5  # how much faster the reference must be estimated for a small input (`too_small_for_fast`)


@dataclass(frozen=True)
class Encoder:
    """The encoder a run uses: `name` with its version (for the summary and the sidecar), and why."""

    name: str
    fast: bool
    reason: str = ""
    too_small: bool = False  # the reference was taken because the input is too small for fastokens to pay off


def fast_version() -> str | None:
    try:
        return metadata.version(FAST)
    except metadata.PackageNotFoundError:
        return None


def reference_name(tokenizer) -> str:
    """The reference encoder of a zoo tokenizer, with its version: tiktoken, sentencepiece or tokenizers."""
    module = {"tiktoken BPE": "tiktoken", "SentencePiece BPE": "sentencepiece"}.get(tokenizer.kind, "tokenizers")
    if tokenizer.name == "bytes":
        return "bytes (utf-8)"
    try:
        return f"{module} {metadata.version(module)}"
    except metadata.PackageNotFoundError:
        return module


def _edge_cases(count: int) -> list[str]:
    """Strings a pre-tokenizer's pattern finds hard: scripts side by side, emoji sequences, combining marks,
    white space of every kind, digit runs, contractions and lone punctuation; the same list every time."""
    pieces = [
        "Hello", "world", "naïve", "façade", "Straße", "ÆØÅ", "Ωμέγα", "Привет", "мир", "שָׁלוֹם", "مرحبا", "नमस्ते",
        "สวัสดี", "你好世界", "こんにちは", "カタカナ", "한국어", "ქართული", "Ἀθῆναι", "ǅemal", "İstanbul", "ﬁnance",
        "😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷", "❤️", "1️⃣", "e\u0301", "a\u0308\u0323", "\u0301", "\u200d", "\ufeff",
        " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", "\u00a0", "\u2009", "\u3000", "\u2028", "\x0b", "\x0c",
        "0", "7", "42", "1234", "3.14159", "1,000,000", "٣٤٥", "१२३", "²", "½",
        "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "’s", "don't", "I'M",
        ".", ",", "!", "?", "...", "—", "–", "-", "(", ")", "[", "]", "{", "}", "<", ">", "/", "\\", "#", "@", "$",
        "%", "^", "&", "*", "_", "=", "+", "|", "~", "`", '"', "«", "»", "„", "“", "”", "::", "->", "=>", "!=",
        "def", "return", "self.x", "<|endoftext|>", "<|end_of_text|>", "<|begin_of_text|>", "<s>", "</s>", "<unk>",
        "[INST]", "<pad>", "http://example.com/a?b=c", "x" * 300,
    ]
    chooser = random.Random(0)
    return ["".join(chooser.choice(pieces) for _ in range(chooser.randint(1, 40))) for _ in range(count)]


@functools.cache
def parity_sample() -> tuple[str, ...]:
    """The fixed sample both encoders must agree on: the edge cases and the standard library's sources
    (whole, and cut into pieces of 1 to 2,000 characters at odd places)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    sources = [(stdlib / name).read_text(encoding="utf-8") for name in STDLIB_SOURCES if (stdlib / name).is_file()]
    chooser = random.Random(1)
    cuts = []
    for text in sources:
        start = 0
        while start < len(text):
            end = start + chooser.randint(1, 2000)
            cuts.append(text[start:end])
            start = end
    return tuple(_edge_cases(EDGE_CASES) + sources + cuts)


@functools.cache
def _sample_key() -> str:
    """What the sample is made from, as a short digest, without making it: this module's code (which writes
    the edge cases), the Python version and the standard-library files it reads. Making the sample takes a
    fifth of a second; every run needs the key."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(sys.version.encode())
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in STDLIB_SOURCES:
        path = stdlib / name
        digest.update(f"{name}:{path.stat().st_size if path.is_file() else -1}".encode())
    return digest.hexdigest()[:16]


def tokenizer_json(tokenizer) -> Path:
    """The tokenizer's `tokenizer.json`, built once per vocabulary and kept beside the proofs (building it
    for Llama 3 takes seconds; every worker process reads it)."""
    path = PROOF_DIR / f"{tokenizer.fingerprint}-{JSON_FORM}.tokenizer.json"
    if not path.is_file():
        content = json.loads(tokenizer.to_hf().backend_tokenizer.to_str())
        merges = content.get("model", {}).get("merges") or []
        if tokenizer.kind == "tiktoken BPE":
            merges = _one_merge_per_token(tokenizer.ranks)
        if all(isinstance(pair, list | tuple) and len(pair) == 2 and " " not in "".join(pair) for pair in merges):
            content["model"]["merges"] = [" ".join(pair) for pair in merges]
        PROOF_DIR.mkdir(parents=True, exist_ok=True)
        write_text_atomically(path, json.dumps(content, ensure_ascii=False))
    return path


def fast_tokenizer(tokenizer):
    """fastokens' encoder of `tokenizer`'s vocabulary, or None where it has none (the byte tokenizer, or no
    fastokens installed); the one `load_fast_early`, or the command line's first instant (`early_vocabulary`),
    started, when one did. Raises fastokens' error for a vocabulary it cannot read. The last `KEPT_LOADED`
    loaded stay with the process: reading Llama 3's takes 0.6 s, and a notebook or a script preprocesses file
    after file with the same one."""
    fingerprint = tokenizer.fingerprint
    if fingerprint in _loaded:
        _loaded.move_to_end(fingerprint)
        return _loaded[fingerprint]
    early = _early.pop(fingerprint, None)
    fast = take_early(fingerprint) if early is None else early.result()  # its error, if any, raised here
    if fast is None:
        fast = _load_fast(tokenizer)
    if fast is not None:
        _loaded[fingerprint] = fast
        while len(_loaded) > KEPT_LOADED:
            _loaded.popitem(last=False)
    return fast


def fast_recipe(tokenizer) -> dict | None:
    """How fastokens reads `tokenizer`'s vocabulary (`early_vocabulary.read_vocabulary`), or None where it has
    none to read (the byte tokenizer, or no fastokens installed)."""
    if fast_version() is None or tokenizer.name == "bytes":
        return None
    preset = FAST_PRESETS.get(tokenizer.name)
    if preset is not None and tokenizer.kind == "tiktoken BPE":
        return {"tiktoken": str(tokenizer.bpe_file), "preset": preset,
                "special_tokens": dict(tokenizer.special_tokens)}
    return {"file": str(tokenizer_json(tokenizer))}


def _load_fast(tokenizer):
    recipe = fast_recipe(tokenizer)
    return None if recipe is None else read_vocabulary(recipe)


def early_note(tokenizer, verdict: dict) -> dict | None:
    """What the next command line needs to read this vocabulary from its first instant (`early_vocabulary`):
    None where fastokens is not proved for it, or where the files it is made from are not known."""
    source = getattr(tokenizer, "bpe_file", None) or getattr(tokenizer, "model_file", None)
    recipe = fast_recipe(tokenizer)
    if not verdict.get("exact") or source is None or recipe is None or "vocabulary_read_s" not in verdict:
        return None
    costs = {key: verdict[key] for key in ("vocabulary_read_s", "fast_mb_s", "reference_mb_s")}
    return {"fingerprint": tokenizer.fingerprint, "sources": [str(source)], "digest": files_digest([str(source)]),
            "recipe": recipe, "costs": costs, "margin": REFERENCE_MARGIN, "fastokens": verdict["fastokens"]}


def leave_early_note(tokenizer_argument: str, tokenizer) -> None:
    """After a command line proved fastokens for `tokenizer` (given as `tokenizer_argument`), leave the note from
    which the next one reads its vocabulary from its first instant (`early_vocabulary`)."""
    note = early_note(tokenizer, proof(tokenizer))
    if note is not None:
        remember(tokenizer_argument, note)


def vocabulary_seconds(tokenizer) -> float:
    """Seconds fastokens takes to read `tokenizer`'s vocabulary afresh (not the one this process keeps)."""
    start = time.perf_counter()
    _load_fast(tokenizer)
    return time.perf_counter() - start


def _one_merge_per_token(ranks: dict[bytes, int]) -> list[tuple[str, str]]:
    """`bpe_merges.one_merge_per_token`, written as the byte-level characters a `tokenizer.json` uses."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    byte_to_char = bytes_to_unicode()
    return [("".join(map(byte_to_char.get, left)), "".join(map(byte_to_char.get, right)))
            for left, right in one_merge_per_token(ranks)]


_early: dict[str, Future] = {}
_loaded: OrderedDict[str, object] = OrderedDict()
KEPT_LOADED = 2


def load_fast_early(tokenizer) -> None:
    """Start loading fastokens' encoder on a thread of its own (reading Llama 3's vocabulary takes three
    quarters of a second, mostly without the interpreter lock), for this process's next `fast_tokenizer` to
    take: the input is read and parsed meanwhile."""
    if tokenizer.fingerprint in _loaded or tokenizer.fingerprint in _early or started_early(tokenizer.fingerprint):
        return
    loader = ThreadPoolExecutor(1, thread_name_prefix="fast-encoder-load")
    _early[tokenizer.fingerprint] = loader.submit(_load_fast, tokenizer)
    loader.shutdown(wait=False)  # the load goes on; the thread ends with it


def encode_flat(fast, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every text's ids, concatenated (uint32), and where each text's start (`len(texts) + 1` offsets)."""
    ids, offsets = fast.encode_batch_flat(texts, split_special_tokens=True)  # special strings are text
    return np.frombuffer(ids, dtype=np.uint32), np.frombuffer(offsets, dtype=np.uint64).astype(np.int64)


def _compared(tokenizer, fast, vocabulary: list[str]) -> tuple[str | None, dict[str, float]]:
    """Where the two encoders first disagree on the sample or on `vocabulary` (`vocabulary_texts`), in words
    (None when they agree on all of it); and where they agree, what each one's MB/s was on the whole sample
    (its scripts side by side are as slow for tiktoken as the workshop's mixed corpus): the reference on one
    thread, text by text, fastokens on its own threads."""
    sample = list(parity_sample())
    start = time.perf_counter()
    ids, offsets = encode_flat(fast, sample)
    fast_s, reference_s = time.perf_counter() - start, 0.0
    for index, text in enumerate(sample):
        start = time.perf_counter()
        reference = tokenizer.encode(text)
        reference_s += time.perf_counter() - start
        if not np.array_equal(ids[offsets[index]:offsets[index + 1]], reference):
            return f"sample text {index} ({text[:40]!r}...) encodes to other ids", {}
    megabytes = sum(len(text.encode("utf-8")) for text in sample) / 1e6
    speeds = {"reference_mb_s": megabytes / reference_s, "fast_mb_s": megabytes / fast_s}
    return _first_vocabulary_difference(tokenizer, fast, vocabulary), speeds


def vocabulary_texts(tokenizer) -> list[str]:
    """Each token of a tiktoken vocabulary that is text, written twice, with its last character again, and
    with its first before it: the pieces in which a token is made by merging rather than found whole, where
    a merges list that lacks the merge tiktoken makes would show. Empty for the other kinds."""
    if tokenizer.kind != "tiktoken BPE":
        return []
    texts = []
    for token in tokenizer.ranks:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:  # a part of a character: it only occurs inside longer tokens
            continue
        texts += [text + text, text + text[-1], text[0] + text]
    return texts


def _first_vocabulary_difference(tokenizer, fast, texts: list[str]) -> str | None:
    if not texts:
        return None
    ids, offsets = encode_flat(fast, texts)
    references = tokenizer.encode_batch(texts)
    for index, reference in enumerate(references):
        if not np.array_equal(ids[offsets[index]:offsets[index + 1]], reference):
            return f"token text {index} ({texts[index][:40]!r}) encodes to other ids"
    return None


def proof(tokenizer) -> dict:
    """Whether fastokens gives the reference's ids for this vocabulary on the whole sample: the cached
    verdict, or a new one (then cached)."""
    version = fast_version()
    path = PROOF_DIR / f"{tokenizer.fingerprint}-{FAST}-{version}-{JSON_FORM}-{_sample_key()}.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    vocabulary = vocabulary_texts(tokenizer)
    speeds = {}
    try:
        fast = fast_tokenizer(tokenizer)
        difference, speeds = (("fastokens has no encoder for it", {}) if fast is None
                              else _compared(tokenizer, fast, vocabulary))
    except (ValueError, RuntimeError, OSError) as error:  # a vocabulary fastokens cannot read
        difference = f"fastokens cannot load it ({str(error).splitlines()[0][:120]})"
    verdict = {"exact": difference is None, "difference": difference, "texts": len(parity_sample()),
               "vocabulary_texts": len(vocabulary), "fastokens": version,
               "reference": reference_name(tokenizer)}
    if difference is None:  # what a run pays with each, for `too_small_for_fast`
        verdict.update(speeds, vocabulary_read_s=vocabulary_seconds(tokenizer))
    PROOF_DIR.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, json.dumps(verdict))
    return verdict


def too_small_for_fast(tokenizer, verdict: dict, megabytes: float, *, workers: int, partitions: int = 1) -> str | None:
    """Why a run of `megabytes` on `workers` processes, this process's only one, is faster with the
    reference: fastokens must first read its vocabulary (Llama 3's: three quarters of a second), which a
    small input does not pay back; a run cut into `partitions` reads it once in each of them, processes of their
    own. None where fastokens is the faster, where the one process that encodes holds its vocabulary already, or
    where the proof measured no costs. The estimates count encoding only, not the reference's own set-up nor the
    pipeline around either encoder, so the reference is taken only where it is estimated `REFERENCE_MARGIN` times
    faster (on a 2-core laptop that puts the line at about 16 MB of JSONL for Llama 3 on 2 processes; the two
    whole commands take the same time there at about 14 MB)."""
    if (partitions == 1 and tokenizer.fingerprint in _loaded) or "vocabulary_read_s" not in verdict:
        return None
    processes = max(1, min(workers, os.cpu_count() or 1))
    with_fast, with_reference = encoding_seconds(verdict, megabytes, processes, partitions)
    if with_reference * REFERENCE_MARGIN >= with_fast:
        return None
    where = f" in each of its {partitions} partitions" if partitions > 1 else ""
    return (f"not fastokens: {megabytes:.1f} MB is too little to pay for reading its vocabulary{where}, which takes "
            f"{verdict['vocabulary_read_s']:.2f} s; encoding takes about {with_reference:.1f} s with "
            f"{verdict['reference']} on {processes} process{'es' * (processes > 1)}, {with_fast:.1f} s with fastokens")


def choose_encoder(tokenizer, choice: str = "auto", parse_special: bool = False, *,
                   one_run_of_megabytes: float | None = None, workers: int = 1, partitions: int = 1) -> Encoder:
    """The encoder for a run: see the module docstring for what each choice does. With
    `one_run_of_megabytes` (a process that encodes that much and ends, as the command line does, or `partitions`
    processes that each read the vocabulary for their share), `auto` also takes the reference where that is
    faster (`too_small_for_fast`)."""
    if choice not in ENCODERS:
        raise UserError(f"--encoder {choice!r}: fix: choose one of {', '.join(ENCODERS)}")
    reference = Encoder(reference_name(tokenizer), fast=False)
    if choice == "reference" or tokenizer.name == "bytes":
        return reference
    if parse_special:
        why = "special-token strings are parsed, and only the reference encoder is checked for them"
    elif fast_version() is None:
        why = "fastokens is not installed (it ships wheels for Linux x86-64, macOS and Windows x86-64)"
    else:
        verdict = proof(tokenizer)
        small = (verdict["exact"] and choice == "auto" and one_run_of_megabytes is not None
                 and too_small_for_fast(tokenizer, verdict, one_run_of_megabytes, workers=workers,
                                        partitions=partitions))
        if small:
            return Encoder(reference.name, fast=False, reason=small, too_small=True)
        if verdict["exact"]:
            return Encoder(f"{FAST} {verdict['fastokens']}", fast=True,
                           reason=f"proved exact against {verdict['reference']} on {verdict['texts']:,} texts"
                                  + (f" and on each of its tokens in context ({verdict['vocabulary_texts']:,} texts)"
                                     if verdict.get("vocabulary_texts") else ""))
        why = f"fastokens differs from {verdict['reference']}: {verdict['difference']}"
    if choice == "fast":
        raise UserError(f"--encoder fast for {tokenizer.name}: {why}; fix: use --encoder auto or reference")
    return Encoder(reference.name, fast=False, reason=why)
