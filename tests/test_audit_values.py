"""The audit's statistics and its memory of sightings against values worked out by hand: equal pairs, the uniform
bound, the windows each row is cut into, how long a replay's run must be before it is named, label shifts,
padding, which row follows which (a batch's next row follows only the last row of the batch before), and how many
digests the bounded memory keeps and forgets."""

from __future__ import annotations

import math

import numpy as np
import pytest

from helpers.audit.sightings import BLOCKS, RANK_SLOTS, ROW_SLOTS, Sightings, follows, sighting, where
from helpers.audit.settings import AuditSettings
from helpers.audit.stream import Seen, StreamAudit, _plain_rows
from helpers.audit.statistics import label_matches, padding_positions, pooled_pairs, replay_run_needed, row_windows, \
    uniform_bound, uniform_windows, unigram_entropy, window_pairs


def test_equal_pairs_count_every_pair_of_equal_ids_in_a_row():
    rows = np.array([[1, 1, 1, 2], [1, 2, 3, 4], [5, 5, 5, 5], [7, 8, 7, 8]])
    assert window_pairs(rows).tolist() == [3, 0, 6, 2]
    assert pooled_pairs(np.array([[3, 3], [7, 9]])) == (4, 1, 7)  # tokens, pairs, values from 3 to 9


@pytest.mark.parametrize("length, windows, width", [(127, 0, 0), (128, 4, 128), (255, 4, 255), (256, 4, 256),
                                                    (511, 4, 256), (512, 8, 256)])
def test_rows_are_cut_into_windows_of_up_to_256_tokens_from_128(length, windows, width):
    assert row_windows(np.zeros((4, length), np.int64)).shape == (windows, width)


def test_the_uniform_bound_is_the_poisson_tail_for_few_ids_and_the_chi_square_tail_for_many():
    mean, bound = uniform_bound(256, 128_000)
    assert mean == pytest.approx(256 * 255 / 256_000)
    assert bound == pytest.approx(mean + 7 * math.sqrt(mean) + 3)  # 7 sigmas and a slack of 3 pairs
    mean, bound = uniform_bound(1000, 10)  # 100 ids a value: pairs far above the Poisson tail's
    assert mean == pytest.approx(49_950.0)
    assert bound == pytest.approx(50 * (9 * (1 - 2 / 81 + 7 * math.sqrt(2 / 81)) ** 3 + 990))  # 53,521.8
    assert uniform_bound(50, 1) == (1225.0, pytest.approx(1225 + 7 * 35 + 3))  # one value: no freedom left
    # two values: one degree of freedom, the chi-square tail already (6,201.5 against the Poisson tail's 4,513.2)
    assert uniform_bound(128, 2) == (4064.0, pytest.approx(32 * ((7 / 9 + 7 * math.sqrt(2 / 9)) ** 3 + 126)))


@pytest.mark.parametrize("distinct, looked_at, needed", [
    (1, 100, 16), (2, 100, 16), (2, 1, 15), (10, 0, 5), (10, 1, 5), (10, 2, 6), (1000, 1000, 4), (10_000_000, 1, 3),
    (100, 100, 4), (100, 99, 4), (100, 101, 5)])
def test_a_replay_is_named_after_as_many_samples_in_a_row_as_chance_rules_out(distinct, looked_at, needed):
    # 1 + ceil(log(10,000 x looked at) / log(distinct)), within 3..16
    assert replay_run_needed(distinct, looked_at) == needed


def test_unigram_entropy_in_nats():
    assert unigram_entropy(np.array([1, 1])) == pytest.approx(math.log(2))
    assert unigram_entropy(np.array([2, 0, 2])) == pytest.approx(math.log(2))
    assert unigram_entropy(np.array([4])) == 0.0


