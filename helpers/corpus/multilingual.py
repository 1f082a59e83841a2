"""A labelled multilingual sample, built offline from the machine's message catalogues, for language ID.

Programs translated with gettext install one catalogue per language (`/usr/share/locale/<lang>/LC_MESSAGES/*.mo`):
each holds the program's English messages and their translations, written by people. The translations, labelled by
their folder's language (`pt_BR` is `pt`, `zh_TW` is `zh`), and the English originals make a sample of real
sentences in some 80 languages. Each record (`text`, `label`: its language, `source`, `kind`) is either a
`document`: messages of one catalogue joined by newlines into 200 to 600 characters, or a `short` text: one message
of 20 to 80 characters. Printf and format placeholders, markup and keyboard accelerators are taken out; a message left
untranslated, or with few letters, is not used. Catalogues that are lists of names (`iso_*`, keyboard layouts) are
not used either. The texts are software's (menus, errors, help), not prose: terse, with English identifiers.

    python -m helpers.corpus.multilingual --out data/raw/multilingual.jsonl [--per-language 200]

`multilingual_sample()` reads `data/raw/multilingual.jsonl`, built first when missing (about 15 s).
"""

from __future__ import annotations

import json
import re
import struct
import unicodedata
from pathlib import Path

from ..common.cli import CommandParser
from ..common.errors import UserError, run_cli
from ..common.files import written_atomically
from ..common.paths import RAW_DIR

LOCALE_DIR = Path("/usr/share/locale")
SAMPLE = RAW_DIR / "multilingual.jsonl"
NAME_LISTS = ("iso_", "iso-", "xkeyboard-config")  # catalogues of names, not sentences
LANGUAGE_OF_FOLDER = {"fil": "tl", "no": "nb"}  # folders named otherwise than the language's two letters
UNUSED_FOLDERS = {"az_IR", "pa_PK", "mo", "zh_Hans", "zh_Hant"}  # other scripts than the language's usual one
DOCUMENT_CHARACTERS = (200, 600)
SHORT_CHARACTERS = (20, 80)

PLACEHOLDER = re.compile(r"""
      %\d+\$[-+ #0']*\d*(?:\.\d+)?[hlLqjzt]*[diouxXeEfgGcsSpn]
    | %\([A-Za-z0-9_]+\)[-+ #0]*\d*(?:\.\d+)?[diouxXeEfgGcsr]
    | %[-+ #0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|ll|[hlLqjzt])?[diouxXeEfgGcsSpn]
    | %[{<][A-Za-z0-9_]+[}>] | \$\{[A-Za-z0-9_]+\} | \{[A-Za-z0-9_]*\}
    | </?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?> | &(?:[a-z]+|\#\d+);
    | %[-_0^#]?[A-Za-z](?![A-Za-z])
""", re.VERBOSE)  # printf, Python, shell and strftime fields, markup and entities
ACCELERATOR = re.compile(r"\s*\(\s*[_&]\w\s*\)|(?<![\w&])[_&](?=\w)")  # "(_O)", "_Open", "&File"
PLACEHOLDER_FREE = frozenset("%{$<&")  # a message without any of these has no placeholder, markup or entity


def messages(path: Path) -> list[tuple[str, str]]:
    """(original, translation) of each message of a GNU `.mo` catalogue, in its order; a plural message as its
    first form, a message's context left out, the header (empty original) skipped."""
    data = path.read_bytes()
    order = {b"\xde\x12\x04\x95": "<", b"\x95\x04\x12\xde": ">"}.get(data[:4])
    if order is None or len(data) < 28:
        return []
    count, originals, translations = struct.unpack(order + "3I", data[8:20])

    def entry(table: int, index: int) -> bytes:
        length, offset = struct.unpack(order + "2I", data[table + 8 * index:table + 8 * index + 8])
        return data[offset:offset + length]

    pairs = [(entry(originals, i), entry(translations, i)) for i in range(count)]
    header = next((translated for original, translated in pairs if original == b""), b"")
    charset = re.search(rb"charset=([A-Za-z0-9_.:-]+)", header)
    encoding = charset.group(1).decode("ascii") if charset else "utf-8"
    found = []
    for original, translated in pairs:
        if original == b"":
            continue
        try:
            text, translation = original.decode(encoding), translated.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            continue
        found.append((text.split("\x04", 1)[-1].split("\x00", 1)[0], translation.split("\x00", 1)[0]))
    return found


def plain(message: str) -> str:
    """A message without its placeholders, markup and accelerators, its spaces collapsed. (Each expression is
    searched only in a message holding a character it needs: most hold none, and the sample is a million messages.)"""
    text = message.replace("%%", "%")
    if not PLACEHOLDER_FREE.isdisjoint(text):
        text = PLACEHOLDER.sub(" ", text)
    if "_" in text or "&" in text:
        text = ACCELERATOR.sub("", text)
    return " ".join(text.replace("\\n", " ").replace("\\t", " ").split()).strip(" :;,-")


def wordy(text: str) -> bool:
    """Enough letters (or combining marks: Indic vowel signs are marks) to be language, not a path or a number."""
    letters = len(text) - len(text.translate(_letters_and_marks()))
    return letters >= 8 and letters >= 0.6 * len(text.replace(" ", ""))


_LETTERS_AND_MARKS: dict[int, None] = {}


