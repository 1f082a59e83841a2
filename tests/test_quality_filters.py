"""The quality filters of `helpers.clean` decide as datatrove 0.10.1's: on a sample of the workshop corpus against a
golden file of datatrove's verdicts (kept, or the rule that dropped it; C4's kept text), and, where datatrove is
installed (the `dedup-peer` extra), against datatrove itself on the same sample and on text the project did not
write (the machine's licence texts); words and sentences split as datatrove splits English; `--filters` on the
command line: reasons in removed.jsonl, counts per rule, bad settings refused in one line."""

from __future__ import annotations

import glob
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.clean import clean
from helpers.clean.steps.filters import FILTERS
from helpers.clean.text.words import EnglishWords
from quality_boundaries import datatrove_decider

GOLDEN = Path(__file__).parent / "golden" / "datatrove_quality.json"
EVERY = 8  # the golden sample: every 8th record of each domain, from the first
DOMAINS = ("literature", "docs", "code")


def sample(corpus_dir) -> list[dict]:
    return [json.loads(line) for domain in DOMAINS
            for number, line in enumerate(open(corpus_dir / f"{domain}.jsonl", encoding="utf-8")) if not number % EVERY]


def verdicts(records: list[dict], decide) -> list[dict]:
    """Per record, each filter's verdict: None (kept) or the rule that dropped it; C4's kept text's digest.
    `decide(name, text)` gives (kept text or None, rule or None)."""
    found = []
    for record in records:
        entry = {"id": record["id"]}
        for name in FILTERS:
            text, rule = decide(name, record["text"])
            entry[name] = rule
            if name == "c4-quality" and rule is None:
                entry["c4-quality kept text sha256"] = hashlib.sha256(text.encode()).hexdigest()
        found.append(entry)
    return found


def ours(name: str, text: str):
    new, reason = FILTERS[name]().apply(text, {})
    return new, None if reason is None else reason.split(":")[0]


def datatrove_decide():
    pytest.importorskip("datatrove", reason="datatrove is not installed (pip install -e '.[dedup-peer]'): "
                                                        "the golden file stands in for it")
    return datatrove_decider()


def test_the_filters_decide_as_datatrove_s_golden_verdicts(corpus_dir):
    golden = json.loads(GOLDEN.read_text())
    records = sample(corpus_dir)
    assert [record["id"] for record in records] == [entry["id"] for entry in golden["verdicts"]]
    found = verdicts(records, ours)
    assert found == golden["verdicts"]
    for name in FILTERS:  # the sample exercises every filter both ways
        assert {entry[name] is None for entry in found} == {True, False}, name


def test_the_filters_decide_as_datatrove_itself_on_the_sample_and_on_licence_texts(corpus_dir):
    decide = datatrove_decide()
    licences = [{"id": path, "text": Path(path).read_text(encoding="utf-8", errors="replace")}
                for path in sorted(glob.glob("/usr/share/common-licenses/*"))[:12]]
    records = sample(corpus_dir)[::3] + licences
    assert verdicts(records, ours) == verdicts(records, decide)


def test_words_and_sentences_are_split_as_datatrove_splits_english(corpus_dir):
    pytest.importorskip("datatrove", reason="datatrove is not installed (pip install -e '.[dedup-peer]')")
    import datatrove.utils.text as text_facts
    from datatrove.utils.text import split_into_sentences, split_into_words

    from helpers.clean.text.punctuation import PUNCTUATION, SENTENCE_ENDS

    assert PUNCTUATION == text_facts.PUNCTUATION and SENTENCE_ENDS == text_facts.TERMINAL_PUNCTUATION
    words = EnglishWords()
    tricky = ["Don't stop—can't you? U.S.A. costs $5.00 (10km) at 3 p.m.", "e-mail: a@b.org, see http://x.io/a?b=1.",
              "Hello.\tWorld!  Again...  and “quoted” text.", "(╯°□°）╯︵┻━┻ :-) cannot gonna", ""]
    for text in tricky + [record["text"] for record in sample(corpus_dir)[::5]]:
        assert words.words(text) == split_into_words(text)
        for line in text.splitlines() or [text]:
            assert words.sentence_count(line.strip()) == len(split_into_sentences(line.strip()))


def test_each_run_is_cut_as_spacy_s_tokenizer_cuts_it(corpus_dir):
    """The Python affix algorithm against spaCy itself, on every distinct run of the sample and of the machine's
    licence texts (runs where spaCy's joining phase could apply are spaCy's own by construction)."""
    words = EnglishWords()
    texts = [record["text"] for record in sample(corpus_dir)]
    texts += [Path(path).read_text(encoding="utf-8", errors="replace")
              for path in sorted(glob.glob("/usr/share/common-licenses/*"))]
    runs = sorted({run for text in texts for run in text.split()})
    assert len(runs) > 5_000
    for run in runs:
        spacy_tokens = tuple(token.text for token in words.tokenizer(run))
        assert words._tokens(run) == spacy_tokens, run


