"""Blend schedules and a changed mix: each dataset read in its own order through a cursor that only moves forward,
so a run stopped and resumed on any number of processes or another global batch takes the uninterrupted run's
samples (the state keeps each phase's first sample), and a run resumed under new weights, another schedule or other
datasets repeats nothing and skips nothing; megatron-core, rebuilding its blend under the new weights, loses and
repeats samples on the same data."""

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


@pytest.mark.heavy
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


@pytest.mark.heavy
def test_the_ledger_command_reads_a_saved_state(prefixes, tmp_path):
    run = loader(prefixes, 20 * GLOBAL, schedule=[(0, [1, 1, 1]), (10, [0, 0, 1]), (18, [1, 0, 0])])
    run.step = 15
    path = tmp_path / "state.json"
    path.write_text(json.dumps(run.state_dict()))
    shown = subprocess.run([sys.executable, "-m", "helpers.audit", "ledger", str(path), "--json"], capture_output=True,
                           text=True)
    assert shown.returncode == 0, shown.stderr
    book = json.loads(shown.stdout)
    assert sum(d["samples"] for d in book["datasets"]) == 15 * GLOBAL
    assert [d["samples"] for d in book["datasets"]] == [round(d["asked_samples"]) for d in book["datasets"]]
    assert [(p["step"], p["from"], p["to"], p["reached"]) for p in book["phases"]] == \
        [(0, 0, 10 * GLOBAL, True), (10, 10 * GLOBAL, 18 * GLOBAL, True), (18, 18 * GLOBAL, None, False)]
    table = subprocess.run([sys.executable, "-m", "helpers.audit", "ledger", str(path)], capture_output=True,
                           text=True).stdout
    assert f"(a step is {GLOBAL} samples; weights in the order above): step 0 from sample 0: 0.333/0.333/0.333; " \
        f"step 10 from sample {10 * GLOBAL}: 0/0/1; step 18 from sample {18 * GLOBAL}: 1/0/0 (not reached)" in table
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


