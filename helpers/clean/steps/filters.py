"""Quality filters of `helpers.clean` (`--filters`), one class each, deciding document for document as datatrove
0.10.1's filters of the same names, with their defaults (every threshold settable, and one set to 0 or None
turns its rule off, as there):

- `GopherQuality` (`gopher-quality`): Gopher's quality rules: words without a letter or digit that are not
  symbols, their mean length, hashes and ellipses per word, lines that are bullets or end in an ellipsis, words
  with a letter, stop words;
- `GopherRepetition` (`gopher-repetition`): Gopher's repetition rules: duplicate paragraphs and lines (by count
  and by characters), the most frequent 2- to 4-gram and the duplicated 5- to 10-grams by characters;
- `C4Quality` (`c4-quality`): C4's line rules, which also cut lines from the documents they keep (no terminal
  punctuation, fewer than 3 words, a word over 1,000 characters, "javascript", a cookie or terms-of-use phrase;
  citations like `[1]` removed), and drop a document with "lorem ipsum", a curly bracket or fewer than 5
  sentences left (C4's bad-words list, a download, is not applied);
- `FineWebQuality` (`fineweb-quality`): FineWeb's rules: lines ending in sentence punctuation, short lines,
  characters in duplicated lines, newlines per word.

A removal's reason names the rule as datatrove does and the value that failed it
(`gopher_below_avg_threshold: mean word length 2.1 < 3`). Words and sentences are split as datatrove splits
English (`helpers.clean.text.words`).
"""

from __future__ import annotations

import re
from operator import methodcaller

from ...common.compiled import numba_loaded
from ..text.ngrams import Grams, load_compiled
from ..text.punctuation import PUNCTUATION_SET, SENTENCE_ENDS
from ..text.words import EnglishWords, missing
from .base import DocumentStep, Filter

GOPHER_STOP_WORDS = ("the", "be", "to", "of", "and", "that", "have", "with")
C4_LINE_ENDS = (".", "?", "!", '"', "'")
C4_POLICY_PHRASES = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies",
                     "use cookies")
C4_CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
PARAGRAPH_BREAK = re.compile(r"\n{2,}")
LINE_BREAKS = re.compile(r"\n+")


def english_words() -> EnglishWords:
    """One splitter per process, shared by the filters (its cache of runs too)."""
    global _SPLITTER
    if _SPLITTER is None:
        _SPLITTER = EnglishWords()
    return _SPLITTER


_SPLITTER: EnglishWords | None = None


class SplitsEnglish:
    """What the four filters share: each splits English words, loaded once in the driver (forked workers start
    with spaCy's rules), and the report counts their removals by rule."""

    by_rule = True

    def warm_up(self) -> None:
        words = english_words()
        if numba_loaded():  # the compiled splitter's loops too, where numba's start-up is paid anyway
            words.load_compiled()


FIELD = 40  # bits of each count in a word's one number (`word_totals`)
FIELDS = (1 << FIELD) - 1
SYMBOL, LETTER = 1 << FIELD, 1 << 2 * FIELD  # a word of punctuation only; a word with a letter (never both)
_TOTALS: dict[str, int] = {}


def word_totals(words: list[str]) -> tuple[int, int, int]:
    """The words that are punctuation only (symbols), those with a letter (no letter is punctuation), and the
    characters of the words that are not symbols: one sum of each word's number (its characters, or 0 for a
    symbol, plus SYMBOL or LETTER), remembered per distinct word, rather than a pass over the words for each."""
    found = list(map(_TOTALS.get, words))
    if None in found:
        if len(_TOTALS) >= 1 << 20:
            _TOTALS.clear()
        for index in missing(found):
            word = words[index]
            found[index] = _TOTALS[word] = (SYMBOL if PUNCTUATION_SET.issuperset(word) else
                                            len(word) + (LETTER if any(char.isalpha() for char in word) else 0))
    total = sum(found)
    return total >> FIELD & FIELDS, total >> 2 * FIELD, total & FIELDS