def _letters_and_marks() -> dict[int, None]:
    """A `str.translate` table that deletes every letter and combining mark (Unicode categories L and M), made on
    first use: counting what it deletes counts them at C speed."""
    if not _LETTERS_AND_MARKS:
        _LETTERS_AND_MARKS.update((code, None) for code in range(0x110000)
                                  if unicodedata.category(chr(code))[0] in "LM")
    return _LETTERS_AND_MARKS


def language_of(folder: str) -> str | None:
    """The two-letter language of a locale folder; None for English variants, script variants (`sr@latin`) and
    folders without one."""
    if folder in UNUSED_FOLDERS or "@" in folder or "." in folder:
        return None
    if folder in LANGUAGE_OF_FOLDER:
        return LANGUAGE_OF_FOLDER[folder]
    code = folder.split("_", 1)[0]
    return code if len(code) == 2 and code.isalpha() and code.islower() and code != "en" else None


def catalogue_texts(locale_dir: Path) -> dict[str, list[tuple[str, list[str]]]]:
    """Per language, (catalogue, its usable messages) for each catalogue; English from the originals of the
    largest catalogue of each program."""
    translated: dict[str, list[tuple[str, list[str]]]] = {}
    largest: dict[str, Path] = {}
    for folder in sorted(path for path in locale_dir.iterdir() if path.is_dir()):
        for catalogue in sorted((folder / "LC_MESSAGES").glob("*.mo")):
            if catalogue.name.startswith(NAME_LISTS):
                continue
            if catalogue.name not in largest or catalogue.stat().st_size > largest[catalogue.name].stat().st_size:
                largest[catalogue.name] = catalogue
            language = language_of(folder.name)
            if language is not None:
                texts = _usable(translation for original, translation in messages(catalogue)
                                if translation.strip() != original.strip())
                if texts:
                    translated.setdefault(language, []).append((f"{folder.name}/{catalogue.stem}", texts))
    translated["en"] = [(f"en/{name[:-3]}", texts) for name in sorted(largest)
                        if (texts := _usable(original for original, _ in messages(largest[name])))]
    return translated


def _usable(texts) -> list[str]:
    seen: dict[str, None] = {}
    for text in map(plain, texts):
        if text and wordy(text):
            seen.setdefault(text)
    return list(seen)


def documents(catalogues: list[tuple[str, list[str]]]) -> list[tuple[str, str]]:
    """(catalogue, text) of documents: consecutive messages of one catalogue joined by newlines until each
    reaches its length, which steps through 200 to 600 characters."""
    low, high = DOCUMENT_CHARACTERS
    made: list[tuple[str, str]] = []
    for source, texts in catalogues:
        lines: list[str] = []
        size = 0
        for text in texts:
            if len(text) > high:
                continue
            if size + len(text) + 1 > high and size >= low:
                made.append((source, "\n".join(lines)))
                lines, size = [], 0
            lines.append(text)
            size += len(text) + 1
            if size >= low + (len(made) * 137) % (high - low):
                made.append((source, "\n".join(lines)))
                lines, size = [], 0
        if size >= low:
            made.append((source, "\n".join(lines)))
    return made


def spread(items: list, count: int) -> list:
    """`count` items evenly spaced through `items` (all, when fewer)."""
    return list(items) if len(items) <= count else [items[i * len(items) // count] for i in range(count)]


def build_sample(locale_dir: Path = LOCALE_DIR, per_language: int = 200, least: int = 30) -> list[dict]:
    """Up to `per_language` documents and as many short texts per language, for each language with at least
    `least` documents; the same records for the same catalogues, every time."""
    if not locale_dir.is_dir() or not any(locale_dir.glob("*/LC_MESSAGES/*.mo")):
        raise UserError(f"{locale_dir}: no message catalogues (*/LC_MESSAGES/*.mo) to build the multilingual "
                        "sample from; fix: install some translated programs (e.g. apt-get install coreutils git), "
                        "or pass --locale-dir")
    records = []
    for language, catalogues in sorted(catalogue_texts(locale_dir).items()):
        made = documents(catalogues)
        if len(made) < least:
            continue
        short = [(source, text) for source, texts in catalogues for text in texts
                 if SHORT_CHARACTERS[0] <= len(text) <= SHORT_CHARACTERS[1]]
        for kind, chosen in (("document", spread(made, per_language)), ("short", spread(short, per_language))):
            records.extend({"text": text, "label": language, "source": source, "kind": kind}
                           for source, text in chosen)
    return records


def write_sample(out: Path, locale_dir: Path = LOCALE_DIR, per_language: int = 200) -> list[dict]:
    """The sample written to `out` (JSONL, whole or not at all), and returned."""
    records = build_sample(locale_dir, per_language)
    with written_atomically(out, "w") as handle:
        handle.writelines(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    return records


def multilingual_sample(path: Path = SAMPLE) -> list[dict]:
    """The sample's records, from `path`, which is built (200 documents and short texts a language) when missing."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_sample(path)
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def main(argv: list[str] | None = None) -> int:
    parser = CommandParser(prog="python -m helpers.corpus.multilingual", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    parser.add_argument("--locale-dir", type=Path, default=LOCALE_DIR, help="where the message catalogues are")
    parser.add_argument("--per-language", type=int, default=200, help="documents (and short texts) per language")
    args = parser.parse_args(argv)
    records = write_sample(args.out, args.locale_dir, args.per_language)
    languages = sorted({record["label"] for record in records})
    print(f"wrote {args.out}: {len(records):,} records in {len(languages)} languages")
    return 0


if __name__ == "__main__":
    run_cli(main)