def test_label_shares_compare_each_shift_and_leave_ignored_positions_out():
    ids, labels = np.array([[1, 2, 3, 4]]), np.array([[2, 3, 4, -100]])
    assert label_matches(ids, labels, -100) == {"same": 0.0, "shifted": 1.0, "shifted twice": 0.0}
    assert label_matches(np.array([[5]]), np.array([[5]]), -100) == {"same": 1.0, "shifted": None,
                                                                     "shifted twice": None}
    assert label_matches(ids, np.full((1, 4), -100), -100)["same"] is None


def test_padding_is_the_mask_s_zeros_else_the_pad_id_and_an_end_of_document_pad_keeps_its_first():
    ids = np.array([[0, 0, 5, 6, 0, 7, 0, 0, 0], [5, 0, 6, 7, 8, 9, 1, 2, 3]])
    mask = np.array([[0, 1, 1, 1, 1, 1, 1, 1, 1], [1] * 9])
    assert padding_positions(ids, mask, 0, 0).tolist() == (mask == 0).tolist()
    assert not padding_positions(ids, None, None, 0).any()
    assert padding_positions(ids, None, 0, 99).tolist() == (ids == 0).tolist()  # a pad that ends no document
    shared = padding_positions(ids, None, 0, 0)  # pad = EOD: the runs at either edge, less the trailing run's first
    assert shared.astype(int).tolist() == [[1, 1, 0, 0, 0, 0, 0, 1, 1], [0] * 9]
    assert padding_positions(np.zeros((1, 3), np.int64), None, 0, None).all()
    # a row that starts with pads and ends in text: the leading run is padding whole, its first pad too
    assert padding_positions(np.array([[0, 0, 5, 6]]), None, 0, 0).astype(int).tolist() == [[1, 1, 0, 0]]


def test_a_window_with_exactly_the_bound_s_equal_pairs_looks_uniform_and_one_more_does_not():
    """256 ids over 2,040 values: a uniform draw gives 256 x 255 / (2 x 2,040) = 16 equal pairs, and the bound is
    16 + 7 x 4 + 3 = 47. A row without a window (under 128 ids) says nothing."""
    assert uniform_bound(256, 2040) == (16.0, 47.0)
    at_bound = np.concatenate([np.repeat(np.arange(47), 2), np.arange(1000, 1162)])[None]  # 47 ids twice: 47 pairs
    over = np.concatenate([np.repeat(np.arange(48), 2), np.arange(1000, 1160)])[None]
    assert uniform_windows(at_bound, 2040) == (1, 1, 47.0, 16.0, 47.0)
    assert uniform_windows(over, 2040) == (1, 0, 48.0, 16.0, 47.0)
    assert uniform_windows(at_bound[:, :127], 2040) == (0, 0, math.inf, 0.0, 0.0)


def test_a_sighting_keeps_its_step_row_and_rank_up_to_their_limits():
    for step, row, rank in ((0, 0, 0), (7, ROW_SLOTS - 1, RANK_SLOTS - 1), (123_456, 3, 2)):
        for last in (False, True):
            assert where(sighting(step, row, rank, last)) == (step, row, rank)
    # the formula, with `last` off unless asked for (a batch's own sighting is its first row's, not a last row)
    assert sighting(5, 3, 2) == ((5 * ROW_SLOTS + 3) * 2 + 0) * RANK_SLOTS + 2
    assert sighting(5, 3, 2, last=True) == ((5 * ROW_SLOTS + 3) * 2 + 1) * RANK_SLOTS + 2


