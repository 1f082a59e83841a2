"""The audit's findings, line for line, on batches built to hold one bug each out of real text (the first
literature document, as bytes): what each line says and the values in it (how many ids, which, the shares of each
label layout, a uniform draw's equal pairs and the bound real text clears) are worked out here, and the limits at
which a finding starts (64 ids of one value, rows of 8 ids, two steps of one constant row)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from helpers.audit import audit, audit_ranks
from helpers.common.errors import UserError
from helpers.audit.eval_overlap import eval_overlap
from helpers.audit.sightings import sighting
from helpers.audit.stream import AuditSettings, StreamAudit
from helpers.decontamination.evals import EvalSet
from helpers.tokenizers.zoo import load_tokenizer

V = 258  # the bytes tokenizer's vocabulary


def literature_bytes(corpus_dir, documents: int) -> np.ndarray:
    """The first `documents` literature documents of the corpus, joined, as byte ids."""
    text = "".join(json.loads(line)["text"] for line in
                   (corpus_dir / "literature.jsonl").read_text(encoding="utf-8").splitlines()[:documents])
    return np.array(load_tokenizer("bytes").encode(text), dtype=np.int64)


@pytest.fixture(scope="module")
def text_ids(corpus_dir) -> tuple[np.ndarray, np.ndarray]:
    """4 rows of 256 ids of real text and their labels one token on."""
    text = json.loads((corpus_dir / "literature.jsonl").read_text(encoding="utf-8").splitlines()[0])["text"]
    tokenizer = load_tokenizer("bytes")
    assert tokenizer.vocab_size == V
    windows = np.array(tokenizer.encode(text)[:4 * 257], dtype=np.int64).reshape(4, 257)
    return windows[:, :256].copy(), windows[:, 1:].copy()


def findings(batches, **settings) -> list[tuple[str, int, str]]:
    return [(f.code, f.step, f.message) for f in audit(batches, **{"vocab_size": V, **settings}).findings]


def test_ids_outside_the_vocabulary_are_counted_and_the_extremes_named(text_ids):
    ids, labels = text_ids
    bad = ids.copy()
    bad[0, 5], bad[1, 7] = V + 10, -3
    assert findings([{"input_ids": bad, "labels": labels}]) == [(
        "id-out-of-range", 0, "2 of 1,024 input ids outside [0, 258) (those: smallest -3, largest 268); the embedding "
        "lookup fails or reads another row; fix: pass the tokenizer's vocabulary size to the model, or check the ids' "
        "dtype and tokenizer")]
    bad_labels = labels.copy()
    bad_labels[2, 3] = -5
    largest = int(labels.max())
    assert findings([{"input_ids": ids, "labels": bad_labels}]) == [(
        "id-out-of-range", 0, f"labels hold ids outside [0, 258) (largest {largest}, smallest -5) other than "
        "ignore_index -100; fix: mask with -100, not another value")]


@pytest.mark.parametrize("shape, steps, step", [((2, 32), 1, 0), ((2, 31), 1, None), ((1, 64), 1, None),
                                                ((1, 64), 2, 1), ((1, 63), 2, None)])
def test_a_batch_of_one_id_is_named_from_64_ids_and_one_row_of_it_only_on_the_second_step(shape, steps, step):
    found = findings([{"input_ids": np.full(shape, 7)}] * steps)
    size = shape[0] * shape[1]
    assert found == ([] if step is None else [(
        "constant-batch", step, f"every one of the batch's {size} ids is 7: a failed read or an empty buffer; fix: "
        "check the reader returns data (a missing file must be an error)")])


@pytest.mark.parametrize("length, named", [(8, True), (7, False)])
def test_a_row_of_zeros_among_real_rows_is_named_from_rows_of_8_ids(text_ids, length, named):
    ids = text_ids[0][:, :length].copy()
    ids[1] = 0
    assert ("constant-batch", 0, "1 of 4 rows are all id 0 (a zero-filled buffer); fix: check the reader returns "
            "data for every sample") in findings([{"input_ids": ids}]) if named else \
        all(code != "constant-batch" for code, _, _ in findings([{"input_ids": ids}]))


def test_a_row_of_zeros_that_is_padding_is_not_a_zero_filled_buffer(text_ids):
    """A row of id 0 is padding when the mask is 0 on it, or when 0 is the pad id (and no mask is given); then it
    is an empty document padded, not a failed read."""
    ids = text_ids[0][:, :64].copy()
    ids[1] = 0
    named = ("constant-batch", 0, "1 of 4 rows are all id 0 (a zero-filled buffer); fix: check the reader returns "
             "data for every sample")
    mask = np.ones_like(ids)
    mask[1] = 0
    assert named not in findings([{"input_ids": ids, "attention_mask": mask}], pad_id=0)
    assert named in findings([{"input_ids": ids, "attention_mask": np.ones_like(ids)}], pad_id=0)
    assert named not in findings([{"input_ids": ids}], pad_id=0)
    assert named in findings([{"input_ids": ids}], pad_id=7)


def test_ids_handed_over_as_uint16_for_a_larger_vocabulary_are_named_at_once(text_ids):
    ids = text_ids[0].astype(np.uint16)
    assert findings([{"input_ids": ids}], vocab_size=128_256) == [(
        "id-wraparound", 0, "ids handed over as uint16 for a vocabulary of 128,256: every id from 65,536 up has lost "
        "its top bits; fix: store them as int32 (Megatron's choice above 65,500 ids) or int64")]
    assert findings([{"input_ids": ids}]) == []  # a vocabulary that fits in 16 bits


def test_random_ids_are_named_with_a_uniform_draw_s_pairs_and_the_bound_real_text_clears():
    ids = np.random.default_rng(0).integers(0, 50_000, size=(4, 256))
    mean = 256 * 255 / (2 * 50_000)
    bound = mean + 7 * math.sqrt(mean) + 3
    (code, step, message), = findings([{"input_ids": ids}], vocab_size=50_000)
    assert (code, step) == ("random-tokens", 0)
    assert message == (
        f"4 of 4 windows of 256 ids look uniformly random (fewest equal pairs 0, a uniform draw gives {mean:.2f}, real "
        f"text here more than {bound:.1f}); unigram entropy 6.91 of ln V {math.log(50_000):.2f} nats over 1,024 "
        "tokens; fix: load real data, and make a missing file an error instead of a torch.randint fallback")


def test_labels_in_the_other_layout_are_named_with_the_share_of_each_layout(text_ids):
    ids, labels = text_ids
    (code, _, message), = findings([{"input_ids": ids, "labels": ids}], labels="shifted")
    assert code == "labels-misaligned" and message.startswith(
        "expected labels one token ahead of input_ids, but they are equal to input_ids (share of label positions "
        "matching each layout: same 1.00, shifted 0.")
    assert message.endswith("); the model trains on the wrong target; fix: set y[t] = x[t+1] (a window of length+1 "
                            "tokens, split)")
    (code, _, message), = findings([{"input_ids": ids, "labels": labels}], labels="same")
    assert code == "labels-misaligned" and message.startswith(
        "expected labels equal to input_ids (the model shifts them itself), but they are one token ahead (share of "
        "label positions matching each layout: same 0.") and ", shifted 1.00, shifted twice 0." in message
    assert message.endswith("); the model trains on the wrong target; fix: pass input_ids as labels and let the model "
                            "shift")
    twice = np.roll(ids, -2, axis=1)
    (code, _, message), = findings([{"input_ids": ids, "labels": twice}])
    assert code == "labels-misaligned" and message.startswith(
        "labels are neither input_ids nor input_ids one token on: they are two tokens ahead (share of label "
        "positions matching each layout: same 0.")
    assert message.endswith("); fix: labels are input_ids (the model shifts) or x[t+1]")
    assert findings([{"input_ids": ids, "labels": labels}]) == findings([{"input_ids": ids, "labels": ids}]) == []


@pytest.fixture(scope="module")
def batches(corpus_dir) -> list[np.ndarray]:
    """16 batches of 8 rows of 64 ids of real text, every row distinct."""
    ids = literature_bytes(corpus_dir, 3)[:16 * 8 * 64].reshape(16, 8, 64)
    assert len({row.tobytes() for batch in ids for row in batch}) == 128
    return list(ids)


@pytest.fixture(scope="module")
def many_batches(corpus_dir) -> list[np.ndarray]:
    """48 batches of 8 rows of 64 ids of real text, every row distinct."""
    ids = literature_bytes(corpus_dir, 3)[:48 * 8 * 64].reshape(48, 8, 64)
    assert len({row.tobytes() for batch in ids for row in batch}) == 48 * 8
    return list(ids)


# A restart's step: the first FAR_BACK (8) steps can hold no return that counts and are no history; the 12 after
# them are the history a restart is judged against.
RESTART = 20


def replay_lines(stream) -> list[tuple[str, int, str]]:
    return [found for found in findings([{"input_ids": batch} for batch in stream])
            if found[0] in ("repeated-batch", "repeated-samples")]


def test_a_batch_dealt_again_at_once_or_later_is_named_with_the_step_it_first_came(batches):
    from helpers.audit.stream import REPLAY_CAUSES, REPLAY_FIX

    assert replay_lines(batches) == []
    assert replay_lines(batches + [batches[-1]]) == [(
        "repeated-batch", 16, "this batch equals the batch just before it: each batch comes again at once, as "
        "DataLoader workers that each read the whole stream give it (an IterableDataset that does not split its data "
        "by torch.utils.data.get_worker_info()); fix: give each worker its own share of the data (or use a map-style "
        "dataset with a sampler)")]
    assert replay_lines(batches + [batches[3]]) == [(
        "repeated-batch", 16, f"this batch equals the one at step 3 (rank 0), its samples in the same order: "
                              f"{REPLAY_CAUSES}; {REPLAY_FIX}")]
    regrouped = np.concatenate([batches[2][4:], batches[3][:4]])  # the same samples in order, cut into other batches
    assert replay_lines(batches + [regrouped]) == [(
        "repeated-samples", 16, "8 of 8 samples come back in the order they were trained on at step 2 (8 in a row; a "
        f"new epoch's shuffle of 128 samples gives 4 in a row less than once in 10,000 runs): {REPLAY_CAUSES}; "
        f"{REPLAY_FIX}")]


def test_ranks_handed_the_same_batch_are_named_at_the_first_step(batches):
    report = audit_ranks([[{"input_ids": b} for b in batches[:2]]] * 2, vocab_size=V)
    assert [(f.code, f.step, f.rank, f.message) for f in report.findings] == [
        ("same-batch-across-ranks", 0, 1, "the same batch as rank 0 at this step: the ranks train on the same data, "
         "so W GPUs do the work of one; fix: give the sampler its rank and world size (DistributedSampler(dataset, "
         "num_replicas=W, rank=r), or the loader's rank=)")]  # once: a report names each bug where it starts


@pytest.mark.parametrize("lowest, inside", [(0, 16), (V - 8, 8)])
def test_a_pooled_draw_s_entropy_counts_every_id_inside_the_vocabulary_and_none_outside(lowest, inside):
    """16 ids, each 64 times, shuffled: pooled, they look drawn uniformly. The entropy counts the ids inside
    [0, V): all 16 from id 0 on (ln 16), or the 8 below V of those from V - 8 (ln 8; the 8 from V on are out of
    range). Equal pairs: 16 x C(64, 2); a uniform draw over 16 values gives 1,024 x 1,023 / (2 x 16)."""
    ids = np.random.default_rng(0).permutation(np.repeat(np.arange(lowest, lowest + 16), 64)).reshape(4, 256)
    found = {code: message for code, _, message in findings([{"input_ids": ids}])}
    assert found["random-tokens"].startswith(
        f"the 1,024 ids look uniformly random over ids {lowest} to {lowest + 15} (equal pairs 32,256, a uniform draw "
        "gives 32736.0, real text more than ")
    assert f"; unigram entropy {math.log(inside):.2f} of ln V {math.log(V):.2f} nats over 1,024 tokens; fix: " \
        in found["random-tokens"]
    assert set(found) == ({"random-tokens"} if lowest == 0 else {"random-tokens", "id-out-of-range"})


def test_audit_reads_at_most_max_steps_and_looks_for_the_evaluation_items_it_is_given(text_ids):
    """`audit(..., max_steps=2)` reads two of three batches; `overlap=` names a row holding 32 tokens of an item
    (the first window of it, once)."""
    ids, labels = text_ids
    tokenizer = load_tokenizer("bytes")
    item = tokenizer.decode(ids[1, 100:160].tolist())
    overlap = eval_overlap([EvalSet("bench", ("item-1",), (item,))], tokenizer)
    report = audit([{"input_ids": ids, "labels": labels}] * 3, vocab_size=V, overlap=overlap, max_steps=2)
    assert report.statistics[0]["steps"] == 2
    (finding,) = report.findings
    assert (finding.code, finding.step) == ("eval-overlap", 0)
    assert finding.message.startswith(f"row 1, tokens 100-132 hold an n-gram of bench item-1 (32 tokens: "
                                      f"{item[:32]!r}); 1 of 4 rows hold one; fix: ")
    assert audit([{"input_ids": ids, "labels": labels}] * 3, vocab_size=V).statistics[0]["steps"] == 3


def test_a_bad_batch_is_refused_with_the_step_it_came_at(text_ids):
    ids, _ = text_ids
    with pytest.raises(UserError, match=r"^step 1: input_ids holds float64 values that are not whole numbers"):
        audit([{"input_ids": ids}, {"input_ids": ids + 0.5}], vocab_size=V)


def test_audit_ranks_refuses_no_stream_an_empty_one_and_settings_without_a_vocabulary(text_ids):
    ids, _ = text_ids
    with pytest.raises(UserError, match=r"^no stream given; fix: pass one iterable of batches per rank$"):
        audit_ranks([], vocab_size=V)
    with pytest.raises(UserError) as empty:
        audit_ranks([[], []], vocab_size=V)
    assert str(empty.value) == ("the stream is empty: no batch to audit; fix: check the loader yields batches (its "
                                "length, drop_last, the resume position)")
    with pytest.raises(TypeError, match=r"^audit_ranks\(\) missing 1 required keyword-only argument: 'vocab_size'$"):
        audit_ranks([[{"input_ids": ids}]])
    with pytest.raises(TypeError, match=r"^audit\(\) missing 1 required keyword-only argument: 'vocab_size'$"):
        audit([{"input_ids": ids}])


def test_the_statistics_hold_the_entropy_of_the_ids_inside_the_vocabulary_and_0_without_any(text_ids):
    ids, _ = text_ids
    counts = np.bincount(ids.ravel(), minlength=V)
    p = counts[counts > 0] / ids.size
    statistics = audit([{"input_ids": ids}], vocab_size=V).statistics[0]
    assert statistics["entropy"] == pytest.approx(float(-(p * np.log(p)).sum()), abs=1e-12)
    assert statistics["entropy"] > 3
    assert (statistics["steps"], statistics["rows"], statistics["length"], statistics["tokens"]) == (1, 4, 256, 1024)
    outside = audit([{"input_ids": np.full((2, 64), V + 5)}], vocab_size=V).statistics[0]
    assert outside["entropy"] == 0.0 and outside["max_id"] == V + 5


def stream_at(step: int, seen: int) -> StreamAudit:
    """One rank's audit at `step`, having seen `seen` distinct samples (digests 1 to `seen`, at step 0)."""
    stream = StreamAudit(AuditSettings(vocab_size=V))
    stream.step = step
    stream.seen.samples.add_many(list(range(1, seen + 1)), [sighting(0, row, 0) for row in range(seen)])
    return stream


