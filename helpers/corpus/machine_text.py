"""Real text that this project did not write, gathered from the machine, by kind.

The audit's third-party tests and `benchmarks/audit_margins.py` run on it: text we write ourselves only
holds the cases we thought of. This module reads what the system and the installed Python packages
already hold -- licences, man pages,
translation catalogues in many scripts, C headers, JSON, base64 and hex dumps of
real binaries, system logs, standard library source -- as documents grouped by
kind. Paths are sorted and nothing is random, so the result is the same on every
call. A kind that finds nothing raises RuntimeError: missing data is never
replaced by a silent fallback.
"""

import base64
import functools
import gettext
import gzip
import lzma
import os
import sysconfig
from glob import glob
from pathlib import Path

KINDS = ("licences", "man-pages", "translations", "c-headers", "json",
         "base64", "hex-dumps", "logs", "code")

SITE_PACKAGES = sysconfig.get_paths()["purelib"]
STDLIB = sysconfig.get_paths()["stdlib"]
# Languages whose scripts differ most from Latin: put first so a small limit still covers them.
FIRST_LANGUAGES = ("zh_CN", "zh_TW", "ja", "ko", "ru", "uk", "bg", "ar", "he", "el", "hi", "th",
                   "fa", "ka", "hy", "ta", "vi", "tr", "pl", "de", "fr", "es", "pt_BR", "cs")
SLICE_BYTES = 2048  # how much of each binary file is dumped (base64, hex-dumps)

PLACES = {
    "licences": ["/usr/share/common-licenses/*", f"{SITE_PACKAGES}/*.dist-info/licenses/**",
                 f"{SITE_PACKAGES}/*.dist-info/LICENSE*", f"{SITE_PACKAGES}/*.dist-info/COPYING*"],
    "man-pages": [f"/usr/share/man/man{section}/*.gz" for section in (1, 5, 8)],
    "translations": ["/usr/share/locale/*/LC_MESSAGES/*.mo",
                     "/usr/share/vim/vim90/lang/*/LC_MESSAGES/*.mo",
                     f"{SITE_PACKAGES}/*/locale*/*/LC_MESSAGES/*.mo"],
    "c-headers": ["/usr/include/**/*.h"],
    "json": [f"{SITE_PACKAGES}/**/*.json"],
    "base64": [f"{SITE_PACKAGES}/**/*.so"],
    "hex-dumps": ["/usr/bin/*"],
    "logs": ["/var/log/*.log", "/var/log/*.log.gz", "/var/log/apt/*.log", "/var/log/apt/*.log.xz"],
    "code": [f"{STDLIB}/*.py"],
}


@functools.lru_cache(maxsize=None)
def _files(kind: str) -> tuple[str, ...]:
    """Readable regular files (no symlinks, so no duplicates) matching the kind's places, sorted (searched once
    per process: site-packages is walked whole for some kinds)."""
    found = set()
    for pattern in PLACES[kind]:
        found.update(path for path in glob(pattern, recursive=True) if os.path.isfile(path)
                     and not os.path.islink(path) and os.access(path, os.R_OK))
    return tuple(sorted(found))


def _decode(data: bytes) -> str:
    """UTF-8 text; bytes that are not UTF-8 become U+FFFD."""
    return data.decode("utf-8", errors="replace")


def _read_text(path: str) -> str:
    """A file's text; .gz and .xz files are decompressed first."""
    opener = gzip.open if path.endswith(".gz") else lzma.open if path.endswith(".xz") else open
    with opener(path, "rb") as stream:
        return _decode(stream.read())


