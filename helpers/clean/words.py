"""Words and sentences of English text as datatrove 0.10.1 splits them, exactly, and many times faster.

datatrove's quality filters split English with spaCy's blank English pipeline: its tokenizer for words (whitespace
tokens dropped, every token stripped) and its sentencizer for sentences. spaCy's tokenizer cuts a text at
whitespace first and tokenizes each run of non-whitespace characters on its own (special cases, then prefixes,
suffixes and infixes), so a run's tokens do not depend on the text around it. Here each distinct run is
tokenized once, by the same tokenizer, and remembered; a run that no rule touches (no special case, prefix,
suffix or infix) is its own token without asking spaCy. The sentencizer's rule is applied to the same tokens: a
sentence starts at the first token that is neither punctuation nor one of its sentence-final characters after one
of those characters.

Other languages: the rules are English's (datatrove picks a tokenizer per language; these filters are used with
English). On text without spaces between words (Chinese, Japanese, Thai) a whole run of characters up to the next
space or punctuation is one word, so word counts and mean word lengths there mean nothing.
"""

from __future__ import annotations

import re
import unicodedata

from ..common.errors import UserError

RUNS = re.compile(r"\S+|\s+")
NON_SPACE = re.compile(r"\S+")
CACHED_RUNS = 1 << 20  # distinct runs remembered per process


def _spacy_english():
    try:
        import spacy
    except ImportError:
        raise UserError("the quality filters split English words as spaCy's blank English pipeline does; fix: pip "
                        "install -e '.[quality]' (or pip install spacy)") from None
    nlp = spacy.blank("en")
    return nlp.tokenizer, set(nlp.add_pipe("sentencizer").punct_chars)


class EnglishWords:
    """`words(text)` and `sentence_count(line)` as datatrove's `split_into_words` and `split_into_sentences` give
    them for English (see the module docstring)."""

    def __init__(self):
        self.tokenizer, self.sentence_ends = _spacy_english()
        self.rules = self.tokenizer.rules
        self.runs: dict[str, tuple[str, ...]] = {}
        self.punct: dict[str, bool] = {}
        self.last: tuple = (None, [])

    def __getstate__(self) -> dict:
        return {}  # a worker builds its own (spaCy's tokenizer is rebuilt, the cache starts empty)

    def __setstate__(self, state: dict) -> None:
        self.__init__()

    def _tokens(self, run: str) -> tuple[str, ...]:
        """A run of non-whitespace characters as spaCy's tokenizer cuts it."""
        tokens = self.runs.get(run)
        if tokens is None:
            tokenizer = self.tokenizer
            if (run not in self.rules and tokenizer.prefix_search(run) is None
                    and tokenizer.suffix_search(run) is None and next(tokenizer.infix_finditer(run), None) is None):
                tokens = (run,)
            else:
                tokens = tuple(text for text in (token.text.strip() for token in tokenizer(run)) if text)
            if len(self.runs) >= CACHED_RUNS:
                self.runs.clear()
            self.runs[run] = tokens
        return tokens

    def words(self, text: str) -> list[str]:
        """The text's words: its tokens, whitespace dropped, each stripped (the last text's are kept: filters
        that follow one another ask for the same text's words; do not change the list)."""
        if text is self.last[0]:
            return self.last[1]
        words: list[str] = []
        for run in NON_SPACE.findall(text):
            words.extend(self._tokens(run))
        self.last = (text, words)
        return words

    def _is_punct(self, token: str) -> bool:
        """spaCy's `is_punct`: every character of Unicode category P."""
        known = self.punct.get(token)
        if known is None:
            known = self.punct[token] = all(unicodedata.category(char).startswith("P") for char in token)
        return known

    def sentence_count(self, text: str) -> int:
        """How many pieces datatrove's `split_into_sentences` cuts `text` into: the sentences spaCy's
        sentencizer finds, or one piece for a text without a token."""
        sentences, tokens_seen, seen_end = 1, False, False
        for run in RUNS.findall(text):
            if run.isspace():
                if run == " " or not (run := run[1:] if run[0] == " " else run):
                    continue
                tokens: tuple[str, ...] = (run,)
            else:
                tokens = self._tokens(run)
            for token in tokens:
                ends = token in self.sentence_ends
                if seen_end and not ends and not self._is_punct(token):
                    sentences += 1
                    seen_end = False
                elif ends:
                    seen_end = True
                tokens_seen = True
        return sentences if tokens_seen else 1