@pytest.mark.parametrize("before, after, expected", [
    ((4, 2, 0, False), (4, 3, 0, False), True),  # the next row of the same batch
    ((4, 2, 0, True), (4, 3, 0, False), True),
    ((4, 2, 0, False), (4, 4, 0, False), False),  # a row skipped
    ((4, 3, 0, True), (5, 0, 0, False), True),  # the last row of a batch, then the first of the next step
    ((4, 3, 0, False), (5, 0, 0, False), False),  # not the last row: the next step's first does not follow it
    ((4, 3, 0, True), (5, 1, 0, False), False),
    ((4, 3, 0, True), (6, 0, 0, False), False),  # a step skipped
    ((4, 2, 0, False), (4, 3, 1, False), False),  # another rank
    ((4, 3, 1, True), (5, 0, 1, False), True),
    ((4, 3, 0, False), (4, 2, 0, False), False),  # backwards
])
def test_a_row_follows_the_row_before_it_or_the_last_row_of_the_batch_before(before, after, expected):
    assert follows(sighting(*before), sighting(*after)) is expected


def test_follows_nothing_without_both_sightings():
    assert not follows(None, sighting(0, 0, 0)) and not follows(sighting(0, 0, 0), None)


def test_the_memory_keeps_the_newest_capacity_digests_in_blocks_and_forgets_the_oldest_block():
    with pytest.raises(ValueError, match=f"keep at least {BLOCKS} digests"):
        Sightings(BLOCKS - 1)
    memory = Sightings(64)  # blocks of 4
    memory.add_many(list(range(3)), [10, 11, 12])
    assert (len(memory.frozen), len(memory)) == (0, 3)
    memory.add(3, 13)  # the 4th fills a block: frozen
    assert (len(memory.frozen), len(memory.recent)) == (1, 0)
    memory.add(2, 99)  # held already: its first sighting stays
    assert memory.get(2) == 12
    memory.add_many(list(range(4, 64)), list(range(14, 74)))  # 64 in all: the oldest block goes
    assert len(memory) == 60 and memory.get(0) is None and memory.get(3) is None and memory.get(4) == 14
    assert memory.get(63) == 73
    assert memory.state(before=20) == [[4, 5, 6, 7, 8, 9], [14, 15, 16, 17, 18, 19]]
    again = Sightings.from_state(64, memory.state())
    assert again.get_many([4, 63, 0]) == [14, 73, None]


def test_sightings_of_a_long_run_are_kept_to_the_unit_frozen_saved_and_read_back():
    """A million steps on make sightings above 2**53, where a float would round them: frozen, saved in a
    checkpoint's state and read back (as the state's lists, or as older checkpoints' dict of digest to sighting,
    whose keys JSON made strings), each comes back exact."""
    values = [sighting(10**6 + k, 3, 7, last=k % 2 == 1) for k in range(10)]
    assert min(values) > 2**53 and all(int(float(v)) != v for v in values)  # a float rounds every one
    digests = [2**63 + k for k in range(10)]  # above int64: the digests are uint64
    memory = Sightings(64)  # blocks of 4: two frozen, two in the dict
    memory.add_many(digests, values)
    assert (len(memory.frozen), len(memory.recent)) == (2, 2)
    assert memory.get_many(digests) == values
    assert memory.state() == [digests, values]
    for state in (memory.state(), {str(d): v for d, v in zip(digests, values)}):
        assert Sightings.from_state(64, state).get_many(digests) == values

def test_the_bytes_a_sightings_table_holds_are_its_frozen_blocks_16_bytes_a_digest():
    """What the memory benchmark reads: 8 bytes of digest and 8 of sighting for each frozen digest; the newest
    block, still a dict, is not counted."""
    table = Sightings(BLOCKS * 4)  # blocks of 4 digests
    assert table.nbytes() == 0
    table.add_many(list(range(1, 10)), list(range(9)))  # two blocks frozen, one digest in the dict
    assert [len(keys) for keys, _ in table.frozen] == [4, 4] and len(table.recent) == 1
    assert table.nbytes() == 8 * 16


def test_plain_rows_hold_at_most_an_eighth_of_their_length_in_distinct_ids_and_one_id_in_two_fifths_of_them():
    """Rows of 64: plain with 8 distinct ids or fewer, one of them 26 times or more (0.4 x 64 = 25.6)."""
    def row(top: int, others: int) -> np.ndarray:
        return np.concatenate([np.full(top, 5), 100 + np.arange(64 - top) % others])

    rows = np.array([row(26, 7), row(25, 7), row(26, 8), row(64, 1), np.arange(64)])
    assert _plain_rows(rows).tolist() == [True, False, False, True, False]


