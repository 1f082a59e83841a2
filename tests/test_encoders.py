"""The fast encoder: used for a vocabulary only once proved to give the reference encoder's ids on a fixed
sample, the proof cached; a mismatch or a missing fastokens falls back to the reference in one line; the
`.bin/.idx` bytes are the same with either, on every input format and both engines."""

from __future__ import annotations

import json
from collections import OrderedDict

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers.common.errors import UserError
from helpers.datasets.indexed import bin_path, idx_path
from helpers.datasets.sidecar import read_sidecar
from helpers.preprocess import preprocess
from helpers.tokenizers import early_vocabulary, encoders
from helpers.tokenizers.encoders import choose_encoder, parity_sample
from helpers.tokenizers.zoo import load_tokenizer

PROVED = ("llama3", "cl100k", "mistral", "bpe")


def _bytes(prefix) -> tuple[bytes, bytes]:
    return idx_path(prefix).read_bytes(), bin_path(prefix).read_bytes()


@pytest.mark.parametrize("name", PROVED)
def test_each_vocabulary_is_proved_exact_before_the_fast_encoder_is_used(name, corpus_dir):  # bpe trains on it
    chosen = choose_encoder(load_tokenizer(name), "auto")
    assert chosen.fast and chosen.name.startswith("fastokens "), chosen
    assert f"on {len(parity_sample()):,} texts" in chosen.reason
    assert not choose_encoder(load_tokenizer(name), "reference").fast
    assert not choose_encoder(load_tokenizer(name), "auto", parse_special=True).fast  # only the reference is checked
    assert choose_encoder(load_tokenizer("bytes"), "auto").name == "bytes (utf-8)"


def test_the_sample_holds_every_kind_of_hard_text():
    sample = parity_sample()
    joined = "".join(sample[:5000])
    for piece in ("👨‍👩‍👧‍👦", "e\u0301", "\u3000", "\r\n", "'LL", "<|endoftext|>", "<|end_of_text|>", "नमस्ते"):
        assert piece in joined, piece
    assert sum(len(text) for text in sample) > 1_000_000 and parity_sample() is sample  # the same every time


def test_a_mismatch_falls_back_to_the_reference_in_one_line_and_is_cached(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(encoders, "PROOF_DIR", tmp_path / "proofs")
    llama3, cl100k = load_tokenizer("llama3"), load_tokenizer("cl100k")
    wrong = encoders.fast_tokenizer(cl100k)
    monkeypatch.setattr(encoders, "fast_tokenizer", lambda tokenizer: wrong)  # another vocabulary's encoder
    chosen = choose_encoder(llama3, "auto")
    assert not chosen.fast and chosen.name.startswith("tiktoken ") and "differs from tiktoken" in chosen.reason
    with pytest.raises(UserError, match=r"--encoder fast for llama3: fastokens differs .*; fix: use --encoder auto"):
        choose_encoder(llama3, "fast")
    (verdict,) = (tmp_path / "proofs").glob(f"{llama3.fingerprint}-fastokens-*.json")
    assert json.loads(verdict.read_text())["exact"] is False  # not checked again until fastokens changes
    summary = preprocess(_jsonl(tmp_path), tmp_path / "out", "llama3", append_eod=True, progress=False)
    assert summary.encoder.startswith("tiktoken ")
    assert capsys.readouterr().err.count("note: encoding with tiktoken") == 1


def test_without_fastokens_the_reference_encodes_and_says_why(monkeypatch):
    monkeypatch.setattr(encoders, "fast_version", lambda: None)
    chosen = choose_encoder(load_tokenizer("llama3"), "auto")
    assert not chosen.fast and "fastokens is not installed" in chosen.reason
    with pytest.raises(UserError, match="fix: "):
        choose_encoder(load_tokenizer("llama3"), "fast")


def _jsonl(tmp_path, texts=None):
    texts = texts if texts is not None else ["Hello world.", "", "naïve 👍🏽 e\u0301", "def f(x):\n\treturn x\r\n"] * 50
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"text": text}) + "\n" for text in texts), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", PROVED)
def test_fast_and_reference_write_the_same_bytes(tmp_path, corpus_dir, name):
    source = corpus_dir / "code.jsonl"
    made = {encoder: preprocess(source, tmp_path / encoder, name, workers=2, append_eod=True, progress=False,
                                encoder=encoder) for encoder in ("fast", "reference")}
    assert _bytes(made["fast"].outputs["text"]) == _bytes(made["reference"].outputs["text"])
    sidecar = read_sidecar(made["fast"].outputs["text"])
    assert sidecar["encoder"].startswith("fastokens ") and read_sidecar(made["reference"].outputs["text"])[
        "encoder"] != sidecar["encoder"]


