"""A corpus of real text the project did not write, from this machine's own files, for benchmarks that must not
be fast only on the workshop corpus: JSONL, one file per kind, records of `{"id", "text"}`.

    python benchmarks/outside_corpus.py OUT_DIR [--mb-each 3]

The kinds, each a different shape of text for a filter's inner loops:

- `texinfo`: the nodes of the GNU manuals in /usr/share/info (prose with menus and indented examples);
- `docstrings`: the docstrings of the Python standard library's modules, classes and functions (short prose);
- `python`: standard-library sources, whole (code: many short lines, symbols, indentation);
- `readmes`: README files of installed Python packages, Node packages and Debian packages (Markdown, reST);
- `licences`: the licence files of installed Python packages (legal prose, repeated clauses);
- `html`: HTML pages of installed documentation with their tags stripped (navigation, tables, code);
- `translations`: gettext catalogues, one document each, one language after another in turn (short lines in
  many scripts: CJK without spaces, Arabic, Cyrillic, Devanagari, Thai; `helpers.corpus.machine_text`).

Man pages, copyright files, changelogs and package descriptions are left out. Paths are sorted and nothing is
random, so one machine gives the same corpus every time; another machine's installed files give another
(the summary line says how many documents and MB of each kind). A kind this machine has none of is an error.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import os
import sys
import sysconfig
from glob import glob
from html.parser import HTMLParser
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.corpus.machine_text import texts as machine_texts  # noqa: E402

SITE_PACKAGES = sysconfig.get_paths()["purelib"]
STDLIB = sysconfig.get_paths()["stdlib"]
PLACES = {
    "texinfo": ["/usr/share/info/*.info*"],
    "docstrings": [f"{STDLIB}/*.py", f"{STDLIB}/*/*.py"],
    "python": [f"{STDLIB}/*.py", f"{STDLIB}/*/*.py"],
    "readmes": [f"{SITE_PACKAGES}/**/README*", "/usr/lib/node_modules/**/README*", "/usr/share/doc/*/README*"],
    "licences": [f"{SITE_PACKAGES}/*.dist-info/licenses/**", f"{SITE_PACKAGES}/*.dist-info/LICENSE*",
                 f"{SITE_PACKAGES}/*.dist-info/COPYING*"],
    "html": ["/usr/share/doc/**/*.html", "/usr/lib/node_modules/**/*.html", f"{SITE_PACKAGES}/**/*.html"],
}
KINDS = (*PLACES, "translations")
FULL = 0.95  # a kind this full of its MB is done
MIN_CHARACTERS = 200  # shorter documents are left out: they measure a tool's per-document overhead only


def files(kind: str) -> list[str]:
    """The readable regular files of a kind's places, sorted (symbolic links left out: no document twice)."""
    found = set()
    for pattern in PLACES[kind]:
        found.update(path for path in glob(pattern, recursive=True)
                     if os.path.isfile(path) and not os.path.islink(path) and os.access(path, os.R_OK))
    return sorted(found)


def read_text(path: str) -> str:
    """A file's text (gzip files decompressed); bytes that are not UTF-8 become U+FFFD."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as stream:
        return stream.read().decode("utf-8", errors="replace")


class TextOnly(HTMLParser):
    """An HTML page's text: what is between its tags, scripts and styles left out, block tags as line breaks."""

    BLOCKS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "table", "dt", "dd", "section"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.pieces: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag, attrs):
        self.hidden += tag in ("script", "style")
        if tag in self.BLOCKS:
            self.pieces.append("\n")

    def handle_endtag(self, tag):
        self.hidden -= tag in ("script", "style") and self.hidden > 0
        if tag in self.BLOCKS:
            self.pieces.append("\n")

    def handle_data(self, data):
        if not self.hidden:
            self.pieces.append(data)


def stripped_html(text: str) -> str:
    parser = TextOnly()
    parser.feed(text)
    lines = [line.strip() for line in "".join(parser.pieces).splitlines()]
    return "\n".join(line for line in lines if line)


def docstrings(text: str) -> list[str]:
    """The docstrings of a Python source's module, classes and functions (none where it does not parse)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    nodes = [tree] + [node for node in ast.walk(tree)
                      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    return [doc for doc in map(ast.get_docstring, nodes) if doc]


def documents(kind: str, path: str) -> list[str]:
    """The documents one file of a kind gives."""
    text = read_text(path)
    if kind == "texinfo":
        return [node.strip() for node in text.split("\x1f")]
    if kind == "docstrings":
        return ["\n\n".join(docstrings(text))]
    if kind == "html":
        return [stripped_html(text)]
    return [text]


def every_document(kind: str, megabytes: float):
    """A kind's documents, in a fixed order."""
    if kind == "translations":
        yield from machine_texts("translations", int(megabytes * 1e6))
        return
    for path in files(kind):
        yield from documents(kind, path)


def build(out: Path, megabytes_each: float) -> dict[str, tuple[int, int]]:
    """Each kind's JSONL in `out`, up to `megabytes_each` MB of text each: {kind: (documents, bytes)}."""
    out.mkdir(parents=True, exist_ok=True)
    sizes = {}
    for kind in KINDS:
        count = size = 0
        with open(out / f"{kind}.jsonl", "w", encoding="utf-8") as handle:
            for text in every_document(kind, megabytes_each):
                if size >= FULL * megabytes_each * 1e6:
                    break
                encoded = len(text.encode("utf-8"))
                if size + encoded > megabytes_each * 1e6:
                    continue  # too big for what is left: a smaller one may fit
                if len(text) >= MIN_CHARACTERS:
                    handle.write(json.dumps({"id": f"{kind}-{count}", "text": text}, ensure_ascii=False) + "\n")
                    count, size = count + 1, size + encoded
        if not count:
            raise SystemExit(f"{kind}: no such text on this machine ({', '.join(PLACES.get(kind, ['catalogues']))}); "
                             "fix: install some, or build on a machine that has it")
        sizes[kind] = (count, size)
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the folder to write one JSONL per kind into")
    parser.add_argument("--mb-each", type=float, default=3.0, help="MB of text of each kind at most")
    args = parser.parse_args()
    sizes = build(args.out, args.mb_each)
    print(", ".join(f"{kind} {count:,} ({size / 1e6:.1f} MB)" for kind, (count, size) in sizes.items()))


if __name__ == "__main__":
    sys.exit(main())
