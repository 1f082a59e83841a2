"""The zoo: every tokenizer real and offline, and its Hugging Face export giving the same ids."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.common.errors import UserError
from helpers.tokenizers.zoo import ZOO, load_tokenizer

NAMES = ["llama3", "mistral", "cl100k", "bytes", "bpe"]

VARIED_TEXTS = [
    "Hello world",
    "Hello world.",
    " leading space",
    "   three leading spaces",
    "trailing spaces   ",
    "a  \nb",
    "x\n\n\n  y",
    "\n\nstarts with newlines",
    "tabs\t\there\t",
    "line\r\nwindows\r\n",
    "héllo wörld, naïve café",
    "日本語のテキストと中文",
    "emoji 🤖 and family 👩‍👩‍👧 and flags 🇫🇷",
    "combining e\u0301 and zero\u200bwidth",
    "control \x00 \x07 \x1b[31m chars",
    "def f(x):\n    return x ** 2  # square\n\n\nclass A:\n\tpass\n",
    "numbers 1234567890 3.14159 1e-10",
    "it's THEY'LL we've I'm you'd",
    "   ",
    "",
    "O, that this too too solid flesh would melt,\nThaw, and resolve itself into a dew!",
]

SPECIAL_STRINGS = ["<|end_of_text|>", "<|begin_of_text|>", "<|endoftext|>", "<s>", "</s>", "<unk>"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory, corpus_dir):
    """Each zoo tokenizer with the AutoTokenizer loaded from its exported folder."""
    from transformers import AutoTokenizer

    pairs = {}
    for name in NAMES:
        tokenizer = load_tokenizer(name)
        folder = tokenizer.export(tmp_path_factory.mktemp(name))
        pairs[name] = (tokenizer, AutoTokenizer.from_pretrained(str(folder)))
    return pairs


def test_llama3_is_the_real_tokenizer(exported):
    tokenizer, hf = exported["llama3"]
    assert tokenizer.encode("Hello world") == [9906, 1917]
    assert hf("Hello world", add_special_tokens=False).input_ids == [9906, 1917]
    assert tokenizer.vocab_size == len(hf) == 128_256
    assert (tokenizer.bos_id, tokenizer.eod_id) == (128_000, 128_001)
    assert (hf.eos_token, hf.eos_token_id, hf.bos_token, hf.bos_token_id) == (
        "<|end_of_text|>", 128_001, "<|begin_of_text|>", 128_000)


@pytest.mark.parametrize("name, vocab, eos, bos", [
    ("mistral", 32_000, ("</s>", 2), ("<s>", 1)),
    ("cl100k", 100_277, ("<|endoftext|>", 100_257), (None, None)),
    ("bytes", 258, ("<|end_of_text|>", 257), ("<|begin_of_text|>", 256)),
])
def test_vocab_and_special_tokens(exported, name, vocab, eos, bos):
    tokenizer, hf = exported[name]
    assert tokenizer.vocab_size == vocab == ZOO[name].vocab_size
    assert (hf.eos_token, hf.eos_token_id) == eos == (tokenizer.eod_token, tokenizer.eod_id)
    assert (hf.bos_token, hf.bos_token_id) == bos == (tokenizer.bos_token, tokenizer.bos_id)


def test_megatron_dtype_follows_vocab_size():
    assert load_tokenizer("llama3").megatron_dtype == np.int32
    assert load_tokenizer("cl100k").megatron_dtype == np.int32
    assert load_tokenizer("mistral").megatron_dtype == np.uint16
    assert load_tokenizer("bytes").megatron_dtype == np.uint16


@pytest.mark.parametrize("name", NAMES)
def test_export_gives_the_same_ids_on_varied_text(exported, name):
    tokenizer, hf = exported[name]
    for text in VARIED_TEXTS + ["word " * 20_000, "x" * 5_000 + "\n" * 300]:
        ids = tokenizer.encode(text)
        assert hf(text, add_special_tokens=False).input_ids == ids, repr(text[:80])
        # Megatron's preprocessing calls the tokenizer with its defaults: no BOS may appear.
        assert hf(text).input_ids == ids, repr(text[:80])


@pytest.mark.parametrize("name", NAMES)
def test_decode_round_trips(exported, name):
    tokenizer, _ = exported[name]
    for text in VARIED_TEXTS:
        assert tokenizer.decode(tokenizer.encode(text)) == text


@pytest.mark.parametrize("name", NAMES)
def test_batch_encode_equals_encode(exported, name):
    tokenizer, _ = exported[name]
    assert tokenizer.encode_batch(VARIED_TEXTS) == [tokenizer.encode(t) for t in VARIED_TEXTS]


@pytest.mark.parametrize("name", NAMES)
def test_special_token_strings_stay_text(exported, name):
    tokenizer, hf = exported[name]
    specials = set(tokenizer.special_tokens.values())
    for special in tokenizer.special_tokens:
        text = f"before {special} after"
        ids = tokenizer.encode(text)
        assert not specials & set(ids), (special, ids)
        assert tokenizer.decode(ids) == text
        # Asked to, the zoo parses them exactly as the Hugging Face export does.
        parsed = tokenizer.encode(text, parse_special=True)
        assert tokenizer.special_tokens[special] in parsed
        assert parsed == hf(text, add_special_tokens=False).input_ids


TEXT_ALPHABET = st.sampled_from(
    list("abcXYZ019 .,;:'\"!?()[]{}-_=+*/\\#@$%&") + [" ", "  ", "\t", "\n", "\n\n", "\r\n", "   "]
    + ["é", "ü", "ñ", "日", "本", "😀", "👩‍👧", "\u0301", "\u200b", "\x00", "\x1b", "Ω", "ß", "İ"]
    + ["the", " the", "The", "'s", "'LL", "def ", "return", "    ", "1234", "<|", "|>", "<s", ">"]
)
TEXTS = st.lists(TEXT_ALPHABET, max_size=60).map("".join)


@pytest.mark.parametrize("name", NAMES)
def test_export_matches_on_random_text(exported, name):
    tokenizer, hf = exported[name]

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(TEXTS)
    def check(text):
        ids = tokenizer.encode(text)
        hf_ids = hf(text, add_special_tokens=False).input_ids
        assert hf_ids == tokenizer.encode(text, parse_special=True)
        if not any(special in text for special in tokenizer.special_tokens):
            assert hf_ids == ids
        assert tokenizer.decode(ids) == text

    check()


def test_trained_bpe_vocab_is_a_parameter(corpus_dir):
    small = load_tokenizer("bpe-512")
    assert small.vocab_size == 512
    text = "To be, or not to be, that is the question"
    assert len(small.encode(text)) > len(load_tokenizer("bpe").encode(text))


def test_unknown_tokenizer_names_the_choices():
    with pytest.raises(UserError, match="llama3"):
        load_tokenizer("gpt5")


def test_cli_list_and_export(tmp_path):
    run = [sys.executable, "-m", "helpers.tokenizers"]
    listing = subprocess.run(run + ["list"], capture_output=True, text=True, check=True).stdout
    for name, dtype in [("llama3", "int32"), ("mistral", "uint16"), ("cl100k", "int32"), ("bytes", "uint16")]:
        line = next(l for l in listing.splitlines() if l.startswith(name))
        assert dtype in line
    assert "128,256" in listing
    subprocess.run(run + ["export", "llama3", str(tmp_path / "llama3")], capture_output=True, check=True)
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(str(tmp_path / "llama3"))
    assert hf("Hello world", add_special_tokens=False).input_ids == [9906, 1917]
    bad = subprocess.run(run + ["export", "nope", str(tmp_path / "x")], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown tokenizer" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("name", ["bytes", "llama3", "bpe-512"])
def test_a_folder_named_like_a_zoo_entry_does_not_shadow_it(tmp_path, monkeypatch, capsys, corpus_dir, name):
    """`mkdir bytes` (or exporting llama3 to ./llama3) must not switch `--tokenizer NAME` to the folder."""
    from helpers.tokenizers import zoo as tokenizers

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tokenizers, "_said_ambiguous", set(), raising=False)
    (tmp_path / name).mkdir()
    tokenizer = load_tokenizer(name)
    assert tokenizer.name == name and tokenizer.kind != "Hugging Face folder"
    assert load_tokenizer(name) is tokenizer
    said = capsys.readouterr().err.strip().splitlines()
    assert said == [f"warning: '{name}' is a zoo tokenizer and a folder here; using the zoo's '{name}'; "
                    f"for the folder write ./{name}"]


def test_a_folder_given_as_a_path_is_the_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    zoo = load_tokenizer("bytes")
    for folder in ("bytes", "data/tokenizers/mine", "mine"):
        zoo.export(tmp_path / folder)
    for given in ["./bytes", str(tmp_path / "bytes"), "data/tokenizers/mine", "mine"]:
        tokenizer = load_tokenizer(given)
        assert tokenizer.kind == "Hugging Face folder", given
        assert tokenizer.encode("héllo") == zoo.encode("héllo")
    assert capsys.readouterr().err == ""
    with pytest.raises(UserError, match=r"'data/tokenizers/absent'.*no such folder.*fix:"):
        load_tokenizer("data/tokenizers/absent")


def test_export_to_a_folder_named_like_the_tokenizer_keeps_the_zoo(tmp_path):
    """`tokenizers export llama3 llama3`, then `--tokenizer llama3` still means the zoo's llama3."""
    run = [sys.executable, "-m", "helpers.tokenizers"]
    subprocess.run(run + ["export", "bytes", "bytes"], cwd=tmp_path, capture_output=True, check=True,
                   env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    probe = "from helpers.tokenizers.zoo import load_tokenizer; print(load_tokenizer('bytes').kind)"
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert result.stdout.strip() == "bytes"
    assert result.stderr.count("for the folder write ./bytes") == 1
