"""Packing: every strategy keeps every token once (or counts what it drops), never overfills a row,
and packed training with document masking is exactly the same as training on documents one by one."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.common.errors import UserError
from helpers.datasets.layout import varlen_boundaries
from helpers.loading.packing import OVERLONG, STRATEGIES, pack, packed_batch, plan_metrics, stream_pack
from helpers.training.packed_loss import compare_packed_and_separate, loss_and_gradients, tiny_llama

lengths_strategy = st.lists(st.integers(0, 300), min_size=1, max_size=120)


def covered(plan):
    """Token coverage per document: {document: sorted list of (start, end)}."""
    spans = {}
    for d, s, n in zip(plan.document.tolist(), plan.start.tolist(), plan.length.tolist()):
        spans.setdefault(d, []).append((s, s + n))
    return {d: sorted(v) for d, v in spans.items()}


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(lengths=lengths_strategy, capacity=st.integers(1, 256), strategy=st.sampled_from(STRATEGIES),
       overlong=st.sampled_from(OVERLONG))
def test_every_token_once_and_no_row_overfull(lengths, capacity, strategy, overlong):
    lengths = np.array(lengths)
    plan = pack(lengths, capacity, strategy, overlong=overlong, window=7, buffer_rows=3)
    assert (plan.row_fill() <= capacity).all()
    assert (np.diff(plan.row) >= 0).all() and (plan.length > 0).all()
    spans = covered(plan)
    for d, size in enumerate(lengths.tolist()):
        kept = size if strategy == "concat" or overlong == "split" else min(size, capacity)
        if overlong == "drop" and size > capacity:
            kept = 0
        pieces = spans.get(d, [])
        if kept == 0:
            assert not pieces
            continue
        assert pieces[0][0] == 0 and pieces[-1][1] == kept  # from the start, to what is kept
        assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:]))  # no gap, no overlap
    m = plan_metrics(plan)
    dropped = lengths > capacity if overlong == "drop" else np.zeros(lengths.size, bool)
    assert m["dropped_documents"] == dropped.sum()
    assert m["tokens"] + m["truncated_tokens"] + lengths[dropped].sum() == lengths.sum()
    assert sum(m["fill_histogram"]) == plan.rows or plan.rows == 0
    if strategy not in ("concat",) and overlong == "truncate":
        assert m["fragmented_documents"] == 0


def test_best_fit_decreasing_is_tight_and_beats_next_fit():
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 1500, size=5_000)
    bfd = plan_metrics(pack(lengths, 2048, "best_fit_decreasing"))
    nf = plan_metrics(pack(lengths, 2048, "next_fit"))
    assert bfd["padding_fraction"] < 0.01 < nf["padding_fraction"]
    lower_bound = -(-lengths.sum() // 2048)
    assert bfd["rows"] <= lower_bound * 1.01 + 1


def test_best_fit_chooses_the_tightest_row():
    plan = pack(np.array([7, 6, 3, 2, 2]), 10, "best_fit_decreasing")
    rows = {tuple(sorted(d for d, _, _ in plan.segments_of_row(r))) for r in range(plan.rows)}
    assert rows == {(0, 2), (1, 3, 4)}  # 7+3 and 6+2+2, not 7+2 and 6+3


def test_streaming_matches_a_bounded_buffer():
    rows = list(stream_pack(iter([5, 5, 5, 5, 9, 1]), 10, buffer_rows=1))
    assert [[n for _, _, n in r] for r in rows] == [[5, 5], [5, 5], [9, 1]]


def test_concat_cuts_across_documents():
    plan = pack(np.array([5, 3, 6]), 4, "concat")
    assert plan.rows == 4
    assert plan.segments_of_row(1) == [(0, 4, 1), (1, 0, 3)]
    assert plan_metrics(plan)["fragmented_documents"] == 2


def test_batch_tensors_mark_boundaries():
    documents = {0: np.array([10, 11, 12]), 1: np.array([20, 21]), 2: np.array([30, 31, 32, 33])}
    plan = pack(np.array([3, 2, 4]), 6, "first_fit")
    batch = packed_batch(plan, range(plan.rows), documents, pad_id=0, sdpa_mask=True)
    assert batch["input_ids"].tolist() == [[10, 11, 12, 20, 21, 0], [30, 31, 32, 33, 0, 0]]
    assert batch["labels"].tolist() == [[11, 12, -100, 21, -100, -100], [31, 32, 33, -100, -100, -100]]
    assert batch["position_ids"].tolist() == [[0, 1, 2, 0, 1, 0], [0, 1, 2, 3, 0, 1]]
    assert batch["document_ids"].tolist() == [[0, 0, 0, 1, 1, -1], [0, 0, 0, 0, -1, -1]]
    assert varlen_boundaries(batch["document_ids"]).tolist() == [0, 3, 5, 6, 10, 12]
    mask = batch["attention_mask"][0, 0]
    assert mask[4].tolist() == [False, False, False, True, True, False]  # doc 1 sees only itself
    assert mask[5].tolist() == [False] * 5 + [True]  # padding attends to itself only


def test_packed_training_is_exact():
    """Loss and gradients on a packed row with document masking equal those of the documents alone."""
    rng = np.random.default_rng(3)
    documents = {d: rng.integers(1, 101, size=n) for d, n in enumerate([9, 4, 13, 7])}
    plan = pack(np.array([len(documents[d]) for d in range(4)]), 40, "best_fit_decreasing")
    assert plan.rows == 1
    model = tiny_llama()
    batch = packed_batch(plan, [0], documents, sdpa_mask=True)
    packed_loss, packed_grads = loss_and_gradients(model, batch["input_ids"], batch["labels"],
                                                   attention_mask=batch["attention_mask"],
                                                   position_ids=batch["position_ids"])
    total, grads = torch.zeros((), dtype=torch.float64), None
    for d, ids in documents.items():
        ids = torch.as_tensor(ids).unsqueeze(0)
        labels = torch.cat([ids[:, 1:], torch.tensor([[-100]])], dim=1)
        loss, g = loss_and_gradients(model, ids, labels)
        total += loss
        grads = g if grads is None else {n: grads[n] + g[n] for n in g}
    assert torch.allclose(packed_loss, total, rtol=1e-10, atol=1e-10)
    for name in grads:
        assert torch.allclose(packed_grads[name], grads[name], rtol=1e-8, atol=1e-10), name
    # and without the document mask the packed loss is different: the mask is doing the work
    leaky, _ = loss_and_gradients(model, batch["input_ids"], batch["labels"], position_ids=batch["position_ids"])
    assert not torch.allclose(leaky, total, rtol=1e-6)


def test_comparison_helper_reports_the_same():
    rng = np.random.default_rng(4)
    documents = {d: rng.integers(1, 101, size=n) for d, n in enumerate([5, 11, 8])}
    result = compare_packed_and_separate(tiny_llama(), documents, 32)
    assert abs(result["packed_loss"] - result["separate_loss"]) < 1e-9
    assert result["max_gradient_difference"] < 1e-9
    assert abs(result["unmasked_packed_loss"] - result["separate_loss"]) > 1e-3


def test_comparison_helper_takes_any_document_keys():
    """Documents keyed 30, 10, 20 (not 0..n-1): the packed row holds exactly these documents' tokens."""
    rng = np.random.default_rng(5)
    documents = {key: rng.integers(1, 101, size=n) for key, n in ((30, 6), (10, 9), (20, 4))}
    as_positions = {position: documents[key] for position, key in enumerate(sorted(documents))}
    model = tiny_llama()
    result = compare_packed_and_separate(model, documents, 32)
    assert result == compare_packed_and_separate(model, as_positions, 32)
    assert abs(result["packed_loss"] - result["separate_loss"]) < 1e-9


