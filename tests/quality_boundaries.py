"""Documents built to sit exactly on one limit of one quality rule, and one either side of it, for the four quality
filters at their default settings (datatrove 0.10.1's): which rule each is built for and the verdict it must get.

Each case is (name, filter, verdict, text): the verdict is the rule that must drop the document, or None where it
must be kept. A case "at" a limit sits on it exactly (a ratio equal to the threshold, which the rules compare with
a strict `>` or `<`, so it is kept); "over" is one step past it. The texts are built from distinct made-up words
(`filler`), so that a rule other than the one tested cannot fire by accident; each builder checks the count or
ratio it was built for before handing the text over.

    python tests/quality_boundaries.py      # with datatrove (pip install -e '.[dedup-peer]'): rewrites the golden
                                            # file of datatrove's own verdicts on every case, for all four filters
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

GOLDEN = Path(__file__).parent / "golden" / "datatrove_quality_boundaries.json"
CONSONANTS, VOWELS = "bcdfghjklmnprstvwz", "aeiou"


def filler(count: int, length: int = 6, start: int = 0) -> list[str]:
    """`count` distinct lowercase words of `length` letters (consonant, vowel, ...), none a stop word."""
    pools = [CONSONANTS if k % 2 == 0 else VOWELS for k in range(length)]
    found = ["".join(letters) for letters in itertools.islice(itertools.product(*pools), start, start + count)]
    assert len(found) == count
    return found


def padded_word(length: int, start: int = 700_000) -> str:
    """One made-up word of exactly `length` letters (a tail of a's after a distinct head)."""
    head = filler(1, 6, start)[0]
    return (head + "a" * length)[:length] if length >= 6 else "zq"[:length].ljust(length, "q")


def exact(value: float, wanted: float, what: str) -> None:
    assert value == wanted, f"{what}: built {value}, wanted {wanted}"


# ---------------------------------------------------------------- Gopher's quality rules


def gopher_words(counted: int, stops=("the", "of")) -> list[str]:
    """`counted` words: the stop words, then made-up ones."""
    return list(stops) + filler(counted - len(stops))


def gopher_quality_cases() -> list[tuple]:
    cases = []
    for counted, verdict in ((50, None), (49, "gopher_short_doc")):
        cases.append((f"words {counted}, minimum 50", verdict, " ".join(gopher_words(counted))))
    long_words = ["the", "of"] + ["lorem"] * 99_998
    cases.append(("words 100,000, maximum 100,000", None, " ".join(long_words)))
    cases.append(("words 100,001, maximum 100,000", "gopher_long_doc", " ".join(long_words + ["lorem"])))
    # mean word length: 50 words, "the" (3) and "of" (2) and 48 more
    for last, verdict in ((4, None), (3, "gopher_below_avg_threshold")):
        words = ["the", "of"] + filler(47, 3) + [padded_word(last)]
        exact(sum(map(len, words)) / len(words), 3.0 if verdict is None else 2.98, "mean length")
        cases.append((f"mean word length {sum(map(len, words)) / 50}, minimum 3", verdict, " ".join(words)))
    for last, verdict in ((25, None), (26, "gopher_above_avg_threshold")):
        words = ["the", "of"] + filler(47, 10) + [padded_word(last)]
        exact(sum(map(len, words)) / len(words), 10.0 if verdict is None else 10.02, "mean length")
        cases.append((f"mean word length {sum(map(len, words)) / 50}, maximum 10", verdict, " ".join(words)))
    # hashes and ellipses per word (symbols count as words here): 54 words and 6 or 7 of them
    for mark, rule in (("#", "gopher_too_many_hashes"), ("...", "gopher_too_many_ellipsis")):
        for marks, verdict in ((5, None), (6, None), (7, rule)):
            words = gopher_words(54)
            signs = [mark] * marks if mark == "#" else ["…"] + ["..."] * (marks - 1)  # both kinds of ellipsis
            for k, sign in enumerate(signs):
                words.insert(3 + 8 * k, sign)
            cases.append((f"{marks} '{mark}' among {len(words)} words, maximum 0.1 per word", verdict, " ".join(words)))
    # lines: 10 lines of 6 words, some starting with a bullet, some ending with an ellipsis
    words = gopher_words(60)
    lines = [" ".join(words[k:k + 6]) for k in range(0, 60, 6)]
    for bullets, verdict in ((9, None), (10, "gopher_too_many_bullets")):
        marked = [("  • " if k == 1 else "-" if k == 4 else "- ") + line if k < bullets else line
                  for k, line in enumerate(lines)]
        cases.append((f"{bullets} of 10 lines bullets, maximum 0.9", verdict, "\n".join(marked)))
    for ending, verdict in ((3, None), (4, "gopher_too_many_end_ellipsis")):
        marked = [line + ("…" if k == 0 else " ...  " if k == 1 else "...") if k < ending else line
                  for k, line in enumerate(lines)]
        cases.append((f"{ending} of 10 lines end in an ellipsis, maximum 0.3", verdict, "\n".join(marked)))
    # words with a letter: 50 words, the rest numbers
    for numbers, verdict in ((10, None), (11, "gopher_below_alpha_threshold")):
        words = gopher_words(50 - numbers) + [str(1000 + k) for k in range(numbers)]
        cases.append((f"{50 - numbers} of 50 words with a letter, minimum 0.8", verdict, " ".join(words)))
    cases.append(("stop words 2 ('the', 'of'), minimum 2", None, " ".join(gopher_words(60))))
    cases.append(("stop words 1 ('the' twice), minimum 2", "gopher_enough_stop_words",
                  " ".join(gopher_words(60, stops=("the", "the")))))
    return cases


# ---------------------------------------------------------------- Gopher's repetition rules


def sized(words: list[str], length: int) -> str:
    """`words` joined by spaces, then one more made-up word that brings the text to exactly `length` characters."""
    text = " ".join(words) + " "
    tail = length - len(text)
    assert tail >= 6, (length, len(text))
    return text + padded_word(tail)


def gopher_repetition_cases() -> list[tuple]:
    cases = [("empty text", "empty", ""), ("one word: no 2-gram", None, "word"),
             ("two words: one 2-gram, all of the text", "top_2_gram", "two words")]
    paragraphs = [" ".join(filler(12, 6, 40 * k)) + "." for k in range(6)]
    for unit, joint in (("paragraph", "\n\n"), ("line", "\n")):
        rule = "para" if unit == "paragraph" else "line"
        # repeated pieces by count: "Hi." 4 times among 10 (3 repeats: 0.3), or 5 (4 repeats: 0.4)
        for copies, verdict in ((4, None), (5, f"dup_{rule}_frac")):
            pieces = list(paragraphs)
            for k in range(copies):
                pieces.insert(2 * k, "Hi.")
            pieces = pieces[:10]
            repeats = sum(piece == "Hi." for piece in pieces) - 1
            cases.append((f"{repeats} repeated {unit}s of 10, maximum 0.3", verdict, joint.join(pieces)))
        # repeated pieces by characters: one piece of r characters twice in a text of 500 (r = 100: 0.2)
        for size, verdict in ((99, None), (100, None), (101, f"dup_{rule}_char_frac")):
            piece = "Hi" + " " * (size - 2)
            rest = 500 - 2 * size - 3 * len(joint)
            first = sized(filler(8, 6, 500), rest // 2)
            second = sized(filler(8, 6, 600), rest - rest // 2)
            text = joint.join([piece, first, piece, second])
            exact(len(text), 500, "length")
            cases.append((f"a {unit} of {size} characters repeated in 500, maximum 0.2", verdict, text))
    # the most frequent n-gram's characters (words joined by spaces, times its count) over the text's
    for n, share, count in ((2, 0.2, 10), (3, 0.18, 9), (4, 0.16, 16)):
        gram = ["ab", "cd", "ef", "gh"][:n]
        covered = (sum(map(len, gram)) + n - 1) * count
        for extra, verdict in ((0, None), (-1, f"top_{n}_gram")):
            length = round(covered / share) + extra
            words = []
            for k, word in enumerate(filler(count, 6, 700)):
                words += gram + [word]
            text = sized(words[:-1], length)
            exact(covered / len(text) > share, verdict is not None, "over the share")
            cases.append((f"the top {n}-gram covers {covered} of {length} characters, maximum {share}", verdict,
                          text))
    # duplicated n-grams: a phrase of n words twice (its characters, without spaces, once repeated), beside a
    # 4-gram of one-letter words 3 times, so that the most frequent 2-, 3- and 4-grams are short
    for n, share in ((5, 0.15), (10, 0.10)):
        phrase = filler(n, 6, 800)
        repeated = sum(map(len, phrase))
        for extra, verdict in ((0, None), (-1, f"duplicated_{n}_n_grams")):
            length = round(repeated / share) + extra
            small = ["a", "b", "c", "d"]
            words = small + filler(1, 6, 820) + phrase + filler(1, 6, 830) + small + filler(1, 6, 840) + phrase \
                + filler(1, 6, 850) + small
            text = sized(words, length)
            cases.append((f"a {n}-word phrase of {repeated} characters twice in {length}, maximum {share}", verdict,
                          text))
    return cases


# ---------------------------------------------------------------- C4's rules


def sentence(k: int, words: int = 6) -> str:
    return " ".join(["The"] + filler(words - 1, 6, 1000 + 10 * k)) + "."


def c4_cases() -> list[tuple]:
    four = [sentence(k) for k in range(4)]
    cases = [("5 sentences in kept lines, minimum 5", None, "\n".join(four + [sentence(9)])),
             ("4 sentences in kept lines, minimum 5", "too_few_sentences", "\n".join(four))]
    cases.append(("a line of 3 words is kept, minimum 3", None, "\n".join(four + ["One " + filler(1)[0] + " two."])))
    cases.append(("a line of 2 words is cut, minimum 3", "too_few_sentences", "\n".join(four + ["One two."])))
    for size, verdict in ((1000, None), (1001, "too_few_sentences")):
        cases.append((f"a word of {size} characters, maximum 1000", verdict,
                      "\n".join(four + [f"The {padded_word(size)} word."])))
    ends = {'"': None, "'": None, "!": None, "?": None, "...": "too_few_sentences", ",": "too_few_sentences"}
    for end, verdict in ends.items():
        cases.append((f"a line ending in {end!r}", verdict, "\n".join(four + [sentence(8)[:-1] + end])))
    cases.append(("lorem ipsum in a kept line", "lorem_ipsum", "\n".join(four + ["Lorem Ipsum dolor sit amet."])))
    cases.append(("lorem ipsum in a cut line", None, "\n".join(four + [sentence(7), "Lorem ipsum dolor sit amet"])))
    cases.append(("a curly bracket in a kept line", "curly_bracket", "\n".join(four + ["The set {a, b} is small."])))
    cases.append(("a curly bracket in a cut line", None, "\n".join(four + [sentence(7), "The set {a, b} is small"])))
    cases.append(("javascript lines are cut", "too_few_sentences", "\n".join(four + ["Enable JavaScript to see it."])))
    five = four + [sentence(9)]
    firsts = (f"The {padded_word(1001)} word.", "Enable JavaScript to see it.", "Read the privacy policy here now.")
    for first in firsts:
        cases.append((f"a first line cut ({first[:20]}...), five sentences after it", None, "\n".join([first] + five)))
    for phrase in ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies"):
        cases.append((f"a line with {phrase!r} is cut", "too_few_sentences",
                      "\n".join(four + [f"Read the {phrase} here now."])))
    cases.append(("citations are removed from kept lines", None,
                  "\n".join(four + ["The first[1] and second[edit] and third[citation needed] and [] notes."])))
    return cases


# ---------------------------------------------------------------- FineWeb's rules


def long_line(k: int, words: int = 6, end: str = ".") -> str:
    return " ".join(filler(words, 6, 2000 + 10 * k)) + end


def fineweb_cases() -> list[tuple]:
    cases = [("no line with text", "empty", " \n\t\n")]
    for ending, verdict in ((3, None), (2, "line_punct_ratio")):
        lines = [long_line(k, end="." if k < ending else "") for k in range(25)]
        cases.append((f"{ending} of 25 lines end a sentence, minimum 0.12", verdict, "\n".join(lines)))
    for short, verdict in ((67, None), (68, "short_line_ratio")):
        lines = [sized(filler(3, 6, 3000 + 5 * k), 29) + "." for k in range(short)]
        lines += [sized(filler(3, 6, 4000 + 5 * k), 30) + "." for k in range(100 - short)]
        cases.append((f"{short} of 100 lines of 30 characters or fewer, maximum 0.67", verdict, "\n".join(lines)))
    for total, verdict in ((4000, None), (3999, "char_dup_ratio")):
        repeated = sized(filler(3, 6, 5000), 39) + "."
        lines = [repeated, repeated]
        rest = total - 80
        count = rest // 50
        for k in range(count):
            lines.append(sized(filler(4, 6, 5100 + 6 * k), 49 if k < count - 1 else rest - 50 * (count - 1) - 1)
                         + ".")
        text = "\n".join(lines)
        exact(len(text.replace("\n", "")), total, "characters")
        cases.append((f"a line of 40 characters twice in {total}, maximum 0.01", verdict, text))
    for words, verdict in ((30, None), (29, "list_ratio")):
        lines = [" ".join(filler(2, 12, 6000 + 3 * k)) + "." for k in range(2)]
        lines += [" ".join(filler(3, 12, 6100 + 3 * k)) for k in range(8)]
        if words == 29:
            lines[-1] = " ".join(filler(2, 16, 6500))
        cases.append((f"9 newlines and {words} words, maximum 0.3 per word", verdict, "\n".join(lines)))
    return cases


def boundary_cases() -> list[tuple[str, str, str | None, str]]:
    """Every case: (name, the filter it was built for, the verdict it must get, text)."""
    return [(name, "gopher-quality", verdict, text) for name, verdict, text in gopher_quality_cases()] + \
        [(name, "gopher-repetition", verdict, text) for name, verdict, text in gopher_repetition_cases()] + \
        [(name, "c4-quality", verdict, text) for name, verdict, text in c4_cases()] + \
        [(name, "fineweb-quality", verdict, text) for name, verdict, text in fineweb_cases()]


def datatrove_decider():
    """`decide(filter, text)`: datatrove's own (text after the filter, rule that dropped it or None), by its four
    filters at their defaults."""
    from datatrove.data import Document
    from datatrove.pipeline import filters

    theirs = {"gopher-quality": filters.GopherQualityFilter(), "gopher-repetition": filters.GopherRepetitionFilter(),
              "c4-quality": filters.C4QualityFilter(), "fineweb-quality": filters.FineWebQualityFilter()}

    def decide(name: str, text: str) -> tuple[str, str | None]:
        document = Document(text=text, id="")
        verdict = theirs[name].filter(document)
        return document.text, None if verdict is True else verdict[1]
    return decide


def datatrove_verdicts() -> list[dict]:
    """datatrove's own verdict on each case by each of the four filters (the rule, or None), and C4's kept text."""
    decide = datatrove_decider()
    found = []
    for name, _, _, text in boundary_cases():
        entry = {"case": name}
        for key in ("gopher-quality", "gopher-repetition", "c4-quality", "fineweb-quality"):
            kept, entry[key] = decide(key, text)
            if key == "c4-quality" and entry[key] is None:
                entry["c4-quality kept text"] = kept
        found.append(entry)
    return found


if __name__ == "__main__":
    verdicts = datatrove_verdicts()
    GOLDEN.write_text(json.dumps({"datatrove": "0.10.1", "verdicts": verdicts}, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(verdicts)} cases written to {GOLDEN}", file=sys.stderr)