class GopherQuality(SplitsEnglish, Filter):
    name = "gopher_quality"

    def __init__(self, *, min_doc_words: int | None = 50, max_doc_words: int | None = 100_000,
                 min_avg_word_length: float | None = 3, max_avg_word_length: float | None = 10,
                 max_symbol_word_ratio: float | None = 0.1, max_bullet_lines_ratio: float | None = 0.9,
                 max_ellipsis_lines_ratio: float | None = 0.3, max_non_alpha_words_ratio: float | None = 0.8,
                 min_stop_words: int | None = 2, stop_words: tuple[str, ...] = GOPHER_STOP_WORDS):
        self.min_doc_words, self.max_doc_words = min_doc_words, max_doc_words
        self.min_avg_word_length, self.max_avg_word_length = min_avg_word_length, max_avg_word_length
        self.max_symbol_word_ratio = max_symbol_word_ratio
        self.max_bullet_lines_ratio, self.max_ellipsis_lines_ratio = max_bullet_lines_ratio, max_ellipsis_lines_ratio
        self.max_non_alpha_words_ratio, self.min_stop_words = max_non_alpha_words_ratio, min_stop_words
        self.stop_words = frozenset(stop_words)

    def reason(self, text: str) -> str | None:
        words = english_words().words(text)
        symbols, letters, characters = word_totals(words)
        counted = len(words) - symbols  # the words that are not punctuation only
        if self.min_doc_words and counted < self.min_doc_words:
            return f"gopher_short_doc: {counted} words < {self.min_doc_words}"
        if self.max_doc_words and counted > self.max_doc_words:
            return f"gopher_long_doc: {counted} words > {self.max_doc_words}"
        mean = characters / counted if counted else float("nan")  # numpy's mean, which datatrove takes
        if self.min_avg_word_length and mean < self.min_avg_word_length:
            return f"gopher_below_avg_threshold: mean word length {mean:.2f} < {self.min_avg_word_length}"
        if self.max_avg_word_length and mean > self.max_avg_word_length:
            return f"gopher_above_avg_threshold: mean word length {mean:.2f} > {self.max_avg_word_length}"
        if not words:
            return None
        if self.max_symbol_word_ratio and text.count("#") / len(words) > self.max_symbol_word_ratio:
            return f"gopher_too_many_hashes: {text.count('#') / len(words):.3f} per word > {self.max_symbol_word_ratio}"
        ellipses = text.count("...") + text.count("…")
        if self.max_symbol_word_ratio and ellipses / len(words) > self.max_symbol_word_ratio:
            return f"gopher_too_many_ellipsis: {ellipses / len(words):.3f} per word > {self.max_symbol_word_ratio}"
        lines = text.splitlines()
        bullets = sum(map(methodcaller("startswith", ("•", "-")), map(str.lstrip, lines))) / len(lines)
        if self.max_bullet_lines_ratio and bullets > self.max_bullet_lines_ratio:
            return f"gopher_too_many_bullets: {bullets:.3f} of lines > {self.max_bullet_lines_ratio}"
        trailing = sum(map(methodcaller("endswith", ("...", "…")), map(str.rstrip, lines))) / len(lines)
        if self.max_ellipsis_lines_ratio and trailing > self.max_ellipsis_lines_ratio:
            return f"gopher_too_many_end_ellipsis: {trailing:.3f} of lines > {self.max_ellipsis_lines_ratio}"
        alpha = letters / len(words)
        if self.max_non_alpha_words_ratio and alpha < self.max_non_alpha_words_ratio:
            return (f"gopher_below_alpha_threshold: {alpha:.3f} of words with a letter < "
                    f"{self.max_non_alpha_words_ratio}")
        stops = len(self.stop_words.intersection(words))
        if self.min_stop_words and stops < self.min_stop_words:
            return f"gopher_enough_stop_words: {stops} stop words < {self.min_stop_words}"
        return None


