"""Where lm-eval-harness's janitor and `helpers.clean --decontaminate --mode gpt3` disagree, counted on the same
documents: which documents each finds an n-gram in, and which pieces each keeps (docs/decontamination.md says why).

    pip install --no-deps lm-eval                      # the janitor needs nothing else (it says it runs in Python)
    python benchmarks/janitor.py

The documents are the workshop corpus (`data/raw`) and, planted on purpose, one copy of a code document per HumanEval
problem with the problem (prompt and solution) pasted at a random place; the items are HumanEval's 164. The
janitor's `clean` gives the pieces it keeps, or none for a document it calls too dirty; ours are
`helpers.decontamination.spans.pieces` with the ten-piece rule, a document without a match kept whole.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helpers.common.paths import RAW_DIR  # noqa: E402
from helpers.decontamination import TextIndex, load_evals  # noqa: E402
from helpers.decontamination.spans import MOST_PIECES, SHORTEST_PIECE, pieces  # noqa: E402
from helpers.decontamination.words import normalized  # noqa: E402

DOMAINS = ("literature", "docs", "code")


def documents(humaneval) -> list[str]:
    """The corpus's texts, then a code document per HumanEval problem with the problem pasted at a random place."""
    texts = [json.loads(line)["text"] for domain in DOMAINS
             for line in open(RAW_DIR / f"{domain}.jsonl", encoding="utf-8")]
    code = [json.loads(line)["text"] for line in open(RAW_DIR / "code.jsonl", encoding="utf-8")]
    rng = random.Random(0)
    planted = []
    for k, problem in enumerate(humaneval.texts):
        host = code[k % len(code)][:20000]
        at = host.rfind("\n", 0, rng.randrange(len(host) + 1)) + 1
        planted.append(host[:at] + problem + "\n" + host[at:])
    return texts + planted


def ours(index: TextIndex, text: str) -> tuple[bool, list[str] | None]:
    """Whether the text check finds a match, and the pieces `--mode gpt3` keeps (None: the document goes)."""
    matches = index.matches(text)
    if not matches:
        return False, [text]
    kept = pieces(text, [(match.start, match.end) for match in matches])
    return True, kept if 0 < len(kept) <= MOST_PIECES else None


def main() -> int:
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            from lm_eval.decontamination.janitor import Janitor, word_ngrams_indices  # it says its C++ part is missing
    except ImportError:
        print("lm-eval is not installed: pip install --no-deps lm-eval")
        return 0
    (humaneval,) = load_evals(["humaneval"])
    janitor = Janitor()
    with contextlib.redirect_stdout(io.StringIO()):
        for text in humaneval.texts:
            janitor.register_contaminant(text)
    index = TextIndex(list(humaneval.texts), 13)
    texts = documents(humaneval)
    counts = dict.fromkeys(COUNTED, 0)
    for text in texts:
        with contextlib.redirect_stdout(io.StringIO()):
            janitor_matched = any(janitor.normalize_string(gram) in janitor.dirt_ngrams
                                  for gram, _ in word_ngrams_indices(text, janitor.ngram_n))
            janitor_kept = janitor.clean(text)
        counts[_compared(index, text, janitor_matched, janitor_kept)] += 1
    print(f"{len(texts):,} documents ({len(humaneval.texts)} with a HumanEval problem planted), 164 items, 13-grams, "
          f"pieces of {SHORTEST_PIECE} characters")
    for name, count in counts.items():
        print(f"  {name:<88} {count:>6,}")
    return 0


COUNTED = ("no match, kept by both", "no match, under 200 characters: the janitor keeps nothing",
           "found by ours only: each matching window holds a punctuation-only piece", "found by ours only: other",
           "found by the janitor only", "found by both, dropped by both",
           "found by both, dropped by the janitor (more than ten n-grams), cut by ours",
           "found by both, dropped by ours, cut by the janitor",
           "found by both, cut by both: the janitor's pieces still hold an n-gram (windows it missed)",
           "found by both, cut by both: the same pieces",
           "found by both, cut by both: the janitor's pieces after a cut start a character earlier",
           "found by both, cut by both: cut elsewhere (the janitor missed windows at a match's edges)")


def _compared(index: TextIndex, text: str, janitor_matched: bool, janitor_kept: list[str]) -> str:
    """Which of `COUNTED` a document is."""
    found, kept = ours(index, text)
    if not found and not janitor_matched:
        return COUNTED[0] if janitor_kept else COUNTED[1]
    if not janitor_matched:
        windows = [text[match.start:match.end].split() for match in index.matches(text)]
        return COUNTED[2] if all(any(not normalized(piece) for piece in window) for window in windows) else COUNTED[3]
    if not found:
        return COUNTED[4]
    if not janitor_kept:
        return COUNTED[5] if kept is None else COUNTED[6]
    if kept is None:
        return COUNTED[7]
    if any(index.matches(piece, first=True) for piece in janitor_kept):
        return COUNTED[8]
    if kept == janitor_kept:
        return COUNTED[9]
    earlier = len(kept) == len(janitor_kept) and all(
        theirs == mine or (theirs[1:] == mine and text.find(mine) > 0) for mine, theirs in zip(kept, janitor_kept))
    return COUNTED[10] if earlier else COUNTED[11]


if __name__ == "__main__":
    raise SystemExit(main())