def global_stream(data, samples, stops, layouts, schedule):
    """The samples (token rows) and per-sample dataset names of a run stopped at each of `stops` (in samples) and
    resumed on the next layout (ranks x per-rank batch, so the global batch may change), glued back from the ranks'
    slices, with the last state."""
    rows, names, state = [], [], None
    for start, end, (world, batch) in zip([0, *stops], [*stops, samples], layouts):
        ranks = [loader(data, samples, schedule=schedule, batch_size=batch, rank=r, world_size=world)
                 for r in range(world)]
        for rank in ranks:
            if state is not None:
                rank.load_state_dict(state)
            assert rank.step * world * batch == start
        mix = ranks[0].source.mix
        for step in range(start // (world * batch), end // (world * batch)):
            rows.append(np.concatenate([rank.batch_at(step)["input_ids"].numpy() for rank in ranks]))
            chosen = mix.of(np.concatenate([rank.steps.sample_ids(step) for rank in ranks]))[0]
            names += [mix.registry[k].name.split("_")[0] for k in chosen]
        for rank in ranks:
            rank.step = end // (world * batch)
        state = ranks[0].state_dict()
    return np.concatenate(rows), names, state


def shares(names: list[str]) -> list[int]:
    return [names.count(name) for name in NAMES]


@pytest.mark.parametrize("boundary", [60, 61])  # at step 61 the mix changes inside a global batch of 24
@pytest.mark.parametrize("layout", [(3, 8), (1, 4)])
def test_a_resume_on_another_global_batch_changes_the_mix_at_the_uninterrupted_runs_sample(prefixes, layout,
                                                                                           boundary):
    """Stopped at step 57 of a global batch of 8 and resumed on 3 ranks x 8 or 1 rank x 4: the phase that begins
    at step `boundary` begins at sample 8 x `boundary` as in the uninterrupted run, so every remaining sample and
    each dataset's share are the uninterrupted run's."""
    schedule, samples, stop = [(0, [0.6, 0.3, 0.1]), (boundary, [0.0, 0.5, 0.5])], 120 * 8, 57 * 8
    whole, whole_names, _ = global_stream(prefixes, samples, [], [(1, 8)], schedule)
    resumed, names, state = global_stream(prefixes, samples, [stop], [(1, 8), layout], schedule)
    equal = (resumed[stop:] == whole[stop:]).all(axis=1)
    assert equal.sum() == samples - stop, f"{equal.sum()} of {samples - stop} remaining samples equal"
    assert shares(names[stop:]) == shares(whole_names[stop:])
    assert [(p["step"], p["from"], p["reached"]) for p in ledger(state)["phases"]] == \
        [(0, 0, True), (boundary, boundary * 8, True)]


LAYOUTS = [(1, 4), (2, 2), (1, 6), (3, 2), (1, 8), (2, 4), (4, 2), (1, 12), (3, 4), (2, 6), (3, 8), (1, 24)]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_run_resumed_on_global_batches_of_4_to_24_takes_the_uninterrupted_samples(prefixes, data):
    samples = 240
    first = data.draw(st.sampled_from(LAYOUTS[:8]))
    schedule = data.draw(schedules(samples // (first[0] * first[1])))
    stops = sorted(data.draw(st.sets(st.sampled_from(range(24, samples, 24)), min_size=1, max_size=3)))
    layouts = [first, *(data.draw(st.sampled_from(LAYOUTS)) for _ in stops)]
    whole, whole_names, _ = global_stream(prefixes, samples, [], [first], schedule)
    pieces, names, state = global_stream(prefixes, samples, stops, layouts, schedule)
    np.testing.assert_array_equal(pieces, whole)
    assert names == whole_names
    assert ledger(state)["ranks"]["disjoint"]


def stopped_state(data, schedule, layout=(1, 8), steps=57):
    """The loader state of a run of 120 steps stopped after `steps`."""
    run = loader(data, 120 * 8, schedule=schedule, batch_size=layout[1], rank=0, world_size=layout[0])
    run.step = steps
    return run.state_dict()


def test_a_new_phase_step_with_another_global_batch_is_refused_in_one_line(prefixes):
    """The state knows the samples of its schedule's steps; a phase at another step could count global batches of
    8 or of 24, so the resume is refused, naming the phase and the fix. Same steps with new weights, or a new step
    with the same global batch, are taken."""
    state = stopped_state(prefixes, [(0, [0.6, 0.3, 0.1]), (60, [0.0, 0.5, 0.5])])
    moved = [(0, [0.6, 0.3, 0.1]), (70, [0.0, 0.5, 0.5])]
    with pytest.raises(UserError) as refused:
        loader(prefixes, 120 * 8, schedule=moved, batch_size=8, rank=0, world_size=3).load_state_dict(state)
    line = str(refused.value)
    assert "\n" not in line and "phase 2 starts at step 70" in line and "sample 560" in line and "1,680" in line
    assert "fix: keep the state's phase steps (0, 60)" in line and "global batch of 8" in line
    reweighted = loader(prefixes, 120 * 8, schedule=[(0, [1, 1, 1]), (60, [1, 0, 0])], batch_size=8, world_size=3,
                        rank=0)
    reweighted.load_state_dict(state)
    assert [s.start for s in reweighted.source.mix.segments] == [0, 456, 480]
    same_batch = loader(prefixes, 120 * 8, schedule=moved, batch_size=8)
    same_batch.load_state_dict(state)
    assert [s.start for s in same_batch.source.mix.segments] == [0, 560]


def test_a_state_saved_before_the_phases_were_kept_counts_steps_in_its_first_stints_global_batch(prefixes):
    """A state without `phases` still loads, and resumed on 3 x 8 takes the uninterrupted samples of 1 x 8."""
    schedule = [(0, [0.6, 0.3, 0.1]), (60, [0.0, 0.5, 0.5])]
    whole, _, _ = global_stream(prefixes, 120 * 8, [], [(1, 8)], schedule)
    state = stopped_state(prefixes, schedule)
    older = {**state, "mix": {k: v for k, v in state["mix"].items() if k not in ("phases", "samples_per_step")}}
    ranks = [loader(prefixes, 120 * 8, schedule=schedule, batch_size=8, rank=r, world_size=3) for r in range(3)]
    for rank in ranks:
        rank.load_state_dict(older)
    rest = [np.concatenate([rank.batch_at(step)["input_ids"].numpy() for rank in ranks])
            for step in range(19, 40)]
    np.testing.assert_array_equal(np.concatenate(rest), whole[57 * 8:])


@pytest.mark.heavy
def test_helpers_training_refuses_a_moved_phase_with_another_global_batch_in_one_line(prefixes, tmp_path):
    """What a user sees: exit 2, one line naming the phase and the fix, no traceback."""
    tiny = ["--steps", "4", "--seq-length", "32", "--model", "hidden_size=32", "--model", "intermediate_size=64",
            "--model", "num_hidden_layers=1", "--model", "num_attention_heads=4", "--train", "eval_every=0",
            "--no-progress", "--implementation", "fast", "--checkpoint-dir", str(tmp_path / "checkpoints")]
    datasets = f"datasets: [{prefixes[0]}, {prefixes[1]}]\nphases:\n  - {{step: 0, weights: [0.8, 0.2]}}\n"
    for name, step in (("planned", 3), ("moved", 2)):
        (tmp_path / f"{name}.yaml").write_text(datasets + f"  - {{step: {step}, weights: [0.1, 0.9]}}\n")

    def train(schedule: str, *extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "helpers.training", "--data-schedule",
                               str(tmp_path / f"{schedule}.yaml"), *tiny, *extra], capture_output=True, text=True)

    assert train("planned", "--global-batch-size", "4", "--until-step", "1").returncode == 0
    refused = train("moved", "--global-batch-size", "2", "--resume")
    said = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert refused.returncode == 2 and "Traceback" not in refused.stderr and len(said) == 1, refused.stderr
    assert "phase 2 starts at step 2" in said[0] and "fix:" in said[0] and "global batch of 4" in said[0]
