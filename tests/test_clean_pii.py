"""`--pii` replaces e-mail and IP addresses as datatrove 0.10.1's `PIIFormatter` does (a golden file of its outputs
on hand-written cases and on every line of the corpus's docs and code with an @ or a dotted quad; datatrove itself
where installed), phone numbers by the documented rule, the same output for any number of parts, counts per input."""

from __future__ import annotations

import glob
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.clean import clean
from helpers.clean.steps.pii import PHONE_STAND_INS, PiiMask

GOLDEN = Path(__file__).parent / "golden" / "datatrove_pii.json"


def masked(text: str, **kinds) -> str:
    return PiiMask(**{"phones": False, **kinds}).format(text, {})


def corpus_lines(corpus_dir) -> list[tuple[str, str, int, str]]:
    """(domain, id, line number, line) of every line of docs and code with an @ or a dotted quad."""
    found = []
    for domain in ("docs", "code"):
        for record in map(json.loads, open(corpus_dir / f"{domain}.jsonl", encoding="utf-8")):
            for number, line in enumerate(record["text"].splitlines()):
                if "@" in line or re.search(r"\d\.\d+\.\d+\.\d", line):
                    found.append((domain, record["id"], number, line))
    return found


def test_emails_and_ips_are_replaced_as_datatrove_s_golden_outputs(corpus_dir):
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    for case, theirs in golden["cases"]:
        assert masked(case) == theirs, case
    lines = corpus_lines(corpus_dir)
    assert len(lines) == golden["corpus_lines"]
    changed = {(entry["domain"], entry["id"], entry["line"]): entry["datatrove sha256"] for entry in golden["changed"]}
    for domain, identifier, number, line in lines:
        ours = masked(line)
        if (domain, identifier, number) in changed:
            digest = hashlib.sha256(ours.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            assert digest == changed[domain, identifier, number], line
        else:
            assert ours == line
    assert len(changed) > 50


def test_emails_and_ips_are_replaced_as_datatrove_itself_replaces_them(corpus_dir):
    pytest.importorskip("datatrove", reason="datatrove is not installed (pip install -e '.[dedup-peer]'): "
                                            "the golden file stands in for it")
    from datatrove.pipeline.formatters import PIIFormatter

    texts = [line for *_, line in corpus_lines(corpus_dir)]
    texts += [Path(path).read_text(encoding="utf-8", errors="replace")
              for path in sorted(glob.glob("/usr/share/common-licenses/*"))]
    for text in texts:  # one formatter per text: its turn through the stand-ins starts with the text
        assert masked(text) == PIIFormatter().format(text)
        assert masked(text, public_ips_only=False) == PIIFormatter(only_remove_public_ips=False).format(text)


@pytest.mark.parametrize("text, phones", [
    ("call +44 20 7946 0958 now", 1), ("+1 (415) 555-2671.", 1), ("+33 1 23 45 67 89", 1), ("+49 30 1234567", 1),
    ("(212) 555-1234", 1), ("212-555-1234 or 212.555.1234", 2), ("1-800-292-9263", 1), ("+1-212-555-1234", 1),
    ("1234567890", 0), ("212-555-12345", 0), ("212.555-1234", 0), ("112-555-1234", 0), ("2024-555-1234", 0),
    ("ISBN 978-3-16-148410-0", 0), ("'{:+f}'.format(3.14) gives '+3.140000'", 0), ("x = a+1 234", 0),
    ("d>>9)+1980, (d>>5)", 0), ("+000000120", 0), ("v1.212.555.1234", 0), ("+1 800 FLOWERS", 0),
    ("+14155552671", 0), ("+32768000", 0), ("1:10~+20191229111838+b1", 0), ("+2024-01-15", 0), ("+12 345 678", 0),
    ("+40.712800", 0), ("+44 20 7946 0958x12", 0), ("+12 345 678 9.5", 0),
])
def test_phone_numbers_follow_the_documented_rule(text, phones):
    notes: dict = {}
    new = PiiMask(emails=False, ips=False).format(text, notes)
    assert notes.get("phones", 0) == phones
    assert (new != text) == bool(phones)
    if phones:
        assert PHONE_STAND_INS[0] in new


def test_stand_ins_start_again_with_each_document():
    mask = PiiMask()
    first = mask.format("a@b.io c@d.io", {})
    assert mask.format("e@f.io", {}) == "email@example.com"
    assert first == "email@example.com firstname.lastname@example.org"


def test_pii_gives_the_same_output_for_any_number_of_parts_and_counts_per_input(corpus_dir, tmp_path):
    inputs = [corpus_dir / "docs.jsonl", corpus_dir / "code.jsonl"]
    one = clean(inputs, tmp_path / "one", pii=True, progress=False)
    many = clean(inputs, tmp_path / "many", pii=True, parts=5, workers=2, progress=False)
    for name in ("docs.jsonl", "code.jsonl"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "many" / name).read_bytes()
    assert one["inputs"] == many["inputs"]
    counts = {item["file"]: item["steps"][-1]["counts"] for item in one["inputs"]}
    expected = {"emails": 0, "ips": 0, "phones": 0}
    for item in one["inputs"]:
        for line in open(corpus_dir / item["file"], encoding="utf-8"):
            PiiMask().format(json.loads(line)["text"], notes := {})
            for kind, count in notes.items():
                expected[kind] += count
    assert {kind: sum(found[kind] for found in counts.values()) for kind in expected} == expected
    assert counts["code.jsonl"]["emails"] > 0
    kept = [json.loads(line)["text"] for line in open(tmp_path / "one" / "code.jsonl", encoding="utf-8")]
    assert "email@example.com" in "".join(kept)


def test_the_command_line_masks_and_reports(corpus_dir, tmp_path):
    done = subprocess.run([sys.executable, "-m", "helpers.clean", "--input", str(corpus_dir / "code.jsonl"),
                           "--output-dir", str(tmp_path), "--pii", "--no-progress", "--workers", "1"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["settings"]["steps"] == ["pii"] and report["inputs"][0]["steps"][-1]["counts"]["emails"] > 0
    counts = report["inputs"][0]["steps"][-1]["counts"]
    records = report["inputs"][0]["steps"][0]["documents_out"]
    # what it replaced, not a removal count: the step removes no record
    assert done.stdout.splitlines()[0] == (f"code.jsonl: {records} records -> {records} kept (pii: {counts['emails']} "
                                           f"e-mails, {counts['ips']} IPs, {counts['phones']} phone numbers masked)")
    assert "pii -" not in done.stdout


@pytest.fixture
def real_documents(corpus_dir, tmp_path) -> Path:
    """The machine's licences, logs and JSON files and the corpus's code, as one JSONL file: e-mail and IP
    addresses, and phone numbers (one planted in a licence, and whatever the machine's licences hold)."""
    from helpers.corpus import machine_text

    texts = [text for kind in ("licences", "logs", "json") for text in machine_text.texts(kind, 400_000)]
    texts += [json.loads(line)["text"] for line in open(corpus_dir / "code.jsonl", encoding="utf-8")]
    texts.append(texts[0].replace("\n\n", "\n\nQuestions: call +1 (415) 555-2671 or write to the authors.\n\n", 1))
    path = tmp_path / "real.jsonl"
    path.write_text("".join(json.dumps({"id": str(i), "text": text}) + "\n" for i, text in enumerate(texts)))
    return path


def _masked_texts(source: Path, out: Path, *pii: str) -> tuple[list[str], dict]:
    done = subprocess.run([sys.executable, "-m", "helpers.clean", "--input", str(source), "--output-dir", str(out),
                           "--pii", *pii, "--no-progress", "--workers", "2"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    texts = [json.loads(line)["text"] for line in open(out / source.name, encoding="utf-8")]
    return texts, json.loads((out / "report.json").read_text())["inputs"][0]["steps"][-1]["counts"]


@pytest.mark.heavy
def test_pii_names_the_kinds_it_masks_and_email_ip_leaves_phones(real_documents, tmp_path):
    every, every_counts = _masked_texts(real_documents, tmp_path / "every")
    chosen, chosen_counts = _masked_texts(real_documents, tmp_path / "email-ip", "email,ip")
    originals = [json.loads(line)["text"] for line in open(real_documents, encoding="utf-8")]
    assert every_counts["phones"] >= 1 and set(chosen_counts) == {"emails", "ips"}
    assert chosen_counts == {kind: every_counts[kind] for kind in ("emails", "ips")}
    for original, all_kinds, two_kinds in zip(originals, every, chosen):
        phones: dict = {}
        PiiMask(emails=False, ips=False).format(two_kinds, phones)
        assert (all_kinds != two_kinds) == bool(phones)  # only where a phone number stood
        assert two_kinds == PiiMask(phones=False).format(original, {})


def test_pii_email_ip_gives_datatrove_s_pii_formatter_text(real_documents, tmp_path):
    pytest.importorskip("datatrove", reason="datatrove is not installed (pip install -e '.[dedup-peer]')")
    from datatrove.pipeline.formatters import PIIFormatter

    chosen, _ = _masked_texts(real_documents, tmp_path / "email-ip", "email,ip")
    originals = [json.loads(line)["text"] for line in open(real_documents, encoding="utf-8")]
    changed = 0
    for original, ours in zip(originals, chosen):  # one formatter per document: its stand-ins start again
        assert ours == PIIFormatter().format(original)
        changed += ours != original
    assert changed > 20


@pytest.mark.parametrize("arguments, message", [
    (["--pii", "email,fax"], "--pii email,fax: no kind 'fax'"),
    (["--pii", "email,email"], "name each kind once"),
    (["--pii", "--filter-option", "pii.phones=false"], "PII masking is not a filter; fix: name what it masks with "
                                                       "--pii"),
    (["--filters", "pii"], "PII masking is not a filter"),
])
def test_a_pii_choice_that_cannot_be_is_refused_in_one_line(refused_by_clean, arguments, message):
    refused_by_clean(arguments, message)