def _duplicates(items: list[str]) -> tuple[int, int]:
    """Items seen before (each repeat counted), and their characters: all of them less the first of each."""
    distinct = set(items)
    return len(items) - len(distinct), sum(map(len, items)) - sum(map(len, distinct))


class GopherRepetition(SplitsEnglish, Filter):
    name = "gopher_repetition"

    def warm_up(self) -> None:
        load_compiled()  # numba's loops, first: the splitter's follow
        super().warm_up()

    def __init__(self, *, dup_line_frac: float | None = 0.3, dup_para_frac: float | None = 0.3,
                 dup_line_char_frac: float | None = 0.2, dup_para_char_frac: float | None = 0.2,
                 top_n_grams: tuple = ((2, 0.2), (3, 0.18), (4, 0.16)),
                 dup_n_grams: tuple = ((5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12), (9, 0.11), (10, 0.10))):
        self.dup_line_frac, self.dup_para_frac = dup_line_frac, dup_para_frac
        self.dup_line_char_frac, self.dup_para_char_frac = dup_line_char_frac, dup_para_char_frac
        self.top_n_grams, self.dup_n_grams = tuple(map(tuple, top_n_grams)), tuple(map(tuple, dup_n_grams))

    def reason(self, text: str) -> str | None:
        if not text:
            return "empty: no text"
        for unit, pieces, share, char_share in (
                ("paragraph", PARAGRAPH_BREAK.split(text.strip()), self.dup_para_frac, self.dup_para_char_frac),
                ("line", LINE_BREAKS.split(text), self.dup_line_frac, self.dup_line_char_frac)):
            count, characters = _duplicates(pieces)
            rule = "para" if unit == "paragraph" else "line"
            if share and count / len(pieces) > share:
                return f"dup_{rule}_frac: {count / len(pieces):.3f} of {unit}s repeated > {share}"
            if char_share and characters / len(text) > char_share:
                return (f"dup_{rule}_char_frac: {characters / len(text):.3f} of characters in repeated {unit}s "
                        f"> {char_share}")
        grams = Grams(english_words().words(text))
        for n, share in self.top_n_grams:
            if grams.count >= n and grams.top_characters(n) / len(text) > share:
                covered = grams.top_characters(n) / len(text)
                return f"top_{n}_gram: the most frequent {n}-gram covers {covered:.3f} of characters > {share}"
        for n, share in self.dup_n_grams:
            covered = grams.repeated_characters(n) / len(text)
            if covered > share:
                return f"duplicated_{n}_n_grams: repeated {n}-grams cover {covered:.3f} of characters > {share}"
        return None