@pytest.mark.parametrize("seen, rows, step, named", [
    (1001, 2, 1000, True),  # a reshuffle deals these 2 in this order once in 1001 x 1000 = 1,000 x (1000 + 1): named
    (1000, 2, 1000, False),  # 999,000 orders: not yet
    (1000, 2, 998, True),  # 999,000 = 1,000 x (998 + 1)
    (1000, 1, 1, False),  # one row is no order
])
def test_a_batch_dealt_again_in_its_order_is_named_once_a_reshuffle_deals_it_less_than_once_in_1000_steps(
        seen, rows, step, named):
    """`repeated-batch` for a whole batch equal to an earlier step's: once perm(samples seen, rows) reaches
    1,000 x (steps so far); never for a batch of the same step, nor one holding a sample twice."""
    stream = stream_at(step, seen)
    assert stream._redrawn(sighting(step - 1, 0, 0), list(range(1, rows + 1))) is named
    if named:
        assert not stream._redrawn(None, list(range(1, rows + 1)))
        assert not stream._redrawn(sighting(step, 0, 1), list(range(1, rows + 1)))  # another rank, this step
        assert not stream._redrawn(sighting(step - 1, 0, 0), [1] * rows)  # the same sample in every row


def regrouped(stream: StreamAudit, rows: list[int]) -> list[tuple[str, str]]:
    found = []
    stream._regrouped(rows, lambda code, line: found.append((code, line)))
    return found


