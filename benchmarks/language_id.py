"""Offline language identifiers side by side: accuracy on the labelled multilingual sample and speed, in one run.

    python benchmarks/language_id.py [--per-language 200]
    pip install -e '.[language,language-peer]'     # fastText's lid.176 (the package's), py3langid, CLD2, lingua

The sample is built from the machine's message catalogues (`helpers.corpus.multilingual`): documents of 200 to 600
characters and short texts of 20 to 80, labelled with their catalogue's language. Each candidate is one whose model
ships inside its PyPI package (nothing is downloaded): fastText's compressed lid.176 (`helpers.clean.steps.language`),
py3langid, CLD2 (pycld2) and lingua (its low-accuracy mode; the high-accuracy one loads 1.3 GB). A candidate not
installed gets a row saying so. Accuracy is the share of texts whose most likely language is the label (aliases
folded: `no` and `nb`, `iw` and `he`); "common" counts only the languages every candidate that ran can name. Speed
is documents per second in this process, one core, the model already loaded; loading is timed on its own.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helpers.corpus.multilingual import build_sample  # noqa: E402

ALIASES = {"no": "nb", "iw": "he", "jw": "jv", "fil": "tl", "zh-hant": "zh", "zh-hans": "zh", "in": "id", "ji": "yi"}


def fastText():
    from helpers.clean.steps.language import LID_176, LanguageId

    step = LanguageId()
    step.scores("load")

    def guess(text: str) -> str:
        scores = step.scores(text)
        return max(scores, key=scores.get)
    return guess, set(LID_176)


def py3langid():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    return (lambda text: identifier.classify(text)[0]), set(identifier.labels)


def cld2():
    import pycld2

    def guess(text: str) -> str:
        try:
            return pycld2.detect(text, bestEffort=True)[2][0][1]
        except pycld2.error:
            return "un"
    return guess, None  # CLD2 names its languages only as it finds them


def lingua():
    from lingua import Language, LanguageDetectorBuilder

    detector = (LanguageDetectorBuilder.from_all_languages().with_low_accuracy_mode()
                .with_preloaded_language_models().build())

    def guess(text: str) -> str:
        found = detector.detect_language_of(text)
        return found.iso_code_639_1.name.lower() if found is not None else "und"
    return guess, {language.iso_code_639_1.name.lower() for language in Language.all()}


CANDIDATES = {"fastText lid.176.ftz": fastText, "py3langid": py3langid, "CLD2 (pycld2)": cld2,
              "lingua (low accuracy)": lingua}


def folded(code: str) -> str:
    return ALIASES.get(code.lower(), code.lower())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-language", type=int, default=200)
    args = parser.parse_args()
    records = build_sample(per_language=args.per_language)
    languages = sorted({record["label"] for record in records})
    print(f"sample: {sum(r['kind'] == 'document' for r in records):,} documents and "
          f"{sum(r['kind'] == 'short' for r in records):,} short texts in {len(languages)} languages")
    results, known = {}, set(languages)
    for name, make in CANDIDATES.items():
        started = time.perf_counter()
        try:
            guess, names = make()
        except ImportError as missing:
            print(f"{name}: not installed ({missing.name}); pip install -e '.[language,language-peer]'")
            continue
        loaded = time.perf_counter() - started
        row = {"load s": loaded}
        for kind in ("document", "short"):
            chosen = [record for record in records if record["kind"] == kind]
            started = time.perf_counter()
            guesses = [folded(guess(record["text"])) for record in chosen]
            row[f"{kind}s/s"] = len(chosen) / (time.perf_counter() - started)
            row[kind] = [(record["label"], found) for record, found in zip(chosen, guesses)]
        if names is not None:
            known &= {folded(code) for code in names}
        results[name] = row
    print(f"\n{'candidate':<24}{'documents':>11}{'common':>9}{'short':>8}{'common':>9}{'documents/s':>13}"
          f"{'short/s':>10}{'load s':>8}")
    for name, row in results.items():
        cells = []
        for kind in ("document", "short"):
            pairs = row[kind]
            common = [(label, found) for label, found in pairs if label in known]
            cells += [sum(label == found for label, found in pairs) / len(pairs),
                      sum(label == found for label, found in common) / max(len(common), 1)]
        print(f"{name:<24}{cells[0]:>11.3f}{cells[1]:>9.3f}{cells[2]:>8.3f}{cells[3]:>9.3f}"
              f"{row['documents/s']:>13,.0f}{row['shorts/s']:>10,.0f}{row['load s']:>8.2f}")
    print(f"\ncommon: the {len(known)} languages of the sample every candidate that ran can name")


if __name__ == "__main__":
    main()
