"""Checks on the shape of a stream's documents, counted across its batches:

- `double-bos`: a document that starts with its BOS twice (a tokenizer that adds BOS, then a chat or text template
  that writes it again). Without `bos_id`, the same id twice at the start of most documents is the evidence, an
  id used little elsewhere (a marker, not an indent's spaces);
- `truncated-documents`: whole documents that end at one length far more often than text does, and none longer
  (every document cut at `max_length` before packing); real documents' lengths spread out, and files of one fixed
  size (dumps of 2,048 bytes) sit among longer documents. Documents cut at a row's length or more are never
  whole inside a row, so that cut is not seen;
- `eos-not-learned`: documents end with the EOD id, yet no label is ever that id (pad = eos, and a collator that
  sets the pad id's labels to -100 takes every EOS out of the loss), so the model never learns to stop.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from .documents import Documents, first_tokens

FEWEST_STARTS = 16  # document starts before a doubled BOS is judged
MARKER_USES = 3  # without bos_id, the doubled id is a marker: all its uses are at most this many times its pairs
DOUBLED_SHARE = 0.75  # of them, starting with one id twice
FEWEST_WHOLE = 16  # whole documents before their lengths are judged
ONE_LENGTH_SHARE = 0.25  # of them, at one length...
OVER_NEXT = 5  # ...and this many times the next most common length
FEWEST_ENDS = 8  # documents ending with EOD before a missing EOS label is named


class DocumentShapes:
    def __init__(self, bos_id: int | None, eod_id: int | None):
        self.bos_id, self.eod_id = bos_id, eod_id
        self.starts = 0
        self.doubled: Counter[int] = Counter()
        self.uses: Counter[int] = Counter()  # every use of an id found doubled at a start
        self.longest = 0  # the longest whole document between two EODs
        self.lengths: Counter[int] = Counter()
        self.ends = self.eos_labels = 0
        self.named: set[str] = set()

    def look(self, ids: np.ndarray, labels: np.ndarray | None, found: Documents) -> list[tuple[str, str]]:
        """(code, line) of each check whose evidence is complete with this batch (each named once)."""
        lines = [self._bos(ids, found), self._lengths(ids, found), self._eos(labels, found)]
        out = [line for line in lines if line is not None and line[0] not in self.named]
        self.named.update(code for code, _ in out)
        return out

    def _bos(self, ids: np.ndarray, found: Documents):
        if self.bos_id is not None:  # every run of BOS starts a document, wherever the rows cut
            marks = ids == self.bos_id
            runs = marks & ~np.pad(marks, ((0, 0), (1, 0)))[:, :-1]
            twice = runs & np.pad(marks, ((0, 0), (0, 1)))[:, 1:]
            self.starts += int(runs.sum())
            self.doubled[self.bos_id] += int(twice.sum())
        else:
            heads = first_tokens(ids, found.certain or found.starts, 2)
            self.starts += len(heads)
            pairs = heads[(heads[:, 0] == heads[:, 1]) & (heads[:, 0] >= 0)]
            self.doubled.update(pairs[:, 0].tolist())
            for token, _ in self.doubled.most_common(3):  # the candidates: counting every id would cost a pass each
                self.uses[token] += int((ids == token).sum())
        if self.starts < FEWEST_STARTS or not self.doubled:
            return None
        token, count = self.doubled.most_common(1)[0]
        if count < DOUBLED_SHARE * self.starts:
            return None
        if self.bos_id is None and self.uses[token] > MARKER_USES * 2 * count:
            return None  # an id the text uses everywhere (an indent's spaces), not a start marker
        named = "BOS" if self.bos_id is not None else "the same id"
        return "double-bos", (
            f"{count:,} of {self.starts:,} documents start with {named} twice (id {token}, then {token} again): the "
            "tokenizer adds BOS and a template writes it again, so every document trains on a start that inference "
            "never sees; fix: add BOS once: tokenizer(text, add_special_tokens=False) on text that has it, or "
            "drop it from the template")

    def _lengths(self, ids: np.ndarray, found: Documents):
        self.lengths.update(end - start for _, start, end in found.between)
        self.longest = max([self.longest] + [end - start for _, start, end in found.between])
        total = sum(self.lengths.values())
        if total < FEWEST_WHOLE:
            return None
        (length, count), *rest = self.lengths.most_common(2) + [(0, 0)]
        following = rest[0][1]
        if count < ONE_LENGTH_SHARE * total or count < OVER_NEXT * max(following, 1) or length < self.longest:
            return None
        return "truncated-documents", (
            f"{count:,} of {total:,} whole documents are exactly {length:,} tokens long (the next most common length "
            f"holds {following:,}): documents cut at one length, as tokenizer(..., truncation=True, max_length="
            f"{length}) cuts them, before packing, so the rest of each is thrown away; fix: tokenize without "
            "truncation and let packing cut the stream into rows")

    def _eos(self, labels: np.ndarray | None, found: Documents):
        if self.eod_id is None or labels is None:
            return None
        self.ends += int(found.ends.sum())
        self.eos_labels += int((labels == self.eod_id).sum())
        if self.ends < FEWEST_ENDS or self.eos_labels:
            return None
        return "eos-not-learned", (
            f"{self.ends:,} documents end with the EOS id {self.eod_id}, but no label is ever {self.eod_id}: the "
            "model never learns to end a document (with pad = eos, a collator that sets the pad id's labels to -100 "
            "takes every EOS out of the loss); fix: give the tokenizer a pad token of its own (not eos), or set "
            "labels from the attention mask, so the EOS ending each document is a label")