def test_a_row_whose_commonest_id_fills_exactly_two_fifths_of_it_is_plain():
    """Rows of 40 with 5 distinct ids (5 x 8 = 40): plain when one id is 16 of them (0.4 x 40), not at 15."""
    exactly = np.concatenate([np.full(16, 7), np.repeat([1, 2, 3, 4], 6)])
    below = np.concatenate([np.full(15, 7), np.repeat([1, 2, 3, 4], [7, 6, 6, 6])])
    assert _plain_rows(np.array([exactly, below])).tolist() == [True, False]


@pytest.mark.parametrize("ranks, own, other, named", [
    (2, 0, 8, True), (2, 0, 7, False),  # at least 8 from other ranks
    (2, 2, 12, True), (2, 2, 11, False),  # and at least 4 x (W - 1) x (own + 1)
    (3, 1, 16, True), (3, 1, 15, False), (4, 0, 12, True), (4, 0, 11, False), (1, 0, 100, False)])
def test_samples_from_other_ranks_are_named_from_4_x_the_other_ranks_x_this_rank_s_own_returns_plus_one(
        ranks, own, other, named):
    stream = StreamAudit(AuditSettings(vocab_size=258))
    stream.seen.ranks.update(range(ranks))
    stream.from_own_rank, stream.from_other_ranks = own, other
    found = []
    stream._shared_over_time(lambda code, line: found.append(code))
    assert found == (["same-data-across-ranks"] if named else [])


def test_earlier_sightings_are_counted_by_whose_they_were_and_every_rank_a_batch_came_from_is_kept():
    stream = StreamAudit(AuditSettings(vocab_size=258), rank=1)
    stream._count_by_rank([sighting(0, 0, 0), sighting(1, 0, 1), None, sighting(2, 3, 1), sighting(2, 4, 3)])
    assert (stream.from_own_rank, stream.from_other_ranks, stream.ranks_seen) == (2, 2, {0, 1, 3})
    assert StreamAudit(AuditSettings(vocab_size=258)).rank == 0
    seen = Seen()
    seen.enter((11, [5, 6]), step=3, rank=2)
    assert seen.ranks == {2}
    assert seen.samples.get_many([5, 6]) == [sighting(3, 0, 2), sighting(3, 1, 2, last=True)]


def test_the_memory_keeps_at_least_16_digests_freezes_a_block_of_capacity_over_16_and_finds_digests_exactly():
    with pytest.raises(ValueError, match=r"^capacity 15: keep at least 16 digests$"):
        Sightings(BLOCKS - 1)
    smallest = Sightings(BLOCKS)  # blocks of one digest: each frozen as soon as it comes
    smallest.add(2**63 + 5, 7)
    assert len(smallest.frozen) == 1
    assert smallest.get_many([1, 2**63 + 5]) == [None, 7]
    assert smallest.get_many([1, 2**63 + 6]) == [None, None]  # as float64 the two would be one number
    uneven = Sightings(2 * BLOCKS + 1)  # blocks of 33 // 16 = 2 digests
    uneven.add_many([11, 12], [1, 2])
    assert (len(uneven.frozen), uneven.recent) == (1, {})


def test_a_live_audit_that_has_seen_nothing_saves_a_state_of_nothing():
    from helpers.audit.live import Auditor

    state = Auditor(vocab_size=258).state_dict()
    assert {key: state[key] for key in ("step", "tokens", "high_ids", "last_sighting", "chain", "looked_at",
                                        "by_rank")} == {"step": 0, "tokens": 0, "high_ids": 0, "last_sighting": None,
                                                        "chain": 0, "looked_at": 0, "by_rank": [0, 0]}