@pytest.mark.parametrize("seen, distinct, step, named", [
    (132, 4, 33, True),  # C(132, 4) = 12,082,785 groups of 4, against 10,000 x 34 x 34 = 11,560,000
    (132, 4, 34, False),  # against 10,000 x 35 x 35 = 12,250,000
    (284, 2, 1, True),  # C(284, 2) = 40,186, against 10,000 x 2 x 2
    (283, 2, 1, False),  # C(283, 2) = 39,903
])
def test_the_same_samples_in_another_order_are_named_once_a_reshuffle_groups_them_less_than_once_in_10000(
        seen, distinct, step, named):
    """`repeated-batch` for a batch of the samples of an earlier one in another order: once the groups of that
    many samples among those seen reach 10,000 x (steps so far) squared."""
    stream = stream_at(0, seen)
    rows = list(range(1, distinct + 1))
    assert regrouped(stream, rows) == []
    stream.step = step
    expected = [("repeated-batch", f"this batch holds the same {distinct} samples as the one at step 0, in another "
                 "order: the batches were made once and only their order is shuffled each epoch, so the same samples "
                 "always share a step; fix: shuffle the samples, then batch them (DataLoader(dataset, shuffle=True, "
                 "batch_size=...)), not a list of batches")]
    assert regrouped(stream, rows[::-1]) == (expected if named else [])


def test_a_batch_is_known_by_the_sum_of_its_samples_digests_and_their_count():
    stream = stream_at(0, 1000)
    assert regrouped(stream, [10, 20]) == []  # key 30 + 2
    stream.step = 1
    assert regrouped(stream, [1, 2, 28]) == []  # key 31 + 3: another batch
    assert regrouped(stream_at(1, 1000), [7]) == []  # one sample is no group


def test_labels_matching_one_layout_at_99_in_100_positions_count_as_that_layout(text_ids):
    ids, labels = text_ids
    row, next_ids = ids[:1, :101], labels[:1, :101].copy()  # one token on: 100 positions compared
    next_ids[0, 50] = (next_ids[0, 50] + 1) % V  # 99 of 100 one token on
    assert audit([{"input_ids": row, "labels": next_ids}], vocab_size=V).statistics[0]["labels"] == "shifted"
    next_ids[0, 60] = (next_ids[0, 60] + 1) % V  # 98 of 100
    assert audit([{"input_ids": row, "labels": next_ids}], vocab_size=V).statistics[0]["labels"] is None


