"""One merge per token of a tiktoken vocabulary: the halves tiktoken makes each token from, and none for a
token no merge makes; the merges-list encoder built from them is proved in `test_encoders.py`."""

from __future__ import annotations

from helpers.tokenizers.bpe_merges import halves, one_merge_per_token
from helpers.tokenizers.zoo import load_tokenizer

SINGLE_BYTES = {bytes([b]): b for b in range(256)}


def ranks_with(*tokens: bytes) -> dict[bytes, int]:
    ranks = dict(SINGLE_BYTES)
    for token in tokens:
        ranks[token] = len(ranks)
    return ranks


def test_a_token_is_made_from_the_halves_its_lower_ranks_give():
    ranks = ranks_with(b"ab", b"bc", b"abc")  # "ab" outranks "bc": a, b, c -> ab, c -> abc
    assert halves(b"abc", ranks) == (b"ab", b"c")
    assert halves(b"ab", ranks) == (b"a", b"b")


def test_the_halves_follow_the_ranks_not_the_order_the_tokens_are_written():
    ranks = ranks_with(b"bc", b"ab", b"abc")
    assert halves(b"abc", ranks) == (b"a", b"bc")


def test_the_merges_may_pass_through_a_token_of_higher_rank():
    ranks = ranks_with(b"ba", b"abab", b"bab")  # a, b, a, b -> a, ba, b -> a, bab (ranked after abab) -> abab
    assert halves(b"abab", ranks) == (b"a", b"bab")


def test_a_token_that_no_merge_makes_has_no_halves():
    ranks = ranks_with(b"ab", b"cd", b"abcd", b"xyz")  # x, y, z: no pair of them is a token below "xyz"
    assert halves(b"abcd", ranks) == (b"ab", b"cd")
    assert halves(b"xyz", ranks) is None
    assert one_merge_per_token(ranks) == [(b"a", b"b"), (b"c", b"d"), (b"ab", b"cd")]


def test_llama3_has_one_merge_per_mergeable_token_in_rank_order():
    ranks = load_tokenizer("llama3").ranks
    merges = one_merge_per_token(ranks)
    made = [left + right for left, right in merges]
    assert len(made) == len(set(made)) and all(token in ranks for token in made)
    assert [ranks[token] for token in made] == sorted(ranks[token] for token in made)
    assert halves(b".:.:", ranks) == (b".:.", b":") and ranks[b".:."] > ranks[b".:.:"]
    assert 127_000 < len(merges) < len(ranks) - 256  # a few hundred tokens are only ever found whole