PIECES = [":-)", "(:", ":", "-", ")", "(", "'", "s", "cause", "a.m", "10a.m", ".", "_", "^_^", "x", "3", "<", "=",
          "o", "O", "C++", ";", "*", "ಠ_ಠ", "''", "e.g", "Mr"]


@pytest.fixture(scope="module")
def new_splitter() -> EnglishWords:
    """A splitter made in this module: its special cases' joins worked out here, its remembered runs empty."""
    return EnglishWords()


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.sampled_from(PIECES), min_size=1, max_size=6))
def test_runs_of_special_cases_and_affixes_are_joined_as_spacy_joins_them(new_splitter, pieces):
    """spaCy's last phase (a special case's affix tokens joined back into it), written out in Python, on runs
    built to need it."""
    words = new_splitter
    run = "".join(pieces)
    assert words._tokens(run) == tuple(token.text for token in words.tokenizer(run)), run


def test_the_command_line_names_each_removal_s_rule_and_value_and_counts_them(corpus_dir, tmp_path):
    done = subprocess.run([sys.executable, "-m", "helpers.clean", "--input", str(corpus_dir / "docs.jsonl"),
                           "--output-dir", str(tmp_path), "--filters", "fineweb-quality,gopher-quality",
                           "--filter-option", "gopher-quality.min_doc_words=30", "--no-progress", "--workers", "1"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    removed = [json.loads(line) for line in open(tmp_path / "removed.jsonl", encoding="utf-8")]
    assert removed and {entry["step"] for entry in removed} == {"fineweb_quality", "gopher_quality"}
    first = next(entry for entry in removed if entry["step"] == "gopher_quality")
    assert first["reason"].startswith("gopher_") and (" < " in first["reason"] or " > " in first["reason"])
    report = json.loads((tmp_path / "report.json").read_text())
    rows = {row["step"]: row for row in report["inputs"][0]["steps"]}
    for step in ("fineweb_quality", "gopher_quality"):
        assert sum(rows[step]["rules"].values()) == rows[step]["removed"] > 0
    assert report["settings"]["filter_options"] == {"gopher-quality": {"min_doc_words": 30}}


@pytest.mark.parametrize("arguments, message", [
    (["--filters", "gopher"], "--filters gopher: no such filter; fix: choose among gopher-quality"),
    (["--filters", "c4-quality", "--filter-option", "c4-quality.min_sentences=3"],
     "--filter-option c4-quality.min_sentences: no such setting; fix: one of"),
    (["--filters", "c4-quality", "--filter-option", "c4-quality=3"], "not NAME.SETTING=VALUE"),
    (["--filters", "c4-quality", "--filter-option", "c4-quality.min_num_sentences=x"],
     "--filter-option c4-quality.min_num_sentences='x': needs a number (the default is 5)"),
    (["--filters", "c4-quality", "--filter-option", "gopher-quality.min_doc_words=3"],
     "that filter is not in --filters"),
])
def test_bad_filter_settings_are_refused_in_one_line(refused_by_clean, arguments, message):
    refused_by_clean(arguments, message)


def test_filters_give_the_same_output_for_any_number_of_parts(corpus_dir, tmp_path, parts=7):
    inputs = [corpus_dir / "docs.jsonl", corpus_dir / "code.jsonl"]
    one = clean(inputs, tmp_path / "one", filters="c4-quality,gopher-repetition", exact=True, progress=False)
    many = clean(inputs, tmp_path / "many", filters="c4-quality,gopher-repetition", exact=True, parts=parts,
                 workers=2, progress=False)
    for name in ("docs.jsonl", "code.jsonl", "removed.jsonl"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "many" / name).read_bytes()
    assert one["inputs"] == many["inputs"]


def test_a_new_process_splits_words_from_the_kept_rules_without_importing_spacy(corpus_dir, tmp_path, monkeypatch):
    """The rules are read from spaCy once per version and kept; they are spaCy's own (read again, the same)."""
    from helpers.clean.text import words

    monkeypatch.setattr(words, "CACHE_DIR", tmp_path)
    first = words.english_rules()
    assert list(tmp_path.glob("spacy-*-english-rules-*.json")) and words.english_rules() == first
    probe = ("import sys; from helpers.clean.text.words import EnglishWords; "
             "print(EnglishWords().words(\"Don't stop (at 3 p.m.) :-)\"), 'spacy' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "False"