def test_a_batch_whose_labels_are_all_ignored_is_named_no_labels(text_ids):
    ids, _ = text_ids
    assert findings([{"input_ids": ids[:1, :64], "labels": np.full((1, 64), -100)}]) == [(
        "no-labels", 0, "every one of the batch's 64 labels is -100 (ignored): nothing is trained, the loss is 0 or "
        "NaN and the weights never change; fix: labels are the ids to predict (input_ids, or x[t+1]), -100 only on "
        "padding and on what must not be learned (a prompt)")]
    assert findings([{"input_ids": ids[:1, :63], "labels": np.full((1, 63), -100)}]) == []


@pytest.mark.parametrize("vocab, expected", [(65_536, {"labels-misaligned"}), (100_000, {"id-wraparound"})])
def test_uint16_ids_leave_the_labels_unread_only_for_a_vocabulary_they_cannot_hold(text_ids, vocab, expected):
    """ids handed over as uint16: for 65,536 ids they hold every one, and labels equal to the inputs are named;
    above that, the ids have lost their top bits and the wrap-around finding says it all."""
    ids, _ = text_ids
    batch = {"input_ids": ids.astype(np.uint16), "labels": ids.astype(np.uint16)}
    assert {code for code, _, _ in findings([batch], vocab_size=vocab, labels="shifted")} == expected


@pytest.mark.parametrize("mask", ["none", "right", "inverted"])
def test_documents_ending_in_eos_never_labelled_are_named_unless_the_mask_is_the_wrong_way_round(text_ids, mask):
    """4 rows of two documents of 30 ids, each ended by EOS (257), then two ids of padding (pad = eos); labels one
    on, with every EOS label ignored (as a collator that masks the pad id does): 8 documents end with EOS and none
    is ever a label. With the mask the wrong way round, that is the finding, and the documents go unread."""
    ids, _ = text_ids
    eos = 257
    rows = np.array([np.concatenate([ids[r, :30], [eos], ids[r, 40:70], [eos, eos, eos]]) for r in range(4)])
    labels = np.concatenate([rows[:, 1:], np.full((4, 1), eos)], axis=1)
    labels[labels == eos] = -100
    batch = {"input_ids": rows, "labels": labels}
    if mask != "none":
        right = np.ones_like(rows)
        right[:, 62:] = 0
        batch["attention_mask"] = right if mask == "right" else 1 - right
    found = findings([batch], eod_id=eos, pad_id=eos)
    if mask == "inverted":
        assert [code for code, _, _ in found] == ["attention-mask-inverted"]
    else:
        assert found == [("eos-not-learned", 0, "8 documents end with the EOS id 257, but no label is ever 257: the "
                          "model never learns to end a document (with pad = eos, a collator that sets the pad id's "
                          "labels to -100 takes every EOS out of the loss); fix: give the tokenizer a pad token of its "
                          "own (not eos), or set labels from the attention mask, so the EOS ending each document is a "
                          "label")]


@pytest.fixture(scope="module")
def two_windows_of_16384(corpus_dir) -> list[np.ndarray]:
    """Two batches of 64 rows of 256 ids of real text (bytes), 16,384 ids each, none repeated."""
    ids = literature_bytes(corpus_dir, 8)[:2 * 64 * 256]
    assert ids.size == 2 * 64 * 256
    return list(ids.reshape(2, 64, 256))


def test_the_highest_id_is_judged_once_when_the_first_16384_tokens_have_come(two_windows_of_16384):
    """Bytes under a 50,257-id model: after 16,384 tokens the highest id (at most 257) is far below 70% of the
    vocabulary, named once, with the tokenizer's own size when it is given."""
    first, second = two_windows_of_16384
    highest = int(first.max())
    found = findings([{"input_ids": first}, {"input_ids": second}], vocab_size=50_257, tokenizer_vocab=V)
    assert [(code, step) for code, step, _ in found] == [("vocab-mismatch", 0)]
    assert found[0][2].startswith(f"the highest id in the first 16,384 tokens is {highest}, 0% of the model's "
                                  f"50,257-id vocabulary; the tokenizer given has {V} ids (real text reaches 77% ")


def test_ids_from_65536_up_are_counted_over_the_stream(text_ids):
    ids, _ = text_ids
    high = ids.copy()
    high[0, :5] = 70_000
    stream = StreamAudit(AuditSettings(vocab_size=128_256))
    for _ in range(2):
        stream.look({"input_ids": high})
    assert stream.high_ids == 10


def test_ids_at_the_vocabulary_s_edges_are_counted_and_the_smallest_outside_named(text_ids):
    """Id V is the first outside [0, V), id 0 the first inside; labels too."""
    ids, labels = text_ids
    bad = ids.copy()
    bad[0, 5], bad[1, 7], bad[2, 9] = V, V + 4, 0
    assert findings([{"input_ids": bad}]) == [(
        "id-out-of-range", 0, "2 of 1,024 input ids outside [0, 258) (those: smallest 258, largest 262); the embedding "
        "lookup fails or reads another row; fix: pass the tokenizer's vocabulary size to the model, or check the ids' "
        "dtype and tokenizer")]
    at_edge = labels.copy()
    at_edge[3, 3] = V
    assert findings([{"input_ids": ids, "labels": at_edge}]) == [(
        "id-out-of-range", 0, f"labels hold ids outside [0, 258) (largest 258, smallest {int(labels.min())}) other "
        "than ignore_index -100; fix: mask with -100, not another value")]
    garbage = ids.copy()
    garbage[0, 3] = np.iinfo(np.int64).min  # not a float's infinity cast back: out of range like any other
    assert findings([{"input_ids": garbage}])[0][2].startswith(
        "1 of 1,024 input ids outside [0, 258) (those: smallest -9,223,372,036,854,775,808, largest "
        "-9,223,372,036,854,775,808)")


def test_float16_ids_past_65504_are_named_rounded_not_out_of_range(text_ids):
    """float16 holds nothing above 65,504: those ids become infinities, which are the rounding's doing (named
    ids-rounded), not ids outside the vocabulary; the highest id kept is the highest float16 holds below."""
    ids, _ = text_ids
    report = audit([{"input_ids": torch.tensor(ids * 600).to(torch.float16)}] * 2, vocab_size=128_256)
    assert [(f.code, f.step) for f in report.findings] == [("ids-rounded", 0)]
    assert report.statistics[0]["max_id"] == 65_408