def test_overlong_drop_leaves_out_the_same_documents_in_every_strategy():
    lengths = np.array([5, 40, 3, 0, 17, 16, 9, 33, 1, 12] * 3)
    kept = {d for d, n in enumerate(lengths.tolist()) if 0 < n <= 16}
    for strategy in STRATEGIES:
        plan = pack(lengths, 16, strategy, overlong="drop", window=4, buffer_rows=2)
        spans = covered(plan)
        assert set(spans) == kept, strategy
        assert all(spans[d][0][0] == 0 and spans[d][-1][1] == lengths[d] for d in kept), strategy
        assert plan.dropped_documents == plan_metrics(plan)["dropped_documents"] == 9, strategy
        assert plan.truncated_tokens == 0
    streamed = [d for row in stream_pack(iter(lengths.tolist()), 16, 2, overlong="drop") for d, _, _ in row]
    assert set(streamed) == kept


@pytest.mark.parametrize("arguments, named", [
    (dict(capacity=0), "capacity"), (dict(capacity=-4), "capacity"),
    (dict(strategy="window", window=0), "window"), (dict(window=-1), "window"),
    (dict(strategy="streaming", buffer_rows=0), "buffer_rows"), (dict(buffer_rows=-2), "buffer_rows"),
    (dict(window=2.5), "window"), (dict(strategy="tightest"), "strategy"), (dict(overlong="cut"), "overlong"),
])
def test_bad_packing_parameters_are_one_clear_line(arguments, named):
    arguments = {"capacity": 16, **arguments}
    with pytest.raises(UserError) as err:
        pack(np.array([5, 20, 7]), **arguments)
    message = str(err.value)
    assert named in message and "fix:" in message and "\n" not in message
    if named in ("capacity", "buffer_rows", "overlong"):
        with pytest.raises(UserError, match=named):
            stream_pack(iter([5, 20, 7]), arguments["capacity"], arguments.get("buffer_rows", 8),
                        arguments.get("overlong", "truncate"))