def test_parts_started_after_the_fast_encoder_ran_here_do_not_wait_for_its_threads(tmp_path, monkeypatch, corpus_dir):
    """A fork of a process whose fastokens threads have started would wait for them for ever: parts that
    encode with it come from a fork server once fastokens is loaded here (as a fresh clone's first run is,
    where the proof runs in this process)."""
    monkeypatch.setattr(encoders, "PROOF_DIR", tmp_path / "proofs")
    assert choose_encoder(load_tokenizer("bpe"), "fast").fast  # proved here: fastokens has run in this process
    source = corpus_dir / "docs.jsonl"
    made = [preprocess(source, tmp_path / f"p{parts}", "bpe", workers=2, partitions=parts, append_eod=True,
                       progress=False, encoder=encoder).outputs["text"]
            for parts, encoder in ((2, "fast"), (1, "fast"), (1, "reference"))]
    assert _bytes(made[0]) == _bytes(made[1]) == _bytes(made[2])


@pytest.mark.parametrize("layout", ["parquet", "lists", "without-eod"])
def test_every_input_format_gives_the_same_bytes_with_either_encoder(tmp_path, corpus_dir, layout):
    texts = [json.loads(line)["text"] for line in (corpus_dir / "docs.jsonl").read_text().splitlines()[:60]] + [""]
    if layout == "parquet":
        source = tmp_path / "in.parquet"
        pq.write_table(pa.table({"text": texts}), source)
    elif layout == "lists":  # a document of several strings takes the per-document path
        source = tmp_path / "in.jsonl"
        source.write_text("".join(json.dumps({"text": [t[:50], t[50:]] if k % 2 else t}) + "\n"
                                  for k, t in enumerate(texts)), encoding="utf-8")
    else:
        source = _jsonl(tmp_path, texts)
    eod = layout != "without-eod"
    made = [preprocess(source, tmp_path / encoder, "llama3", workers=2, append_eod=eod, progress=False,
                       encoder=encoder).outputs["text"] for encoder in ("fast", "reference")]
    assert _bytes(made[0]) == _bytes(made[1])


def test_the_ray_engine_gives_the_same_bytes_with_the_fast_encoder(tmp_path, corpus_dir, ray_cluster):
    source = corpus_dir / "docs.jsonl"
    local = preprocess(source, tmp_path / "local", "llama3", workers=2, append_eod=True, progress=False,
                       encoder="reference")
    ray = preprocess(source, tmp_path / "ray", "llama3", workers=2, append_eod=True, progress=False, engine="ray",
                     partitions=2, encoder="fast")
    assert ray.encoder.startswith("fastokens ")
    assert _bytes(local.outputs["text"]) == _bytes(ray.outputs["text"])