def test_the_entropy_counts_every_batch_of_the_stream_and_a_batch_of_one_id_is_read(text_ids):
    ids, _ = text_ids
    counts = np.bincount(np.concatenate([ids[:2].ravel(), ids[2:].ravel()]), minlength=V)
    p = counts[counts > 0] / counts.sum()
    statistics = audit([{"input_ids": ids[:2]}, {"input_ids": ids[2:]}], vocab_size=V).statistics[0]
    assert statistics["entropy"] == pytest.approx(float(-(p * np.log(p)).sum()), abs=1e-12)
    assert audit([{"input_ids": np.array([[5]])}], vocab_size=V).findings == []
    one = audit([{"input_ids": np.array([[0]])}], vocab_size=V).statistics[0]  # one id, no window of 128
    assert (one["max_id"], one["uniform_pairs"], one["fewest_pairs"]) == (0, 0.0, math.inf)
    assert (one["rows"], one["length"]) == (1, 1)


def test_a_replay_is_named_from_exactly_the_run_chance_rules_out_and_across_a_batch_s_end(batches):
    """128 samples seen: 4 in a row in their old order is the shortest run a reshuffle gives less than once in
    10,000 runs. 4 in a row, half a batch, are named; 3 are not; 2 ending one batch and 2 starting the next are a
    run of 4, named in the second batch."""
    from helpers.audit.stream import REPLAY_CAUSES, REPLAY_FIX

    others = np.stack([batches[9][3], batches[7][1], batches[11][6], batches[5][2]])  # seen before, out of order

    def named(step: int, here: int, rows: int) -> list[tuple[str, int, str]]:
        return [("repeated-samples", step, f"{here} of {rows} samples come back in the order they were trained on at "
                 "step 2 (4 in a row; a new epoch's shuffle of 128 samples gives 4 in a row less than once in 10,000 "
                 f"runs): {REPLAY_CAUSES}; {REPLAY_FIX}")]

    assert replay_lines(batches + [np.concatenate([batches[2][4:8], others])]) == named(16, 4, 8)
    assert replay_lines(batches + [np.concatenate([batches[2][5:8], others[:3]])]) == []
    ending, starting = np.concatenate([others, batches[2][4:6]]), np.concatenate([batches[2][6:8], others[:2]])
    assert replay_lines(batches + [ending, starting]) == named(17, 2, 4)


