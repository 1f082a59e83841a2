"""Blend schedules and the ledger against values worked out by hand, not against another run of the same code: the
greedy rule's choice sample by sample, the sample each phase starts at, the weights a phase is normalised to, each
refusal's exact line, where a resumed run's segments begin, and the ledger's epochs, asked samples, reached phases
and rank stints at their boundaries."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from helpers.audit.ledger import ledger, ledger_table, read_state
from helpers.audit.ledger import main as ledger_main
from helpers.common.errors import UserError
from helpers.loading.loader import make_dataloader
from helpers.loading.schedule import Choice, Segment, choose, load_schedule_file, parse_schedule, resumed_segments, \
    segments_of
from helpers.preprocess import preprocess

SEQ = 16


def test_the_greedy_rule_chooses_as_worked_out_by_hand():
    # sample r of a segment goes to the largest w x max(r, 1) - taken; ties to the lowest index
    dataset, number = choose([Segment(0, (0.75, 0.25))], 8)
    assert dataset.tolist() == [0, 1, 0, 0, 0, 1, 0, 0]
    assert number.tolist() == [0, 0, 1, 2, 3, 1, 4, 5]
    dataset, number = choose([Segment(0, (0.5, 0.5))], 6)
    assert dataset.tolist() == [0, 1, 0, 1, 0, 1] and number.tolist() == [0, 0, 1, 1, 2, 2]
    # a dataset of weight 0 is never drawn, even where its score (0) ties the others'
    dataset, _ = choose([Segment(0, (0.0, 0.5, 0.5))], 6)
    assert dataset.tolist() == [1, 2, 1, 2, 1, 2]
    # a new segment restarts the counts where it begins, each dataset's numbers go on
    dataset, number = choose([Segment(0, (0.5, 0.5)), Segment(4, (0.25, 0.75))], 8)
    assert dataset.tolist() == [0, 1, 0, 1, 1, 0, 1, 1]
    assert number.tolist() == [0, 0, 1, 1, 2, 2, 3, 4]


def long_segments() -> list[Segment]:
    return [Segment(0, (0.75, 0.25)), Segment(60_000, (0.5, 0.5))]


def test_a_long_stream_is_chosen_in_python_up_to_4096_samples_then_whole_and_a_short_one_whole_at_once():
    """Choice makes only what is read: a few samples of a long stream for the first batch (no compiler yet), the
    rest in one compiled call past 4,096; a stream under 50,000 samples whole at its first read, and a long one
    whole at the first read that finds less than 50,000 left."""
    long = Choice(long_segments(), 100_000)
    assert long.made == 0
    long.upto(10)
    assert long.made == 10
    datasets, numbers = long.of([9])
    assert long.made == 10 and (datasets.tolist(), numbers.tolist()) == ([1], [2])  # dataset 1 at 1, 5 and 9
    assert Choice.PYTHON_SAMPLES == 4_096
    long.upto(4_096)
    assert long.made == 4_096
    long.upto(4_097)
    assert long.made == 100_000
    np.testing.assert_array_equal(long.prefix(100_000)[0], choose(long_segments(), 100_000)[0])
    past = Choice(long_segments(), 52_000)  # a long stream whose rest, once 3,000 are made, is short
    past.upto(3_000)
    past.upto(3_000)
    assert past.made == 3_000
    past.upto(3_001)
    assert past.made == 52_000
    short = Choice([Segment(0, (0.75, 0.25))], 49_999)
    short.upto(10)
    assert short.made == 49_999
    empty = short.of([])
    assert [part.size for part in empty] == [0, 0]


def test_segments_of_one_dataset_each_are_all_chosen_when_made_and_a_stream_must_start_at_0():
    choice = Choice([Segment(0, (1.0, 0.0)), Segment(4, (0.0, 1.0))], 100_000)
    assert choice.made == 100_000
    assert choice.prefix(6)[0].tolist() == [0, 0, 0, 0, 1, 1]
    for segments in ([], [Segment(5, (1.0,))]):
        with pytest.raises(ValueError, match="^the first segment must start at sample 0$"):
            Choice(segments, 10)


def test_phases_of_one_dataset_each_go_on_with_each_dataset_s_numbers():
    # one dataset per segment (nothing to choose): a dataset that comes back takes up its numbers where it left
    dataset, number = choose([Segment(0, (1.0, 0.0)), Segment(2, (0.0, 1.0)), Segment(3, (1.0, 0.0)),
                              Segment(5, (0.0, 1.0)), Segment(6, (1.0, 0.0))], 8)
    assert dataset.tolist() == [0, 0, 1, 0, 0, 1, 0, 0]
    assert number.tolist() == [0, 1, 0, 2, 3, 1, 4, 5]
    # a segment past the end is empty, one starting where the next does holds nothing
    dataset, number = choose([Segment(0, (0.0, 1.0)), Segment(2, (1.0, 0.0)), Segment(2, (0.0, 1.0)),
                              Segment(20, (1.0, 0.0))], 4)
    assert dataset.tolist() == [1, 1, 1, 1] and number.tolist() == [0, 1, 2, 3]


def test_each_phase_starts_at_its_step_times_the_samples_of_a_step_in_the_registry_s_columns():
    phases = parse_schedule([(0, [0.7, 0.3]), (800, [0.2, 0.8])], 2)
    assert segments_of(phases, 32, columns=[2, 0], registry_size=3) == [
        Segment(0, (0.3, 0.0, 0.7)), Segment(25_600, (0.8, 0.0, 0.2))]


def test_phases_are_read_from_pairs_or_mappings_and_normalised():
    assert parse_schedule([{"step": 0, "weights": [1, 3]}, (np.int64(5), (2, 2))], 2) == [
        (0, (0.25, 0.75)), (5, (0.5, 0.5))]


@pytest.mark.parametrize("schedule, line", [
    ("0:1,1", "schedule '0:1,1': fix: give a list of (step, weights) phases, the first at step 0"),
    ([], "schedule []: fix: give a list of (step, weights) phases, the first at step 0"),
    ([(0, [1, 1]), (5,)], "schedule phase 2 ((5,)) is not (step, weights); fix: write e.g. (800, [0.2, 0.8])"),
    ([{"step": 0}], "schedule phase 1: None is not 2 weights, one per dataset in the order the datasets are listed; "
                    "fix: give one weight per dataset"),
    ([(True, [1, 1])], "schedule phase 1: step True is not a whole number of steps; fix: e.g. 800"),
    ([(0, [1, 1]), (-1, [1, 1])], "schedule phase 2: step -1 is not a whole number of steps; fix: e.g. 800"),
    ([(0.0, [1, 1])], "schedule phase 1: step 0.0 is not a whole number of steps; fix: e.g. 800"),
    ([(0, [1, 1, 1])], "schedule phase 1: [1, 1, 1] is not 2 weights, one per dataset in the order the datasets are "
                       "listed; fix: give one weight per dataset"),
    ([(0, [1, 1]), (4, [1, 0]), (4, [0, 1])], "schedule phase 3 starts at step 4, not after step 4; fix: list the "
                                              "phases in order of their steps"),
    ([(3, [1, 1])], "the schedule's first phase starts at step 3; fix: start it at step 0"),
    ([(0, [1, -1])], "schedule phase 1: weights must be non-negative numbers, got [1.0, -1.0]; fix: give each "
                     "dataset 0 or more"),
    ([(0, [1, float("inf")])], "schedule phase 1: weights must be non-negative numbers, got [1.0, inf]; fix: give "
                               "each dataset 0 or more"),
    ([(0, [0, 0])], "schedule phase 1: weights sum to 0.0; fix: give at least one dataset a positive weight"),
])
def test_each_bad_schedule_is_refused_in_its_own_line(schedule, line):
    with pytest.raises(UserError) as refused:
        parse_schedule(schedule, 2)
    assert str(refused.value) == line


def test_a_schedule_file_weighs_prefixes_by_name_and_refuses_what_it_cannot_read(tmp_path):
    path = tmp_path / "mix.yaml"
    path.write_text("datasets: [a, b, c]\nphases:\n  - {step: 0, weights: {b: 1, a: 3}}\n  - {step: 8, weights: "
                    "[0, 0, 1]}\n")
    assert load_schedule_file(path) == (["a", "b", "c"], [(0, [3, 1, 0]), (8, [0, 0, 1])])
    for content, line in (
            ("datasets: [a]\nphases: [{step: 0, weights: {z: 1}}]\n",
             f"{path}: phase 1 weighs ['z'], not among its datasets; fix: name the prefixes of 'datasets'"),
            ("datasets: [a]\nphases: [{step: 0, weights: [1]}]\nseed: 3\n",
             f"{path}: a schedule file has two lists, 'datasets' (the prefixes) and 'phases', and nothing else; "
             f"found keys datasets, phases, seed; fix: write e.g. 'datasets: [PREFIX_A, PREFIX_B]' and 'phases: "
             "[{step: 0, weights: [0.7, 0.3]}, {step: 800, weights: [0.2, 0.8]}]'"),
            ("- a\n- b\n", "found a list;"),
            ("datasets: [a]\nphases: [{step: 0, weight: [1]}]\n",
             f"{path}: phase 1 ({{'step': 0, 'weight': [1]}}) should have 'step' and 'weights' only; fix: write e.g. "
             "{step: 800, weights: [0.2, 0.8]}")):
        path.write_text(content)
        with pytest.raises(UserError) as refused:
            load_schedule_file(path)
        assert line in str(refused.value) and str(refused.value).startswith(f"{path}: ")
    with pytest.raises(UserError) as refused:
        load_schedule_file(tmp_path / "absent.yaml")
    assert str(refused.value) == f"{tmp_path / 'absent.yaml'}: no such schedule file; fix: check the path"
    path.write_text("phases: [")
    with pytest.raises(UserError) as refused:
        load_schedule_file(path)
    assert str(refused.value).endswith("; fix: write e.g. 'phases: [{step: 0, weights: [0.7, 0.3]}, {step: 800, "
                                       "weights: [0.2, 0.8]}]'")


def test_a_resume_keeps_the_segments_that_began_before_it_and_not_one_that_begins_at_it():
    history = [Segment(0, (1.0, 0.0)), Segment(10, (0.0, 1.0))]
    assert resumed_segments(history, 10, [Segment(0, (0.5, 0.5))]) == [Segment(0, (1.0, 0.0)),
                                                                       Segment(10, (0.5, 0.5))]
    assert resumed_segments(history, 11, [Segment(0, (0.5, 0.5))]) == [*history, Segment(11, (0.5, 0.5))]
    assert resumed_segments(history, 11, [Segment(0, (0.5, 0.5)), Segment(11, (0.0, 1.0))]) == \
        [*history, Segment(11, (0.0, 1.0))]


@pytest.fixture(scope="module")
def two_prefixes(tmp_path_factory, corpus_dir) -> list[str]:
    """Two byte-level datasets of 3 documents of 200 characters each (603 tokens with their EODs)."""
    folder = tmp_path_factory.mktemp("ledger-values")
    made = []
    for name in ("literature", "docs"):
        lines = (corpus_dir / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()[:3]
        texts = [json.loads(line)["text"].encode("ascii", "ignore").decode()[:200] for line in lines]
        assert all(len(text) == 200 for text in texts)
        (folder / f"{name}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
        made.append(preprocess(folder / f"{name}.jsonl", folder / name, "bytes", append_eod=True,
                               progress=False).outputs["text"])
    return made


PACKED = {"seq_length": SEQ * 8, "num_samples": 40, "packing": "best_fit_decreasing"}  # rows of 128


def loader_of(prefixes, schedule, **options):
    """A loader over `prefixes` under `schedule`: one sample a step, rows of SEQ tokens, 120 samples, unless
    `options` say otherwise."""
    return make_dataloader(prefixes, schedule=schedule, **{"split": "100,0,0", "seq_length": SEQ, "num_samples": 120,
                                                           "seed": 5, "cache_dir": None, "batch_size": 1, **options})


def state_at(prefixes, step: int, schedule, **options) -> dict:
    """The loader state of a run (`loader_of`) that has taken `step` steps."""
    run = loader_of(prefixes, schedule, **options)
    run.step = step
    return run.state_dict()


def book_at(prefixes, step: int, schedule) -> dict:
    return ledger(state_at(prefixes, step, schedule))


def test_the_ledger_counts_an_epoch_begun_only_once_its_first_sample_is_taken(two_prefixes):
    per_epoch = (603 - 1) // SEQ  # megatron-core's samples per epoch: whole windows of SEQ + 1 tokens
    assert per_epoch == 37
    for step, epochs in ((37, 1), (38, 2)):
        first = book_at(two_prefixes, step, [(0, [1, 0])])["datasets"][0]
        assert (first["samples"], first["samples_per_epoch"], first["epochs"]) == (step, per_epoch, epochs)
        assert first["tokens"] == step * SEQ
        seen = first["documents_seen"]  # documents seen 0, 1, 2 times: every one once in a whole epoch
        assert seen == [0, 3] if epochs == 1 else (len(seen) == 3 and seen[0] == 0 and sum(seen) == 3)


def test_the_ledger_s_asked_samples_follow_each_phase_and_a_phase_is_reached_past_its_first_sample(two_prefixes):
    schedule = [(0, [3, 1]), (40, [0, 1])]
    at_phase = book_at(two_prefixes, 40, schedule)
    assert [d["asked_samples"] for d in at_phase["datasets"]] == [30.0, 10.0]
    assert [p["reached"] for p in at_phase["phases"]] == [True, False]
    past = book_at(two_prefixes, 44, schedule)
    assert [d["asked_samples"] for d in past["datasets"]] == [30.0, 14.0]
    assert [d["samples"] for d in past["datasets"]] == [30, 14]
    assert [(p["from"], p["to"], p["reached"]) for p in past["phases"]] == [(0, 40, True), (40, None, True)]


def test_the_ledger_names_each_gap_or_broken_step_in_the_ranks_stints(two_prefixes):
    state = state_at(two_prefixes, 10, [(0, [1, 1])], batch_size=2)
    assert ledger(state)["ranks"] == {"disjoint": True, "problems": [], "stints": state["stints"]}
    state["stints"] = [{"from": 0, "to": 6, "world_size": 1, "batch_size": 2},
                       {"from": 8, "to": 18, "world_size": 1, "batch_size": 3}]
    assert ledger(state)["ranks"]["problems"] == [
        "samples 6..8 were taken by no recorded stint", "stint from sample 8 is not whole steps of 1 x 3",
        "the stints end at sample 18, the state at 20"]


def test_the_ledger_reads_a_state_file_a_checkpoint_or_the_latest_of_a_folder_and_refuses_the_rest(two_prefixes,
                                                                                                    tmp_path, capsys):
    state = state_at(two_prefixes, 8, [(0, [1, 1]), (5, [0, 1])], batch_size=2)
    (tmp_path / "state.json").write_text(json.dumps(state))
    for step in (3, 12):
        (tmp_path / "runs" / f"step-{step:07d}").mkdir(parents=True)
        (tmp_path / "runs" / f"step-{step:07d}" / "run.json").write_text(json.dumps({"loader": state, "step": step}))
    (tmp_path / "runs" / "step-0000020").mkdir()  # no run.json: not a complete checkpoint
    assert read_state(tmp_path / "state.json") == (state, tmp_path / "state.json")
    assert read_state(tmp_path / "runs") == (state, tmp_path / "runs" / "step-0000012" / "run.json")
    assert read_state(tmp_path / "runs" / "step-0000003")[1] == tmp_path / "runs" / "step-0000003" / "run.json"
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "other.json").write_text(json.dumps({"loader": {"seed": 1}}))
    for path, line in (
            (tmp_path / "runs" / "step-0000020", f"{tmp_path / 'runs' / 'step-0000020'}: no checkpoint in it "
             "(step-NNNNNNN/run.json); fix: name a checkpoint folder, a folder of them, or a loader state saved as "
             "JSON"),
            (tmp_path / "absent.json", f"{tmp_path / 'absent.json'}: no such file; fix: name a checkpoint folder or "
             "a loader state saved as JSON"),
            (tmp_path / "other.json", f"{tmp_path / 'other.json'}: holds no loader state of a blend or schedule (no "
             "'mix'); fix: name the state of make_dataloader over Megatron prefixes, or a checkpoint of "
             "helpers.training on them")):
        with pytest.raises(UserError) as refused:
            read_state(path)
        assert str(refused.value) == line
    with pytest.raises(UserError, match=r"bad.json: not JSON \(.*\); fix: save the state with json.dump"):
        read_state(tmp_path / "bad.json")
    book = ledger(state)
    names = [d["name"] for d in book["datasets"]]
    seen = ["/".join(map(str, d["documents_seen"])) for d in book["datasets"]]
    assert ledger_table(book, tmp_path / "state.json").splitlines() == [
        f"ledger of {tmp_path / 'state.json'}: 16 samples of 16 tokens, 2 segment(s) of the mix",
        f"{'dataset':<24}  {'tokens':>12}  {'asked':>12}  {'epochs':>6}  documents seen 0/1/2/... times",
        f"{names[0]:<24}  {'80':>12}  {'80':>12}  {1:>6}  {seen[0]}",
        f"{names[1]:<24}  {'176':>12}  {'176':>12}  {1:>6}  {seen[1]}",
        "phases (a step is 2 samples; weights in the order above): step 0 from sample 0: 0.5/0.5; step 5 from sample "
        "10: 0/1",
        "ranks: disjoint slices of every global batch (1 x 2 to sample 16)"]
    assert ledger_main([str(tmp_path / "state.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(book))
    state["stints"][0]["batch_size"] = 3
    assert ledger_main([str(tmp_path / "state.json")]) == 0  # the file is read again: still the saved state
    (tmp_path / "broken.json").write_text(json.dumps(state))
    assert ledger_main([str(tmp_path / "broken.json")]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "ranks: NOT shown disjoint: stint from sample 0 is not " \
                                                        "whole steps of 1 x 3 (1 x 3 to sample 16)"


def test_the_ledger_refuses_data_that_is_gone_or_changed_and_counts_an_empty_split_as_nothing(two_prefixes, tmp_path):
    state = state_at(two_prefixes, 4, [(0, [1, 0])], batch_size=2)
    entry = state["mix"]["datasets"][0]
    gone = json.loads(json.dumps(state))
    gone["mix"]["datasets"][0]["prefix"] = str(tmp_path / "nowhere")
    with pytest.raises(UserError) as refused:
        ledger(gone)
    assert str(refused.value) == (f"{tmp_path / 'nowhere'}: the data of dataset {entry['name']} is not there; fix: run "
                                  "the ledger where the run's data is (the state names its prefixes)")
    changed = json.loads(json.dumps(state))
    changed["mix"]["datasets"][0]["fingerprint"] = "0" * 16
    with pytest.raises(UserError) as refused:
        ledger(changed)
    assert str(refused.value) == (f"{entry['prefix']}: its data changed since the state was saved; fix: run the ledger "
                                  "on the data the run read")
    empty = json.loads(json.dumps(state))
    empty["mix"]["cut"]["split"] = "0,100,0"  # no training split: the datasets hold no sample of it
    empty["mix"]["datasets"][0]["samples"] = 0
    first = ledger(empty)["datasets"][0]
    assert (first["tokens"], first["samples_per_epoch"], first["epochs"], first["documents_seen"]) == (0, 0, 0, [])


def test_the_ledger_command_s_help_json_and_table(two_prefixes, tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        ledger_main(["--help"])
    shown = capsys.readouterr().out
    assert done.value.code == 0 and shown.startswith("usage: python -m helpers.audit ledger [-h] [--json] state")
    assert "What a run was trained on, from its loader state alone" in shown and "The state holds" not in shown
    assert "\n  state       a checkpoint folder, a folder of them, or a loader state (JSON)\n" in shown
    assert shown.endswith("\n  --json      the ledger as JSON, for machines\n")
    state = state_at(two_prefixes, 5, [(0, [1, 2])], batch_size=2)
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state))
    book = ledger(state)
    assert [d["asked_samples"] for d in book["datasets"]] == [3.3, 6.7]  # 10 x 1/3 and 10 x 2/3, to one decimal
    assert ledger_main([str(path), "--json"]) == 0
    assert capsys.readouterr().out == json.dumps(book, indent=2) + "\n"
    assert ledger_main([str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"ledger of {path}: 10 samples of 16 tokens, 1 segment(s) of the mix"
    assert not any(line.startswith("phases") for line in lines)  # one phase from sample 0 says nothing more
    assert lines[-1] == "ranks: disjoint slices of every global batch (1 x 2 to sample 10)"


def test_the_ledger_asks_nothing_of_a_segment_not_reached_and_names_every_stint_problem(two_prefixes):
    state = state_at(two_prefixes, 5, [(0, [1, 1]), (50, [0, 1])], batch_size=2)
    state["mix"]["segments"].append({"from": 30, "weights": [0.0, 1.0]})  # begins after the state's 10 samples
    state["stints"] = [{"from": 0, "to": 4, "world_size": 1, "batch_size": 4},
                       {"from": 4, "to": 8, "world_size": 1, "batch_size": 3}]
    book = ledger(state)
    assert [d["asked_samples"] for d in book["datasets"]] == [5.0, 5.0]
    assert book["ranks"]["problems"] == ["stint from sample 4 is not whole steps of 1 x 3",
                                         "the stints end at sample 8, the state at 10"]
    assert ledger_table(book, "s").splitlines()[-2:] == [
        "phases (a step is 2 samples; weights in the order above): step 0 from sample 0: 0.5/0.5; step 50 from "
        "sample 100: 0/1 (not reached)",
        "ranks: NOT shown disjoint: stint from sample 4 is not whole steps of 1 x 3; the stints end at sample 8, the "
        "state at 10 (1 x 4 to sample 4, 1 x 3 to sample 8)"]
    state["stints"] = [{"from": 0, "to": 8, "world_size": 2, "batch_size": 2},
                       {"from": 8, "to": 10, "world_size": 1, "batch_size": 2}]
    assert ledger(state)["ranks"]["disjoint"]  # 8 - 0 and 10 - 8 samples: whole steps
    state["stints"] = [{"from": 0, "to": 4, "world_size": 1, "batch_size": 4},
                       {"from": 4, "to": 10, "world_size": 1, "batch_size": 3}]
    assert ledger(state)["ranks"]["disjoint"]  # 6 samples from sample 4: two steps of 3
    del state["stints"], state["mix"]["phases"]  # a state saved before they were kept
    book = ledger(state)
    assert book["phases"] == [] and book["ranks"]["problems"] == ["the stints end at sample 0, the state at 10"]
    assert ledger_table(book, "s").splitlines()[-1] == "ranks: NOT shown disjoint: the stints end at sample 0, the " \
                                                       "state at 10"


def test_a_state_file_holding_a_list_is_no_loader_state(tmp_path):
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(UserError, match="holds no loader state of a blend or schedule"):
        read_state(tmp_path / "list.json")


def test_the_ledger_of_packed_rows_counts_epochs_rows_and_tokens_as_worked_out(two_prefixes):
    def packed(step: int, **options) -> dict:
        return ledger(state_at(two_prefixes, step, [(0, [1, 0])], **{**PACKED, **options}))["datasets"][0]

    # rows of 128: each 201-token document as 128 + 73, 6 rows of 603 tokens an epoch, 100.5 tokens a row
    first = packed(5)
    assert (first["samples_per_epoch"], first["epochs"], first["documents_seen"]) == (6, 1, [0, 3])
    assert first["tokens"] in (603 - 128, 603 - 73) and first["asked_tokens"] == round(5 * 100.5)
    second = packed(7)  # the second epoch's first row: one document seen twice
    assert (second["epochs"], second["documents_seen"]) == (2, [0, 2, 1])
    assert second["tokens"] in (603 + 128, 603 + 73)
    one_row = packed(3, seq_length=1024)  # all three documents in one row of 1,024
    assert (one_row["samples_per_epoch"], one_row["epochs"], one_row["tokens"]) == (1, 3, 3 * 603)
    assert one_row["documents_seen"] == [0, 0, 0, 3]


def test_an_empty_split_of_packed_rows_is_a_row_of_zeros(two_prefixes):
    state = state_at(two_prefixes, 2, [(0, [1, 0])], **PACKED)
    state["mix"]["cut"]["split"] = "0,100,0"  # no training split: no row to pack
    state["mix"]["datasets"][0]["samples"] = 0
    row = ledger(state)["datasets"][0]
    assert {key: row[key] for key in ("samples", "tokens", "asked_tokens", "epochs", "samples_per_epoch",
                                      "documents_seen")} == {"samples": 0, "tokens": 0, "asked_tokens": 0, "epochs": 0,
                                                             "samples_per_epoch": 0, "documents_seen": []}
    assert row["asked_samples"] == 2.0


@pytest.fixture(scope="module")
def lettered(tmp_path_factory) -> list[str]:
    """Two byte-level datasets of three documents, each document one letter 200 times and its EOD (a, b, c; x, y,
    z): the letters of a sample name the documents it holds."""
    folder = tmp_path_factory.mktemp("lettered")
    made = []
    for name, letters in (("first", "abc"), ("second", "xyz")):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps({"text": c * 200}) + "\n" for c in letters))
        made.append(preprocess(folder / f"{name}.jsonl", folder / name, "bytes", append_eod=True,
                               progress=False).outputs["text"])
    return made


def served(prefixes, steps: int, **options) -> list[list[int]]:
    """Documents seen 0 and 1 times per dataset, read from the letters of the first `steps` batches the loader
    serves (one sample a step, all of them in the first epoch)."""
    run = loader_of(prefixes, [(0, [1, 1])], **options)
    letters = set()
    for batch, _ in zip(run, range(steps)):
        letters.update(chr(token) for token in batch["input_ids"].flatten().tolist() + batch["labels"][:, -1].tolist()
                       if 0 <= token < 256)
    touched = [len(letters & set(names)) for names in ("abc", "xyz")]
    return [[3 - count] + ([count] if count else []) for count in touched]


@pytest.mark.parametrize("options, steps", [({}, 10), ({"seed": 1234}, 10), ({**PACKED, "num_samples": 12}, 6),
                                            ({**PACKED, "num_samples": 12, "packing": "next_fit"}, 6)],
                         ids=["megatron-seed-5", "megatron-seed-1234", "packed-best-fit", "packed-next-fit"])
def test_the_ledger_s_documents_seen_are_those_the_loader_served_step_by_step(lettered, options, steps):
    for step in range(1, steps + 1):
        book = ledger(state_at(lettered, step, [(0, [1, 1])], **options))
        assert [d["documents_seen"] for d in book["datasets"]] == served(lettered, step, **options), step


def test_a_split_of_one_token_is_nothing_and_one_of_two_tokens_is_a_sample_of_one(tmp_path):
    """Megatron cuts samples of seq_length + 1 tokens: a split of one token holds none, of two tokens one sample
    of one token; a split of no documents, none."""
    prefixes = []
    for name, last in (("one", "c"), ("two", "cd")):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in ("a" * 200, "b" * 200,
                                                                                                  last)))
        prefixes.append(preprocess(tmp_path / f"{name}.jsonl", tmp_path / name, "bytes", append_eod=False,
                                   progress=False).outputs["text"])
    state = state_at(prefixes, 2, [(0, [1, 1])], seq_length=1)
    state["mix"]["cut"].update(split="67,33,0", split_name="valid")  # the validation split: the third document
    for entry in state["mix"]["datasets"]:
        entry["samples"] = 0
    one, two = ledger(state)["datasets"]
    assert (one["samples_per_epoch"], one["tokens"], one["documents_seen"]) == (0, 0, [1])
    assert (two["samples_per_epoch"], two["tokens"], two["documents_seen"]) == (1, 0, [1])
    state["mix"]["cut"].update(split="90,10,0")  # a share of 10% of three documents: none
    assert [d["documents_seen"] for d in ledger(state)["datasets"]] == [[], []]
    packed = state_at(prefixes, 2, [(0, [1, 1])], **PACKED)
    packed["mix"]["cut"].update(split="90,10,0", split_name="valid")
    assert [(d["samples_per_epoch"], d["documents_seen"]) for d in ledger(packed)["datasets"]] == [(0, []), (0, [])]
    packed["mix"]["cut"].update(split="67,33,0")  # the third document alone: one row, taken by the one sample
    book = ledger(packed)
    assert [d["prefix"] for d in book["datasets"]] == prefixes
    assert [(d["samples"], d["samples_per_epoch"], d["epochs"], d["tokens"], d["documents_seen"])
            for d in book["datasets"]] == [(1, 1, 1, 1, [0, 1]), (1, 1, 1, 2, [0, 1])]


def test_a_state_file_is_read_as_utf_8_whatever_the_locale_s_encoding(tmp_path):
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"mix": {"datasets": [{"name": "café"}]}}, ensure_ascii=False), encoding="utf-8")
    assert read_state(path)[0]["mix"]["datasets"][0]["name"] == "café"
    plain = {**os.environ, "LC_ALL": "POSIX", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}  # a 7-bit locale
    shown = subprocess.run([sys.executable, "-c", "import locale, sys; from helpers.audit.ledger import read_state; "
                            "print(locale.getpreferredencoding(False), ascii(read_state(sys.argv[1])[0]['mix']))",
                            str(path)], env=plain, capture_output=True, text=True)
    assert shown.stdout == "ANSI_X3.4-1968 {'datasets': [{'name': 'caf\\xe9'}]}\n", shown.stderr
