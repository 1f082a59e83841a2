"""What document masking changes: the first document of a row is untouched, every later one moves; and
the share of a plain causal mask's attention that crosses documents, counted from a plan."""

from __future__ import annotations

import numpy as np

from helpers.loading.packing import pack
from helpers.training.packed_loss import cross_document_attention, logit_change_without_mask, tiny_llama


def test_only_documents_after_the_first_change_without_the_mask():
    rng = np.random.default_rng(1)
    documents = {key: rng.integers(1, 101, size=n) for key, n in ((7, 6), (3, 9), (5, 4))}
    changes = logit_change_without_mask(tiny_llama(), documents, 32)
    assert [c["document"] for c in changes] == [3, 5, 7]
    assert [c["tokens"] for c in changes] == [9, 4, 6]
    assert changes[0]["max_logit_change"] == 0.0
    assert all(c["max_logit_change"] > 1e-6 for c in changes[1:])


def test_cross_document_pairs_counted_by_hand():
    plan = pack(np.array([3, 2, 4, 5]), 6, "next_fit")  # rows: [3, 2], [4], [5]
    shares = cross_document_attention(plan)
    # the 2-token document sits at offset 3: 2 * 3 crossing pairs; within: 6 + 3 + 10 + 15
    assert shares["pair_share"] == 6 / 40
    assert shares["token_share"] == 2 / 14


def test_one_document_per_row_crosses_nothing():
    plan = pack(np.array([5, 9, 2, 7]), 16, "pad")
    assert cross_document_attention(plan) == {"pair_share": 0.0, "token_share": 0.0}