def test_next_fit_keeps_a_document_that_exactly_fills_the_row():
    plan = pack(np.array([6, 4, 5]), 10, "next_fit")
    assert plan.rows == 2 and [d for d, _, _ in plan.segments_of_row(0)] == [0, 1]


def test_first_fit_puts_a_document_into_the_first_row_it_fills_exactly():
    plan = pack(np.array([6, 5, 4]), 10, "first_fit")  # 4 fits row 0 exactly, row 1 with room to spare
    assert plan.rows == 2 and [d for d, _, _ in plan.segments_of_row(0)] == [0, 2]


def test_streaming_emits_the_fullest_open_row_when_the_buffer_is_full():
    rows = list(stream_pack(iter([6, 7, 5, 9]), 10, buffer_rows=2))
    # 6 opens row A, 7 opens row B; 5 fits neither and the buffer is full: B (3 free) goes before A (4 free)
    assert [[n for _, _, n in r] for r in rows][0] == [7]


def test_each_dataset_of_a_packed_blend_is_shuffled_its_own_way(tmp_path, corpus_dir):
    from helpers.loading.loader import make_dataloader
    from helpers.preprocess import preprocess

    lines = (corpus_dir / "docs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:20]
    (tmp_path / "docs.jsonl").write_text("".join(lines), encoding="utf-8")
    prefix = preprocess(tmp_path / "docs.jsonl", tmp_path / "docs", "bytes", append_eod=True,
                        progress=False).outputs["text"]
    loader = make_dataloader(["0.5", prefix, "0.5", prefix], split="100,0,0", seq_length=128, batch_size=1,
                             num_samples=200, packing="best_fit_decreasing", cache_dir=None)
    drawn = {0: [], 1: []}
    for sample, dataset in enumerate(loader.source.mix.dataset_index[:200].tolist()):
        drawn[dataset].append(loader.batch_at(sample)["input_ids"][0])
    count = min(len(drawn[0]), len(drawn[1]))
    assert count > 20
    same = sum(torch.equal(a, b) for a, b in zip(drawn[0][:count], drawn[1][:count]))
    assert same < count // 4, "the same data twice in a blend is read in two different orders"