def test_the_pooled_test_reads_a_batch_of_1024_ids_alone_and_pools_smaller_ones_over_steps():
    """A batch of 1,024 ids or more is judged alone (the pool starts again after it); smaller ones are pooled
    with the steps before them until 1,024 ids are held."""
    rng = np.random.default_rng(0)

    def draw(tokens: int) -> np.ndarray:
        return rng.permutation(np.repeat(np.arange(16), tokens // 16)).reshape(-1, 64)

    alone = findings([{"input_ids": draw(1024)}, {"input_ids": draw(512)}])
    assert [(code, step) for code, step, _ in alone] == [("random-tokens", 0)]
    pooled = findings([{"input_ids": draw(512)}, {"input_ids": draw(512)}])
    assert [(code, step) for code, step, _ in pooled] == [("random-tokens", 1)]
    assert pooled[0][2].startswith("the 1,024 ids over 2 steps look uniformly random over ids 0 to 15 (equal pairs ")
    assert pooled[0][2].endswith("; fix: load real data, and make a missing file an error instead of a torch.randint "
                                 "fallback")


def test_ranks_sharing_half_a_batch_are_named_and_one_shared_row_only_on_the_second_step_in_a_row(batches):
    """Samples equal to another rank's at the same step: named from half of the batch (4 of 8, 2 of 4; 3 of 8 is
    not); a batch of one row only when the step before shared too."""
    def found(first, second) -> list[tuple[str, int, int]]:
        report = audit_ranks([[{"input_ids": b} for b in first], [{"input_ids": b} for b in second]], vocab_size=V)
        return [(f.code, f.step, f.rank) for f in report.findings]

    def shared(count: int, rows: int = 8) -> np.ndarray:
        return np.concatenate([batches[0][:count], batches[1][:rows - count]])

    assert found([batches[0]], [shared(3)]) == []
    assert found([batches[0]], [shared(4)]) == found([batches[0][:4]], [shared(2, 4)]) == [
        ("same-batch-across-ranks", 0, 1)]
    rows = [batches[0][k:k + 1] for k in range(3)]
    assert found(rows, rows) == [("same-batch-across-ranks", 1, 1)]


def test_ranks_that_each_read_every_sample_are_named_once_8_came_from_another_rank_s_earlier_steps(batches):
    """Rank 0 reads the 128 samples in order, rank 1 in a shuffled order of its own: each is named at the step
    where 8 of its samples had been trained on by the other rank before (and none of its own came back)."""
    rows = np.concatenate(batches)
    shuffled = rows[np.random.default_rng(0).permutation(len(rows))].reshape(16, 8, -1)
    report = audit_ranks([[{"input_ids": b} for b in batches], [{"input_ids": b} for b in shuffled]], vocab_size=V)
    line = ("8 samples this rank trained on had been trained on by another rank at an earlier step, against 0 of its "
            "own seen again: every rank reads the whole dataset in an order of its own, so each sample is trained on "
            "once per rank and an epoch costs W times its work; fix: give each rank its share (DistributedSampler("
            "dataset, num_replicas=W, rank=r), or the loader's rank=), and one seed on every rank")
    assert [(f.code, f.step, f.rank, f.message) for f in report.findings] == [
        ("same-data-across-ranks", 4, 1, line), ("same-data-across-ranks", 6, 0, line)]


CAST_FIX = "fix: keep token ids as int64 (torch.long)"


def test_ids_handed_over_as_bfloat16_are_named_by_their_type_even_when_every_id_is_exact(text_ids):
    """bfloat16 holds every integer up to 256 only: handed over in it for a 128k vocabulary, the ids are named
    rounded by the type alone, though these (bytes) are all below 256 and on no grid to see."""
    ids, _ = text_ids
    report = audit([{"input_ids": torch.tensor(ids).to(torch.bfloat16)}], vocab_size=128_256)
    assert [(f.code, f.step, f.message) for f in report.findings] == [(
        "ids-rounded", 0, "ids handed over as bfloat16, which holds integers exactly only up to 256: ids above it "
        f"were rounded before the audit saw them; {CAST_FIX} from the loader to the embedding; cast only the "
        "model's activations")]


def test_int64_ids_all_on_bfloat16_s_grid_are_named_cast_and_back(text_ids):
    ids, _ = text_ids
    cast = torch.tensor(ids * 400).to(torch.bfloat16).long().numpy()  # 400 to 102,000, rounded to bfloat16's grid
    above = int((cast >= 256).sum())
    assert [(f.code, f.step, f.message) for f in audit([{"input_ids": cast}], vocab_size=128_256).findings] == [(
        "ids-rounded", 0, f"every id above 256 in the batch is a value bfloat16 holds (its {above:,} such ids are "
        "multiples of 2, 4, 8, ... by size, as bfloat16 rounds them; real ids fall off that grid): the ids were cast "
        f"to bfloat16 and back, so the model reads other tokens than the text's; {CAST_FIX} up to the embedding (an "
        "autocast or a .to(dtype) on the whole batch casts them too); cast only the model's activations")]


def test_random_ids_cast_to_bfloat16_and_back_are_named_random_only():
    """Random ids say it all: the cast they also went through is not named beside them."""
    drawn = torch.randint(0, 298, (4, 256), generator=torch.Generator().manual_seed(0))
    cast = drawn.to(torch.bfloat16).long().numpy()
    assert len(np.unique(cast[cast >= 256])) >= 16  # enough ids on the grid for the cast to be named on its own
    report = audit([{"input_ids": cast}], vocab_size=300)
    assert [(f.code, f.step) for f in report.findings] == [("random-tokens", 0)]


def test_a_batch_of_float16_infinities_keeps_no_id_and_one_of_negative_ids_leaves_the_highest_at_minus_1():
    infinite = audit([{"input_ids": torch.full((2, 64), 70_000.0).to(torch.float16)}], vocab_size=128_256)
    assert [f.code for f in infinite.findings] == ["ids-rounded", "constant-batch"]
    assert infinite.statistics[0]["max_id"] == 0
    negative = audit([{"input_ids": np.full((2, 64), -3)}], vocab_size=V)
    assert [f.code for f in negative.findings] == ["id-out-of-range", "constant-batch"]
    assert negative.statistics[0]["max_id"] == -1


def test_the_first_id_past_the_vocabulary_alone_is_out_of_range_and_65536_is_a_high_id(text_ids):
    ids, _ = text_ids
    bad = ids.copy()
    bad[0, 5] = V
    assert findings([{"input_ids": bad}])[0][:2] == ("id-out-of-range", 0)
    assert findings([{"input_ids": bad}])[0][2].startswith("1 of 1,024 input ids outside [0, 258) (those: smallest "
                                                           "258, largest 258)")
    high = ids.copy()
    high[0, :3], high[1, :2] = 65_536, 65_535
    stream = StreamAudit(AuditSettings(vocab_size=128_256))
    stream.look({"input_ids": high})
    assert stream.high_ids == 3


def test_the_vocabulary_is_judged_at_one_step_only(two_windows_of_16384):
    report = audit([{"input_ids": batch} for batch in two_windows_of_16384], vocab_size=50_257)
    assert report.steps_with == {("vocab-mismatch", 0): 1}


def test_a_batch_of_1024_ids_is_judged_alone_and_is_not_pooled_with_the_next():
    rng = np.random.default_rng(0)
    uniform = [rng.permutation(np.repeat(np.arange(16), tokens // 16)).reshape(-1, 64) for tokens in (1024, 512)]
    report = audit([{"input_ids": batch} for batch in uniform], vocab_size=V)
    assert report.steps_with == {("random-tokens", 0): 1}


@pytest.mark.parametrize("back, steps, named", [(8, 3, True), (12, 3, True), (7, 3, False), (8, 2, False)])
def test_a_restart_that_brings_back_half_of_each_batch_is_named_on_its_third_step_from_8_steps_back(
        many_batches, back, steps, named):
    """20 steps of new samples, then each batch half new and half samples first seen `back` steps before (in
    another order): 12 of 24 back over 3 steps, against none of the 96 since step 8, is past what a steady rate
    gives; samples from 7 steps back are too near to count (copies sorted together), and 2 steps are not yet
    enough."""
    b = many_batches
    stream = b[:RESTART] + [np.concatenate([b[RESTART + k - back][[6, 2, 4, 0]], b[RESTART + k][:4]])
                            for k in range(steps)]
    found = [(code, step, line) for code, step, line in findings([{"input_ids": x} for x in stream])
             if code == "repeated-samples"]
    assert found == ([(
        "repeated-samples", RESTART + 2, "samples back for the first time, trained on at earlier steps and now in another "
        "order: 12 of the 24 of the last 3 step(s), against 0 of 96 before (a rate 50% against 0.0%), while new "
        "samples still come: the data restarted inside an epoch with a new shuffle, as a resumed run does when it "
        "rebuilds its loader instead of restoring it; fix: resume from the loader's saved state (or skip the samples "
        "already trained on with the same seed), and keep the shuffle's seed in the checkpoint")] if named else [])


def test_a_new_epoch_in_batches_of_two_brings_everything_back_and_is_no_restart(batches):
    rows = np.concatenate(batches)
    order = np.random.default_rng(0).permutation(len(rows))
    stream = [rows[2 * k:2 * k + 2] for k in range(64)] + [rows[order[2 * k:2 * k + 2]] for k in range(8)]
    assert findings([{"input_ids": b} for b in stream]) == []


EOS = 257  # the bytes tokenizer's EOD


def packed_row(documents: list[np.ndarray], width: int = 180) -> np.ndarray:
    """EOS, a document, EOS, ..., then EOS to `width`: every document whole inside the row."""
    row = np.concatenate([[EOS], *(np.append(d, EOS) for d in documents)])
    return np.concatenate([row, np.full(width - row.size, EOS)])


@pytest.fixture(scope="module")
def text_documents(corpus_dir) -> list[np.ndarray]:
    """400 documents of real text (bytes), of 25 to 40 ids."""
    ids = literature_bytes(corpus_dir, 3)
    ends = np.cumsum([25 + (k * 7) % 16 for k in range(400)])
    return [ids[end - (25 + (k * 7) % 16):end] for k, end in enumerate(ends)]


@pytest.mark.parametrize("back, steps, named", [(8, 3, True), (7, 4, False), (8, 2, False)])
def test_a_restart_that_packs_old_documents_into_new_rows_is_named_from_8_steps_back(
        text_documents, back, steps, named):
    """20 steps of 2 rows of 4 new documents; then each row 2 documents first seen `back` steps before, packed
    anew beside 2 new ones: no row comes back, but whole documents do, 12 of 24 over 3 steps."""
    docs = text_documents
    stream = [np.stack([packed_row(docs[8 * k + 4 * r:8 * k + 4 * r + 4]) for r in range(2)])
              for k in range(RESTART)]
    fresh = iter(docs[8 * RESTART:])
    for step in range(RESTART, RESTART + steps):
        old = docs[8 * (step - back):8 * (step - back) + 8]
        stream.append(np.stack([packed_row([old[a], next(fresh), old[b], next(fresh)]) for a, b in ((6, 1), (4, 3))]))
    found = [f for f in findings([{"input_ids": b} for b in stream], eod_id=EOS) if f[0] == "repeated-documents"]
    assert found == ([(
        "repeated-documents", RESTART + 2, "whole documents back for the first time, trained on at earlier steps: 12 of the 24 "
        "of the last 3 step(s), against 0 of 96 before (a rate 50% against 0.0%), while new documents still come: the "
        "data restarted inside an epoch with a new shuffle, as a resumed run does when it rebuilds its loader instead "
        "of restoring it; fix: resume from the loader's saved state (or skip the samples already trained on with the "
        "same seed), and keep the shuffle's seed in the checkpoint")] if named else [])


def rows_of_rising_length(ids: np.ndarray, padding: str) -> list[dict]:
    """64 batches of 2 rows of 128 ids, the text at step k 20 + k ids long, the rest padding: said only by the mask
    (text under its zeros), by the pad id 0 (the mask all ones), or by a mask the wrong way round."""
    batches = []
    for k in range(64):
        rows = np.stack([ids[300 * k + 150 * r:300 * k + 150 * r + 128] for r in range(2)])
        mask = np.zeros((2, 128), np.int64)
        mask[:, :20 + k] = 1
        if padding != "mask":
            rows[:, 20 + k:] = 0
        batches.append({"input_ids": rows, "attention_mask": {"mask": mask, "pad id": np.ones_like(mask),
                                                              "inverted": 1 - mask}[padding]})
    return batches


@pytest.mark.parametrize("padding", ["mask", "pad id", "inverted"])
def test_batches_sorted_by_length_are_named_at_the_64th_step_wherever_the_padding_is_said(corpus_dir, padding):
    ids = literature_bytes(corpus_dir, 3)
    found = [f for f in findings(rows_of_rising_length(ids, padding), eod_id=EOS, pad_id=0) if f[0] == "unshuffled"]
    if padding == "inverted":  # where the padding is cannot be read from such a mask: no document is judged
        assert found == []
        return
    assert found == [(
        "unshuffled", 63, "the batches' mean document length rises at every step of the last 64 (from 20 to 83 "
        "tokens; shuffled batches put them in random order): the batches come in order of length, as data stored "
        "sorted by length and read without a shuffle gives them; fix: shuffle the samples (DataLoader(shuffle=True), "
        "a shuffle buffer as large as many documents, or dataset.shuffle()) before batching")]


def test_eos_never_a_label_is_named_with_labels_that_ignore_nothing_and_no_labels_alone_when_all_are_ignored(
        text_ids):
    ids, _ = text_ids
    rows = np.array([np.concatenate([ids[r, :30], [EOS], ids[r, 40:70], [EOS, EOS, EOS]]) for r in range(4)])
    labels = np.concatenate([rows[:, 1:], np.full((4, 1), EOS)], axis=1)
    labels[labels == EOS] = 0  # EOS labelled as another id, and no label ignored
    assert "eos-not-learned" in [code for code, _, _ in findings([{"input_ids": rows, "labels": labels}],
                                                                   eod_id=EOS, pad_id=EOS)]
    ignored = findings([{"input_ids": rows, "labels": np.full(rows.shape, -100)}], eod_id=EOS, pad_id=EOS)
    assert [code for code, _, _ in ignored] == ["no-labels"]


def test_labels_matching_no_layout_are_named_so_with_or_without_a_layout_asked_for(text_ids):
    ids, _ = text_ids
    noise = np.random.default_rng(0).integers(0, V, ids.shape)
    shares = "(share of label positions matching each layout: same 0.00, shifted 0.00, shifted twice 0.00)"
    assert findings([{"input_ids": ids, "labels": noise}], labels="shifted") == [(
        "labels-misaligned", 0, f"expected labels one token ahead of input_ids, but they match no layout {shares}; the "
        "model trains on the wrong target; fix: set y[t] = x[t+1] (a window of length+1 tokens, split)")]
    assert findings([{"input_ids": ids, "labels": noise}]) == [(
        "labels-misaligned", 0, f"labels are neither input_ids nor input_ids one token on: they match no layout "
        f"{shares}; fix: labels are input_ids (the model shifts) or x[t+1]")]


def test_labels_asked_for_one_token_on_that_are_so_at_99_in_100_positions_are_not_misaligned(text_ids):
    ids, labels = text_ids
    row, next_ids = ids[:1, :101], labels[:1, :101].copy()
    next_ids[0, 50] = (next_ids[0, 50] + 1) % V
    assert findings([{"input_ids": row, "labels": next_ids}], labels="shifted") == []


def test_a_mask_the_wrong_way_round_and_padding_in_the_loss_are_named_with_their_counts(text_ids):
    ids, _ = text_ids
    rows = np.array([np.concatenate([ids[r, :30], [EOS], ids[r, 40:70], [EOS, EOS, EOS]]) for r in range(4)])
    labels = np.concatenate([rows[:, 1:], np.full((4, 1), EOS)], axis=1)
    labels[labels == EOS] = -100
    inverted = np.zeros_like(rows)
    inverted[:, 62:] = 1
    assert findings([{"input_ids": rows, "labels": labels, "attention_mask": inverted}], eod_id=EOS, pad_id=EOS) == [(
        "attention-mask-inverted", 0, "attention_mask is 1 on 8 padding positions (pad id 257) and 0 on 248 of the "
        "text's: the mask is the wrong way round, so the model reads the padding and skips the text; fix: "
        "attention_mask is 1 on real tokens and 0 on padding (as tokenizer(..., padding=True) returns it), not "
        "1 - mask")]
    padded = ids[:, :64].copy()
    padded[:, 50:] = 0  # pad id 0, not the EOS: every one of the 14 a row is padding
    next_ids = np.concatenate([padded[:, 1:], np.zeros((4, 1), np.int64)], axis=1)
    assert findings([{"input_ids": padded, "labels": next_ids}], eod_id=EOS, pad_id=0) == [(
        "padding-in-loss", 0, "56 padding positions of 56 carry a label (not -100): the loss learns to predict "
        "padding; fix: set labels to -100 where attention_mask is 0 (or the input is the pad id)")]


def test_a_replay_whose_last_sample_another_rank_reads_at_the_same_step_is_named_a_replay_at_5_in_a_row(batches):
    """Rank 1 reads rank 0's first five samples of step 0 again, one a step, from step 4; rank 0 reads the fifth
    too, alone, at step 8. Among 68 samples looked at 37 times, 5 in a row is the run named; the batch of that one
    sample, first seen whole at this very step on rank 0, is no earlier batch dealt again."""
    b = batches
    zero = [b[0], b[1], b[2], b[3], b[5][:1], b[6][:1], b[7][:1], b[12][:1], b[0][4:5]]
    one = [b[8], b[9], b[10], b[11], *(b[0][k:k + 1] for k in range(5))]
    report = audit_ranks([[{"input_ids": x} for x in zero], [{"input_ids": x} for x in one]], vocab_size=V)
    assert [(f.code, f.step, f.rank) for f in report.findings] == [("repeated-samples", 8, 1)]
    assert report.findings[0].message.startswith(
        "1 of 1 samples come back in the order they were trained on at step 0 (5 in a row; a new epoch's shuffle of "
        "68 samples gives 5 in a row less than once in 10,000 runs): ")


def test_a_batch_of_earlier_samples_in_another_order_is_named_through_the_stream_unless_its_rows_are_plain(batches):
    regrouped = batches[3][::-1]
    assert replay_lines(batches + [regrouped]) == [(
        "repeated-batch", 16, "this batch holds the same 8 samples as the one at step 3, in another order: the "
        "batches were made once and only their order is shuffled each epoch, so the same samples always share a "
        "step; fix: shuffle the samples, then batch them (DataLoader(dataset, shuffle=True, batch_size=...)), not a "
        "list of batches")]
    plain = np.concatenate([batches[3][:7], np.full((1, 64), 32)])  # a row of spaces among them
    assert replay_lines(batches[:3] + [plain] + batches[4:] + [plain[::-1]]) == []


@pytest.mark.parametrize("real, named", [(32, True), (31, False)])
def test_rows_of_fewer_than_32_real_tokens_are_too_short_to_count_as_returns(many_batches, real, named):
    """The restart above (half of each of 3 batches back from 8 steps before), with every row of the restart
    masked to its first `real` tokens: a row of 31 is too short to tell a copy apart."""
    stream = [{"input_ids": b} for b in many_batches[:RESTART]]
    for k in range(3):
        rows = np.concatenate([many_batches[RESTART - 8 + k][[6, 2, 4, 0]], many_batches[RESTART + k][:4]])
        mask = np.zeros_like(rows)
        mask[:, :real] = 1
        stream.append({"input_ids": rows, "attention_mask": mask})
    assert [(f.code, f.step) for f in audit(stream, vocab_size=V).findings] == (
        [("repeated-samples", RESTART + 2)] if named else [])


def test_ranks_sharing_part_of_a_batch_are_told_how_many_samples_they_share(batches):
    shared = np.concatenate([batches[0][:4], batches[1][:4]])
    report = audit_ranks([[{"input_ids": batches[0]}], [{"input_ids": shared}]], vocab_size=V)
    assert [(f.code, f.step, f.rank, f.message) for f in report.findings] == [(
        "same-batch-across-ranks", 0, 1, "4 of 8 samples equal to rank 0's at this step: the ranks share their data, "
        "so part of their work is done twice; fix: give the sampler its rank and world size (DistributedSampler("
        "dataset, num_replicas=W, rank=r), or the loader's rank=)")]


def test_documents_starting_with_the_bos_id_given_twice_are_named_by_it(text_ids):
    """16 documents of 30 ids, each BOS BOS ... EOS: with bos_id, every run of it starts a document and a run of
    two is the finding; without it, only the 14 documents after an EOS start where a document surely starts, fewer
    than the 16 the check waits for."""
    ids, _ = text_ids
    rows = np.array([np.concatenate([[256, 256, *ids[r, 30 * d:30 * d + 30], EOS] for d in range(8)])
                     for r in range(2)])
    assert findings([{"input_ids": rows}], bos_id=256, eod_id=EOS) == [(
        "double-bos", 0, "16 of 16 documents start with BOS twice (id 256, then 256 again): the tokenizer adds BOS "
        "and a template writes it again, so every document trains on a start that inference never sees; fix: add BOS "
        "once: tokenizer(text, add_special_tokens=False) on text that has it, or drop it from the template")]
    assert findings([{"input_ids": rows}], eod_id=EOS) == []


def test_samples_another_rank_has_at_the_same_step_are_not_new_so_half_of_them_and_half_returns_are_no_restart(
        many_batches):
    """Rank 1, from step 20, reads 4 of rank 0's samples of that step and 4 of its own from 8 steps before: named
    for sharing, and not as a restart, which needs new samples still coming."""
    b = many_batches
    zero, own = b[:RESTART + 3], b[RESTART + 3:]
    one = own[:RESTART] + [np.concatenate([zero[RESTART + k][:4], own[RESTART - 8 + k][[6, 2, 4, 0]]])
                           for k in range(3)]
    report = audit_ranks([[{"input_ids": x} for x in zero], [{"input_ids": x} for x in one]], vocab_size=V)
    assert [(f.code, f.step, f.rank) for f in report.findings] == [("same-batch-across-ranks", RESTART, 1)]


def test_documents_sorted_by_length_are_measured_from_their_first_id_to_their_eos(corpus_dir):
    """Rows of EOS, a document, EOS, a document, EOS: whole documents start after an EOS, and their lengths (10 to
    73 ids here, rising by one a step) are what the finding reports."""
    ids = literature_bytes(corpus_dir, 3)
    stream = [np.stack([packed_row([ids[300 * k + 7 * r + j * (10 + k):][:10 + k] for j in range(2)], 160)
                        for r in range(2)]) for k in range(64)]
    found = [(code, step, line) for code, step, line in findings([{"input_ids": b} for b in stream], eod_id=EOS)]
    assert [(code, step) for code, step, _ in found] == [("unshuffled", 63)]
    assert found[0][2].startswith("the batches' mean document length rises at every step of the last 64 (from 10 to "
                                  "73 tokens; ")


def test_copies_coming_back_at_a_steady_rate_from_the_first_step_they_can_count_are_no_restart(many_batches):
    """A corpus with copies, batches of 16: from step 8, the first step at which a sample seen before can count as
    back, 6 of every batch are copies of samples first seen 8 steps before. The 8 steps before hold no return by
    construction, so they are no history: judged against them, the first copies would look like a jump (12 of 32
    over steps 8 and 9 against 0 of 128)."""
    rows = iter(np.concatenate(many_batches))
    firsts = [[next(rows) for _ in range(16)] for _ in range(8)]  # each step's samples seen for the first time
    stream = [np.stack(batch) for batch in firsts]
    for step in range(8, 28):
        copies = [firsts[step - 8][k] for k in (9, 2, 7, 0, 4, 6)]  # not in their earlier order
        firsts.append([next(rows) for _ in range(10)])
        stream.append(np.stack(copies + firsts[-1]))
    assert findings([{"input_ids": b} for b in stream]) == []
