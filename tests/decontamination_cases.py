"""What the decontamination tests share: the brute-force oracle of GPT-3's n-gram rule, written out again here
apart from the package, and real code documents with HumanEval items planted in every way a leak happens."""

from __future__ import annotations

import json
import re
import string


def oracle_words(text: str) -> list[tuple[str, int, int]]:
    """GPT-3's words with their spans, written independently of the package: ASCII letters lowercased, ASCII
    punctuation deleted, whitespace-separated pieces left empty dropped."""
    found = []
    for piece in re.finditer(r"\S+", text):
        word = "".join(c.lower() if "A" <= c <= "Z" else c for c in piece.group() if c not in string.punctuation)
        if word:
            found.append((word, piece.start(), piece.end()))
    return found


def oracle(documents: list[str], items: list[str], n: int) -> list[dict]:
    """Per document, {(start, end): the items that hold it} for every window that equals an n-gram of an item (an
    item of fewer than n words: all of it), from word tuples: every window of every document against every window of
    every item."""
    grams: dict[tuple, set[int]] = {}
    for number, item in enumerate(items):
        words = [word for word, _, _ in oracle_words(item)]
        length = min(n, len(words))
        for i in range(len(words) - length + 1 if length else 0):
            grams.setdefault(tuple(words[i:i + length]), set()).add(number)
    lengths = {len(gram) for gram in grams}
    found = []
    for document in documents:
        words = oracle_words(document)
        plain = [word for word, _, _ in words]
        hits = {}
        for length in lengths:
            for i in range(len(plain) - length + 1):
                holding = grams.get(tuple(plain[i:i + length]))
                if holding is not None:
                    hits[words[i][1], words[i + length - 1][2]] = holding
        found.append(hits)
    return found


def planted(humaneval, corpus_dir) -> tuple[list[str], dict[str, int]]:
    """Real code documents with HumanEval items planted in every way the issue lists; each case's document number."""
    code = [json.loads(line)["text"] for line in open(corpus_dir / "code.jsonl", encoding="utf-8")][:12]
    texts = humaneval.texts
    item = lambda k: texts[k]  # noqa: E731
    words = item(7).split()
    cases = {
        "verbatim in the middle": code[0][:3000] + "\n" + item(1) + "\n" + code[0][3000:6000],
        "case changed": code[1][:2000] + item(2).upper(),
        "whitespace changed": code[2][:2000] + "\t".join(item(3).split()) + "  \n\n " + code[2][2000:4000],
        "across line breaks": code[3][:1000] + "\n".join(" ".join(words[i:i + 4]) for i in range(0, len(words), 4)),
        "at the start": item(4) + code[4][:2000],
        "at the end": code[5][:2000] + " " + item(5),
        "first half of a split item": code[6][:1500] + " " + " ".join(words[:24]),
        "second half of a split item": " ".join(words[24:]) + " " + code[7][:1500],
        "12 of 13 words": code[8][:1000] + " " + " ".join(words[20:32]) + " zzz " + " ".join(words[40:52]),
        "a 13-gram broken by one word": code[9][:1000] + " " + " ".join(words[20:26] + ["qqq"] + words[26:33]),
        "a word changed in every 12": code[10][:500] + " " + " ".join(
            "xyzzy" if i % 12 == 0 else word for i, word in enumerate(words)),
        "clean": code[11][:4000],
    }
    return list(cases.values()), {name: number for number, name in enumerate(cases)}