def _middle_slice(path: str) -> tuple[int, bytes]:
    """SLICE_BYTES of a binary file from its middle (offset aligned to 16), with the offset."""
    offset = (os.path.getsize(path) // 2) & ~15
    with open(path, "rb") as stream:
        stream.seek(offset)
        return offset, stream.read(SLICE_BYTES)


def hex_dump(data: bytes, offset: int = 0) -> str:
    """`hexdump -C`-style lines: offset, 16 hex bytes in two groups, ASCII column."""
    lines = []
    for start in range(0, len(data), 16):
        row = data[start:start + 16]
        hex_bytes = [f"{byte:02x}" for byte in row] + ["  "] * (16 - len(row))
        ascii_column = "".join(chr(byte) if 32 <= byte < 127 else "." for byte in row)
        hex_column = " ".join(hex_bytes[:8]) + "  " + " ".join(hex_bytes[8:])
        lines.append(f"{offset + start:08x}  {hex_column}  |{ascii_column}|")
    return "\n".join(lines) + "\n"


def _catalogue_language(path: str) -> str:
    """The language directory of .../<language>/LC_MESSAGES/<domain>.mo."""
    return Path(path).parent.parent.name


def _catalogue_text(path: str) -> str:
    """A .mo catalogue's msgstr strings joined with newlines ('' if it cannot be parsed)."""
    try:
        with open(path, "rb") as stream:
            catalogue = gettext.GNUTranslations(stream)._catalog
    except (OSError, ValueError, UnicodeDecodeError, LookupError):
        return ""
    # The entry with an empty msgid is the catalogue's metadata header, not a translation.
    return "\n".join(value for key, value in catalogue.items() if key != "" and value)


def _translations_round_robin():
    """Yield (path, text) of catalogues, one language at a time in turn (FIRST_LANGUAGES
    first, then the rest sorted); each turn takes that language's next non-empty catalogue."""
    by_language: dict[str, list[str]] = {}
    for path in _files("translations"):
        by_language.setdefault(_catalogue_language(path), []).append(path)
    languages = [lang for lang in FIRST_LANGUAGES if lang in by_language]
    languages += sorted(set(by_language) - set(FIRST_LANGUAGES))
    turns = [((path, _catalogue_text(path)) for path in by_language[lang]) for lang in languages]
    while turns:
        for turn in list(turns):
            document = next((pair for pair in turn if pair[1].strip()), None)
            if document is None:
                turns.remove(turn)
            else:
                yield document


def _documents(kind: str):
    """Yield (path, text) for every document of a kind, lazily, in a fixed order."""
    if kind == "translations":
        yield from _translations_round_robin()
        return
    for path in _files(kind):
        if kind == "json" and os.path.getsize(path) > 200_000:
            continue
        if kind == "base64":
            yield path, base64.encodebytes(_middle_slice(path)[1]).decode("ascii")
        elif kind == "hex-dumps":
            with open(path, "rb") as stream:
                if stream.read(4) != b"\x7fELF":
                    continue
            offset, data = _middle_slice(path)
            yield path, hex_dump(data, offset)
        else:
            yield path, _read_text(path)


@functools.lru_cache(maxsize=None)
def _collect(kind: str, limit_bytes: int) -> tuple[tuple[str, str], ...]:
    """(path, text) pairs of one kind up to about limit_bytes; the last one is cut at a line end."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {KINDS}")
    taken, total = [], 0
    for path, text in _documents(kind):
        if not text.strip():
            continue
        room = limit_bytes - total
        if len(text.encode("utf-8")) > room:
            text = text.encode("utf-8")[:room].decode("utf-8", errors="ignore")
            text = text[:text.rfind("\n") + 1] or text
            if not text.strip():
                break
        taken.append((path, text))
        total += len(text.encode("utf-8"))
        if total >= limit_bytes * 0.99:
            break
    if not taken:
        raise RuntimeError(f"no real text of kind {kind!r} on this machine; "
                           f"looked at {PLACES[kind]}")
    return tuple(taken)


def texts(kind: str, limit_bytes: int = 400_000) -> list[str]:
    """Documents of one kind, in a fixed order (sorted paths), up to about limit_bytes of text
    in all (UTF-8 bytes; the last document is cut at a line end). Translations come one
    language at a time in turn, so that a small limit still spans many scripts."""
    return [text for _, text in _collect(kind, limit_bytes)]


def sources(kind: str, limit_bytes: int = 400_000) -> list[str]:
    """The file each document of texts(kind, limit_bytes) came from, in the same order."""
    return [path for path, _ in _collect(kind, limit_bytes)]


def translation_languages(limit_bytes: int = 400_000) -> list[str]:
    """Languages (locale directory names) of the documents in texts("translations", limit_bytes)."""
    return sorted({_catalogue_language(path) for path in sources("translations", limit_bytes)})


def mixed(limit_bytes_each: int = 100_000) -> list[str]:
    """Every kind's documents, interleaved (round robin), for a corpus like a real crawl's."""
    per_kind = [texts(kind, limit_bytes_each) for kind in KINDS]
    return [docs[i] for i in range(max(map(len, per_kind))) for docs in per_kind if i < len(docs)]


if __name__ == "__main__":
    for kind in KINDS:
        docs = texts(kind)
        print(f"{kind:13s} {len(docs):4d} docs {sum(map(len, docs)):8d} chars  {docs[0][:80]!r}")
    print("languages:", " ".join(translation_languages()))