class C4Quality(SplitsEnglish, DocumentStep):
    """A filter that also cuts lines from the documents it keeps (so neither a pure filter nor a formatter)."""

    name = "c4_quality"

    def __init__(self, *, remove_citations: bool = True, filter_no_terminal_punct: bool = True,
                 min_num_sentences: int = 5, min_words_per_line: int = 3, max_word_length: int = 1000,
                 filter_lorem_ipsum: bool = True, filter_javascript: bool = True, filter_curly_bracket: bool = True,
                 filter_policy: bool = True):
        self.remove_citations, self.filter_no_terminal_punct = remove_citations, filter_no_terminal_punct
        self.min_num_sentences, self.min_words_per_line = min_num_sentences, min_words_per_line
        self.max_word_length, self.filter_lorem_ipsum = max_word_length, filter_lorem_ipsum
        self.filter_javascript, self.filter_curly_bracket = filter_javascript, filter_curly_bracket
        self.filter_policy = filter_policy

    def apply(self, text: str, notes: dict) -> tuple[str, str | None]:
        sentences, kept = 0, []
        cited = self.remove_citations and "[" in text
        lorem, javascript, curly, policy = self._possible(C4_CITATION.sub("", text) if cited else text)
        for line in text.splitlines():
            line = line.strip()
            words = line.split()
            if (self.max_word_length != -1 and len(line) > self.max_word_length
                    and any(len(word) > self.max_word_length for word in words)):
                continue
            if cited:
                line = C4_CITATION.sub("", line)
            if self.filter_no_terminal_punct and (not line.endswith(C4_LINE_ENDS) or line.endswith("...")):
                continue
            if len(words) < self.min_words_per_line:
                continue
            lowered = line.lower() if lorem or javascript or policy else ""
            if lorem and "lorem ipsum" in lowered:
                return text, "lorem_ipsum: a line holds 'lorem ipsum'"
            if javascript and "javascript" in lowered:
                continue
            if curly and "{" in line:
                return text, "curly_bracket: a kept line holds '{'"
            if policy and any(phrase in lowered for phrase in C4_POLICY_PHRASES):
                continue
            if self.min_num_sentences != -1:
                sentences += english_words().sentence_count(line)
            kept.append(line)
        if sentences < self.min_num_sentences:
            return text, f"too_few_sentences: {sentences} sentences in kept lines < {self.min_num_sentences}"
        return "\n".join(kept).strip(), None

    def _possible(self, cited: str) -> tuple[bool, bool, bool, bool]:
        """Which line rules can fire at all (lorem ipsum, javascript, a curly bracket, a policy phrase): each looks
        for a piece of text that a line of `cited` (the text with its citations removed) can hold only where the
        whole of it holds it, so the lines need not be lowered and searched one by one where it does not."""
        lowered = cited.lower() if self.filter_lorem_ipsum or self.filter_javascript or self.filter_policy else ""
        return (self.filter_lorem_ipsum and "lorem ipsum" in lowered,
                self.filter_javascript and "javascript" in lowered, self.filter_curly_bracket and "{" in cited,
                self.filter_policy and any(phrase in lowered for phrase in C4_POLICY_PHRASES))


class FineWebQuality(SplitsEnglish, Filter):
    name = "fineweb_quality"

    def __init__(self, *, line_punct_thr: float = 0.12, line_punct_exclude_zero: bool = False,
                 stop_chars: tuple[str, ...] | None = None, short_line_thr: float = 0.67, short_line_length: int = 30,
                 char_duplicates_ratio: float = 0.01, new_line_ratio: float = 0.3):
        self.line_punct_thr, self.line_punct_exclude_zero = line_punct_thr, line_punct_exclude_zero
        self.stop_chars = tuple(SENTENCE_ENDS) if stop_chars is None else tuple(stop_chars)
        self.short_line_thr, self.short_line_length = short_line_thr, short_line_length
        self.char_duplicates_ratio, self.new_line_ratio = char_duplicates_ratio, new_line_ratio

    def reason(self, text: str) -> str | None:
        lines = [line for line in text.split("\n") if line.strip() != ""]
        if not lines:
            return "empty: no line with text"
        ratio = sum(map(methodcaller("endswith", self.stop_chars), lines)) / len(lines)
        if ratio < self.line_punct_thr and not (ratio == 0 and self.line_punct_exclude_zero):
            return f"line_punct_ratio: {ratio:.3f} of lines end a sentence < {self.line_punct_thr}"
        ratio = sum(map(self.short_line_length.__ge__, map(len, lines))) / len(lines)
        if ratio > self.short_line_thr:
            return f"short_line_ratio: {ratio:.3f} of lines of {self.short_line_length} characters or fewer > " \
                   f"{self.short_line_thr}"
        ratio = _duplicates(lines)[1] / len(text.replace("\n", ""))
        if ratio > self.char_duplicates_ratio:
            return f"char_dup_ratio: {ratio:.3f} of characters in repeated lines > {self.char_duplicates_ratio}"
        ratio = text.count("\n") / english_words().word_count(text)
        if ratio > self.new_line_ratio:
            return f"list_ratio: {ratio:.3f} newlines per word > {self.new_line_ratio}"
        return None


FILTERS = {"gopher-quality": GopherQuality, "gopher-repetition": GopherRepetition, "c4-quality": C4Quality,
           "fineweb-quality": FineWebQuality}