def test_the_command_line_names_the_encoder(tmp_path):
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "helpers.preprocess", "--input", str(_jsonl(tmp_path)),
                          "--output-prefix", str(tmp_path / "cli"), "--tokenizer", "cl100k", "--append-eod",
                          "--no-progress", "--encoder", "fast"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "encoder         fastokens " in run.stdout
    bad = subprocess.run([sys.executable, "-m", "helpers.preprocess", "--input", str(_jsonl(tmp_path)),
                          "--output-prefix", str(tmp_path / "cli"), "--tokenizer", "cl100k", "--encoder", "quick"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_auto_for_one_run_takes_the_reference_where_the_input_cannot_pay_for_the_vocabulary_read(monkeypatch):
    llama3 = load_tokenizer("llama3")
    verdict = encoders.proof(llama3)
    assert verdict["vocabulary_read_s"] > 0 and verdict["fast_mb_s"] > verdict["reference_mb_s"] > 0
    monkeypatch.setattr(encoders, "_loaded", OrderedDict())  # a fresh process: nothing read yet
    small = choose_encoder(llama3, "auto", one_run_of_megabytes=0.01, workers=2)
    assert not small.fast and small.too_small and small.name.startswith("tiktoken ")
    assert "0.0 MB is too little to pay for reading its vocabulary" in small.reason
    # on one process the faster encoder wins a large input (on two, the reference may: it runs on both)
    assert choose_encoder(llama3, "auto", one_run_of_megabytes=100_000, workers=1).fast
    assert choose_encoder(llama3, "fast", one_run_of_megabytes=0.01, workers=2).fast  # fast insists
    assert choose_encoder(llama3, "auto").fast  # a notebook or a script reads it once for all its runs
    encoders._loaded[llama3.fingerprint] = object()  # read already: nothing left to pay for
    assert choose_encoder(llama3, "auto", one_run_of_megabytes=0.01, workers=2).fast
    # but partitions are processes of their own: each would read it again for its share
    parted = choose_encoder(llama3, "auto", one_run_of_megabytes=0.01, workers=7, partitions=7)
    assert not parted.fast and "its vocabulary in each of its 7 partitions" in parted.reason


def test_a_small_input_cut_into_partitions_is_encoded_by_the_reference_in_each(tmp_path, corpus_dir):
    """Each local partition would read fastokens' vocabulary for its own small share: `auto` weighs that."""
    made = preprocess(corpus_dir / "docs.jsonl", tmp_path / "parts", "llama3", workers=3, partitions=3,
                      append_eod=True, progress=False)
    assert made.encoder.startswith("tiktoken ") and "in each of its 3 partitions" in made.encoder


def test_the_command_line_says_why_a_small_input_goes_through_the_reference(tmp_path):
    import subprocess
    import sys

    def run(encoder):
        done = subprocess.run([sys.executable, "-m", "helpers.preprocess", "--input", str(_jsonl(tmp_path)),
                               "--output-prefix", str(tmp_path / encoder), "--tokenizer", "llama3", "--append-eod",
                               "--no-progress", "--workers", "2", "--encoder", encoder], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done

    auto, fast = run("auto"), run("fast")
    assert "encoder         tiktoken " in auto.stdout and "too little to pay for reading its vocabulary" in auto.stdout
    assert "note:" not in auto.stderr  # the summary says it; stderr is for what needs acting on
    assert "encoder         fastokens " in fast.stdout
    assert _bytes(tmp_path / "auto_text_document") == _bytes(tmp_path / "fast_text_document")


def test_the_proof_checks_every_token_of_a_tiktoken_vocabulary_in_context(tmp_path):
    """A merges list built from each token's halves with its lower ranks only lacks the merges tiktoken makes
    through a token of higher rank (Llama 3's ".:.:" from ".:." and ":"): the fixed sample does not meet
    those tokens, the vocabulary's own tokens written in context do."""
    import fastokens
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    llama3 = load_tokenizer("llama3")
    ranks, char = llama3.ranks, bytes_to_unicode()

    def lower_ranks_only(token):
        parts = [token[i:i + 1] for i in range(len(token))]
        while len(parts) > 2:
            joins = [(ranks.get(a + b, ranks[token]), i) for i, (a, b) in enumerate(zip(parts, parts[1:]))]
            rank, where = min(joins)
            if rank >= ranks[token]:
                return None
            parts[where:where + 2] = [parts[where] + parts[where + 1]]
        return parts if len(parts) == 2 else None

    content = json.loads(encoders.tokenizer_json(llama3).read_text(encoding="utf-8"))
    pairs = [lower_ranks_only(token) for token in sorted(ranks, key=ranks.get) if len(token) > 1]
    content["model"]["merges"] = [" ".join("".join(map(char.get, part)) for part in pair) for pair in pairs if pair]
    short = fastokens.Tokenizer.from_json_str(json.dumps(content, ensure_ascii=False))
    vocabulary = encoders.vocabulary_texts(llama3)
    proved = encoders.proof(llama3)  # fastokens' own merges pass every text (the verdict is the clone's, cached)
    assert proved["exact"] is True and proved["vocabulary_texts"] == len(vocabulary) > 3 * 120_000
    assert not encoders.vocabulary_texts(load_tokenizer("mistral"))
    verdict = _proof_with(llama3, short, tmp_path)  # the proof itself, not only its parts
    assert verdict["exact"] is False and "token text" in verdict["difference"]


def _proof_with(tokenizer, fast, folder) -> dict:
    """`encoders.proof` run with `fast` as fastokens' encoder, its verdict kept in `folder`."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(encoders, "PROOF_DIR", folder / "proofs")
        patch.setattr(encoders, "fast_tokenizer", lambda _tokenizer: fast)
        return encoders.proof(tokenizer)


class _SameCountOtherIds:
    """fastokens' encoder with every id's lowest bit flipped: as many ids per text as the reference's, none
    of them right."""

    def __init__(self, fast):
        self.fast = fast

    def encode_batch_flat(self, texts, split_special_tokens=True):
        ids, offsets = self.fast.encode_batch_flat(texts, split_special_tokens=split_special_tokens)
        return (np.frombuffer(ids, dtype=np.uint32) ^ 1).tobytes(), offsets


def test_the_proof_compares_the_ids_not_only_how_many(tmp_path):
    llama3 = load_tokenizer("llama3")
    verdict = _proof_with(llama3, _SameCountOtherIds(encoders.fast_tokenizer(llama3)), tmp_path)
    assert verdict["exact"] is False and "sample text 0" in verdict["difference"]


def _note_here(tmp_path, monkeypatch, name="llama3") -> dict:
    """The early-read note a command line leaves for `name`, kept in `tmp_path`."""
    monkeypatch.setattr(early_vocabulary, "NOTE_DIR", tmp_path / "notes")
    encoders.leave_early_note(name, load_tokenizer(name))
    return json.loads(early_vocabulary.note_path(name).read_text(encoding="utf-8"))


def _big_input(tmp_path, megabytes: int = 64):
    path = tmp_path / "big.jsonl"
    with open(path, "wb") as out:
        out.truncate(megabytes * 1_000_000)  # only its size is read before the run starts
    return path


def test_the_early_read_is_keyed_by_the_files_digest_and_skipped_when_stale(tmp_path, monkeypatch):
    llama3 = load_tokenizer("llama3")
    note = _note_here(tmp_path, monkeypatch)
    assert note["fingerprint"] == llama3.fingerprint and note["sources"] == [str(llama3.bpe_file)]
    flags = ["--input", str(_big_input(tmp_path)), "--tokenizer", "llama3", "--workers", "2"]
    early_vocabulary.start(flags)
    assert early_vocabulary.started(llama3.fingerprint)
    read = early_vocabulary.take(llama3.fingerprint)
    ids, offsets = encoders.encode_flat(read, ["naïve 👍🏽 e\u0301", "<|end_of_text|> x"])
    assert ids[offsets[1]:].tolist() == llama3.encode("<|end_of_text|> x")  # the real vocabulary, specials as text
    stale = dict(note, digest="0" * 16)  # the tokenizer's file changed since the note was left
    early_vocabulary.note_path("llama3").write_text(json.dumps(stale), encoding="utf-8")
    early_vocabulary.start(flags)
    assert early_vocabulary.take(llama3.fingerprint) is None  # not read: the run reads the vocabulary itself
    encoders.leave_early_note("llama3", llama3)  # which leaves the note anew
    assert json.loads(early_vocabulary.note_path("llama3").read_text(encoding="utf-8")) == note


@pytest.mark.parametrize("other", [["--encoder", "reference"], ["--parse-special-tokens"], ["--partitions", "2"],
                                   ["--engine", "ray"], ["--tokenizer", "cl100k"], ["--small"]])
def test_the_early_read_starts_only_where_the_run_will_use_it(tmp_path, monkeypatch, other):
    llama3 = load_tokenizer("llama3")
    _note_here(tmp_path, monkeypatch)
    source = _jsonl(tmp_path) if other == ["--small"] else _big_input(tmp_path)  # auto takes tiktoken for 9 kB
    flags = ["--input", str(source), "--tokenizer", "llama3", "--workers", "2"] + [f for f in other if f != "--small"]
    early_vocabulary.start(flags)
    assert not early_vocabulary.started(llama3.fingerprint)
    early_vocabulary.start(flags[:6] + ["--encoder", "fast"] if other == ["--small"] else [])
    assert early_vocabulary.started(llama3.fingerprint) == (other == ["--small"])  # fast insists, whatever the size
    early_vocabulary.take(llama3.fingerprint)


def test_the_early_read_without_fastokens_leaves_the_run_to_choose(tmp_path, monkeypatch):
    llama3 = load_tokenizer("llama3")
    _note_here(tmp_path, monkeypatch)

    def no_fastokens(recipe):
        raise ImportError("No module named 'fastokens'")

    monkeypatch.setattr(early_vocabulary, "read_vocabulary", no_fastokens)
    early_vocabulary.start(["--input", str(_big_input(tmp_path)), "--tokenizer", "llama3"])
    assert early_vocabulary.take(llama3.fingerprint) is None
    monkeypatch.setattr(encoders, "fast_version", lambda: None)
    assert "fastokens is not installed" in choose_encoder(llama3, "auto").reason


def test_a_command_line_run_leaves_the_note_and_the_next_one_reads_from_it(tmp_path):
    import subprocess
    import sys

    llama3 = load_tokenizer("llama3")
    note = early_vocabulary.note_path("llama3")
    note.unlink(missing_ok=True)

    def run(prefix):
        done = subprocess.run([sys.executable, "-m", "helpers.preprocess", "--input", str(_jsonl(tmp_path)),
                               "--output-prefix", str(tmp_path / prefix), "--tokenizer", "llama3", "--append-eod",
                               "--no-progress", "--encoder", "fast"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "encoder         fastokens " in done.stdout
        return _bytes(tmp_path / f"{prefix}_text_document")

    first = run("first")
    assert json.loads(note.read_text(encoding="utf-8"))["fingerprint"] == llama3.fingerprint
    assert run("second") == first  # read from its first instant: the same bytes
