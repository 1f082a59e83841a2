"""Blend schedules and a changed mix: each dataset read in its own order through a cursor that only moves forward,
so a run stopped and resumed on any number of processes takes the uninterrupted run's samples, and a run resumed
under new weights, another schedule or other datasets repeats nothing and skips nothing; megatron-core, rebuilding
its blend under the new weights, loses and repeats samples on the same data."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.audit.ledger import ledger
from helpers.common.errors import UserError
from helpers.loading.epochs import epoch_seed
from helpers.loading.loader import make_dataloader
from helpers.loading.schedule import Segment, choose, parse_schedule, resumed_segments
from helpers.preprocess import preprocess
from megatron_reference import megatron_build

SEQ, GLOBAL = 32, 6
NAMES = ("literature", "docs", "code")


@pytest.fixture(scope="module")
def prefixes(tmp_path_factory, corpus_dir) -> list[str]:
    """Three small byte-level datasets of different sizes (docs takes several epochs in a few hundred samples)."""
    folder = tmp_path_factory.mktemp("schedules")
    made = []
    for name, count, chars in (("literature", 12, 40_000), ("docs", 6, 300), ("code", 12, 8_000)):
        lines = (corpus_dir / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()[:count]
        cut = [json.dumps({"text": json.loads(line)["text"][:chars]}) + "\n" for line in lines]
        (folder / f"{name}.jsonl").write_text("".join(cut), encoding="utf-8")
        made.append(preprocess(folder / f"{name}.jsonl", folder / name, "bytes", append_eod=True,
                               progress=False).outputs["text"])
    return made


def loader(data, samples, **options):
    return make_dataloader(data, split="100,0,0", seq_length=SEQ, num_samples=samples, seed=5, cache_dir=None,
                           **{"batch_size": GLOBAL, **options})


def global_batches(data, samples, stops, world_sizes, schedules):
    """The global batches of a run stopped at each of `stops` and resumed on the next world size with the next
    schedule (the per-rank batch shrinks as the ranks grow), glued back from the ranks' slices."""
    taken, state = [], None
    bounds = [0, *stops, samples // GLOBAL]
    for (start, end), world, schedule in zip(zip(bounds, bounds[1:]), world_sizes, schedules):
        ranks = [loader(data, samples, schedule=schedule, batch_size=GLOBAL // world, rank=r, world_size=world)
                 for r in range(world)]
        for rank in ranks:
            if state is not None:
                rank.load_state_dict(state)
            assert rank.step == start
        streams = [iter(rank) for rank in ranks]
        for _ in range(start, end):
            taken.append(np.concatenate([next(s)["input_ids"].numpy() for s in streams]))
        state = ranks[0].state_dict()
    return taken, state


phase_weights = st.lists(st.integers(0, 5), min_size=3, max_size=3).filter(lambda w: sum(w) > 0)


@st.composite
def schedules(draw, steps: int):
    starts = sorted(draw(st.sets(st.integers(1, steps - 1), max_size=3)))
    return [(step, draw(phase_weights)) for step in [0, *starts]]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_run_stopped_and_resumed_on_1_2_3_2_processes_takes_the_uninterrupted_samples(prefixes, data):
    steps = 20
    schedule = data.draw(schedules(steps))
    stops = sorted(data.draw(st.sets(st.integers(1, steps - 1), min_size=3, max_size=3)))
    whole, _ = global_batches(prefixes, steps * GLOBAL, [], [1], [schedule])
    pieces, state = global_batches(prefixes, steps * GLOBAL, stops, [1, 2, 3, 2], [schedule] * 4)
    assert len(pieces) == len(whole) == steps
    for step, (a, b) in enumerate(zip(whole, pieces)):
        np.testing.assert_array_equal(a, b, err_msg=f"step {step}")
    book = ledger(state)
    assert book["ranks"]["disjoint"] and [s["world_size"] for s in book["ranks"]["stints"]] == [1, 2, 3, 2]


def dataset_numbers(data, samples, stops, schedules) -> dict[str, list[int]]:
    """Per dataset name, the numbers (in its own order) of the samples a run took, stint after stint, each stint
    resumed from the last one's state under its own schedule and datasets (`data` per stint)."""
    numbers: dict[str, list[int]] = {}
    state, bounds = None, [0, *stops, samples // GLOBAL]
    for (start, end), paths, schedule in zip(zip(bounds, bounds[1:]), data, schedules):
        run = loader(paths, samples, schedule=schedule)
        if state is not None:
            run.load_state_dict(state)
        mix = run.source.mix
        for sample in range(start * GLOBAL, end * GLOBAL):
            name = mix.registry[mix.dataset_index[sample]].name
            numbers.setdefault(name, []).append(int(mix.dataset_number[sample]))
        run.step = end
        state = run.state_dict()
    return numbers


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_new_weights_at_resume_continue_every_dataset_with_no_repeat_and_no_skip(prefixes, data):
    steps = 30
    stops = sorted(data.draw(st.sets(st.integers(1, steps - 1), min_size=1, max_size=3)))
    plans = [data.draw(schedules(steps)) for _ in range(len(stops) + 1)]
    numbers = dataset_numbers([prefixes] * len(plans), steps * GLOBAL, stops, plans)
    for name, taken in numbers.items():
        assert taken == list(range(len(taken))), name  # a prefix of its own order: nothing repeated or skipped


def test_one_phase_within_an_epoch_is_megatron_cores_blend_sample_for_sample(prefixes):
    data_path = [x for w, p in zip(("0.5", "0.2", "0.3"), prefixes) for x in (w, p)]
    ours = make_dataloader(data_path, split="100,0,0", seq_length=SEQ, batch_size=4, num_samples=200, seed=3,
                           cache_dir=None)
    theirs = megatron_build(data_path, "100,0,0", (200, 0, 0), SEQ, 3, eod=257, vocab_size=258)[0]
    # megatron-core asked each dataset for ceil(ceil(200 w) x 1.005) samples: within one epoch of each
    assert all(order.per_epoch >= len(d) for order, d in zip(ours.source.orders, theirs.datasets))
    np.testing.assert_array_equal(ours.source.mix.dataset_index, theirs.dataset_index[:200])
    for i in range(200):
        np.testing.assert_array_equal(ours.source.windows([i])[0], theirs[i]["tokens"].numpy().tolist()
                                      + [int(theirs[i]["labels"][-1])])


def test_each_later_epoch_is_shuffled_on_its_own_seed(prefixes):
    run = loader([prefixes[1]], 400)
    order = run.source.orders[0]
    assert order.per_epoch < 100  # several epochs of docs
    epoch = np.arange(order.per_epoch)
    first, second = order.windows(epoch), order.windows(epoch + order.per_epoch)
    assert not np.array_equal(first, second)
    assert epoch_seed(5, 0) == 5 and epoch_seed(5, 1) != epoch_seed(5, 2)
    assert list(order.documents_seen(2 * order.per_epoch)) == [2] * len(order.documents_seen(1))


def test_a_dataset_added_starts_at_its_beginning_and_one_removed_keeps_its_cursor(prefixes):
    literature, docs, code = prefixes
    numbers = dataset_numbers([[literature, docs], [literature, code], [literature, docs, code]], 40 * GLOBAL,
                              [10, 20], [[(0, [1, 1])], [(0, [1, 1])], [(0, [1, 1, 1])]])
    for name, taken in numbers.items():
        assert taken == list(range(len(taken))), name
    assert set(numbers) == {"literature_text_document", "docs_text_document", "code_text_document"}


def test_a_dataset_whose_contents_changed_is_refused_in_one_line(prefixes, tmp_path):
    import shutil

    literature, docs, _ = prefixes
    run = loader([literature, docs], 10 * GLOBAL, schedule=[(0, [1, 1])])
    run.step = 3
    state = run.state_dict()
    other = tmp_path / "other"
    other.mkdir()
    changed = str(other / "docs_text_document")
    shutil.copy(f"{prefixes[2]}.bin", f"{changed}.bin")  # another dataset's tokens under docs' name
    shutil.copy(f"{prefixes[2]}.idx", f"{changed}.idx")
    shutil.copy(f"{docs}.json", f"{changed}.json")
    with pytest.raises(UserError, match=r"docs_text_document: its data changed since the loader state was saved.*fix:"):
        loader([literature, changed], 10 * GLOBAL, schedule=[(0, [1, 1])]).load_state_dict(state)


def test_megatron_core_resumed_with_new_weights_loses_and_repeats_samples_where_the_cursors_do_not(prefixes):
    """megatron-core rebuilds the blend under the new weights and skips the samples consumed so far: each dataset
    then continues from where the new weights would have brought it, not from where it stood."""
    data = prefixes
    samples, stop = 300, 150
    # every dataset within its first epoch in both builds, so a sample's number names the same sample in both
    before, after = ("0.6", "0.15", "0.25"), ("0.25", "0.15", "0.6")
    first = megatron_build([x for w, p in zip(before, data) for x in (w, p)], "100,0,0", (samples, 0, 0),
                           SEQ, 5, eod=257, vocab_size=258)[0]
    second = megatron_build([x for w, p in zip(after, data) for x in (w, p)], "100,0,0", (samples, 0, 0),
                            SEQ, 5, eod=257, vocab_size=258)[0]
    taken = [(int(first.dataset_index[i]), int(first.dataset_sample_index[i])) for i in range(stop)]
    taken += [(int(second.dataset_index[i]), int(second.dataset_sample_index[i])) for i in range(stop, samples)]
    lost, repeated = megatron_counts(taken, len(data))
    assert sum(lost) > 0 and sum(repeated) > 0, (lost, repeated)
    ours = dataset_numbers([data, data], samples, [stop // GLOBAL],
                           [[(0, [float(w) for w in before])], [(0, [float(w) for w in after])]])
    assert all(numbers == list(range(len(numbers))) for numbers in ours.values())


def megatron_counts(taken: list[tuple[int, int]], datasets: int) -> tuple[list[int], list[int]]:
    """Per dataset: samples skipped (below the highest number taken, never taken) and samples taken twice."""
    lost, repeated = [], []
    for k in range(datasets):
        numbers = [n for d, n in taken if d == k]
        counts = np.bincount(numbers) if numbers else np.zeros(0, dtype=int)
        lost.append(int((counts == 0).sum()))
        repeated.append(int(np.maximum(counts - 1, 0).sum()))
    return lost, repeated


def test_packed_rows_follow_the_same_rules(prefixes):
    packed = {"packing": "best_fit_decreasing"}
    schedule = [(0, [3, 1, 1]), (7, [0, 1, 3])]
    whole = [b["input_ids"] for b in loader(prefixes, 20 * GLOBAL, schedule=schedule, **packed)]
    first = loader(prefixes, 20 * GLOBAL, schedule=schedule, **packed)
    stream = iter(first)
    head = [next(stream)["input_ids"] for _ in range(9)]
    ranks = [loader(prefixes, 20 * GLOBAL, schedule=schedule, batch_size=2, rank=r, world_size=3, **packed)
             for r in range(3)]
    for rank in ranks:
        rank.load_state_dict(first.state_dict())
    tail = [np.concatenate([b["input_ids"] for b in batches]) for batches in zip(*ranks)]
    assert len(head) + len(tail) == len(whole)
    for a, b in zip(whole, head + tail):
        np.testing.assert_array_equal(a, b)


def test_the_schedule_is_checked_and_a_weighted_path_beside_a_schedule_refused(prefixes):
    for bad, words in (([(5, [1, 1, 1])], "start it at step 0"), ([(0, [1, 1])], "one weight per dataset"),
                       ([(0, [1, 1, 1]), (0, [1, 0, 0])], "in order of their steps"),
                       ([(0, [0, 0, 0])], "at least one dataset a positive weight"), ([], r"\(step, weights\) phases")):
        with pytest.raises(UserError, match=words):
            parse_schedule(bad, 3)
    with pytest.raises(UserError, match="both a weighted data path and a schedule"):
        loader(["1", prefixes[0], "1", prefixes[1]], 60, schedule=[(0, [1, 1])])


def test_a_planned_resume_continues_the_segment_a_changed_one_starts_a_new_one():
    history = [Segment(0, (0.5, 0.5))]
    assert resumed_segments(history, 12, [Segment(0, (0.5, 0.5)), Segment(30, (0.0, 1.0))]) == \
        [Segment(0, (0.5, 0.5)), Segment(30, (0.0, 1.0))]
    assert resumed_segments(history, 12, [Segment(0, (0.9, 0.1))]) == [Segment(0, (0.5, 0.5)), Segment(12, (0.9, 0.1))]
    # a phase of the same schedule beginning at the resume point, with the weights of the one before: the
    # uninterrupted run restarts the greedy rule's counts there, so the resumed run does too
    planned = [Segment(0, (0.5, 0.5)), Segment(12, (0.5, 0.5))]
    assert resumed_segments(history, 12, planned) == planned
    dataset, number = choose([Segment(0, (1.0, 0.0)), Segment(4, (0.0, 1.0))], 8)
    assert dataset.tolist() == [0, 0, 0, 0, 1, 1, 1, 1] and number.tolist() == [0, 1, 2, 3, 0, 1, 2, 3]


def test_the_ledger_command_reads_a_saved_state(prefixes, tmp_path):
    run = loader(prefixes, 20 * GLOBAL, schedule=[(0, [1, 1, 1]), (10, [0, 0, 1])])
    run.step = 15
    path = tmp_path / "state.json"
    path.write_text(json.dumps(run.state_dict()))
    shown = subprocess.run([sys.executable, "-m", "helpers.audit", "ledger", str(path), "--json"], capture_output=True,
                           text=True)
    assert shown.returncode == 0, shown.stderr
    book = json.loads(shown.stdout)
    assert sum(d["samples"] for d in book["datasets"]) == 15 * GLOBAL
    assert [d["samples"] for d in book["datasets"]] == [round(d["asked_samples"]) for d in book["datasets"]]
    missing = subprocess.run([sys.executable, "-m", "helpers.audit", "ledger", str(tmp_path / "absent.json")],
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "fix:" in missing.stderr and "Traceback" not in missing.stderr


def test_a_schedule_file_with_a_missing_or_unknown_key_is_refused_naming_its_keys(prefixes, tmp_path):
    from helpers.loading.schedule import load_schedule_file

    good = f"datasets: [{prefixes[0]}, {prefixes[1]}]\nphases:\n  - {{step: 0, weights: [1, 1]}}\n"
    path = tmp_path / "good.yaml"
    path.write_text(good)
    assert load_schedule_file(path) == (prefixes[:2], [(0, [1, 1])])
    for text, found in ((good.replace("phases:", "phase:"), "datasets, phase"), (good + "extra: 1\n", "extra")):
        path.write_text(text)
        with pytest.raises(UserError, match=f"found keys .*{found}.*; fix: "):
            load_schedule_file(path)
