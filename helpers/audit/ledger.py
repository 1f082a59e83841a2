"""What a run was trained on, from its loader state alone: per dataset, the samples and tokens it took against
what its schedule asked, the epochs it started, how many of its documents were seen 0, 1, 2, ... times, and
whether the ranks of every stint took disjoint slices of each global batch.

    python -m helpers.audit ledger runs/anneal/checkpoints            # the latest checkpoint in the folder
    python -m helpers.audit ledger runs/anneal/checkpoints/step-0000120 --json
    python -m helpers.audit ledger loader_state.json                  # json.dump(loader.state_dict(), ...)

The state holds each dataset's cursor and the segments of the mix it was read under (ranges of the stream,
not a row per sample), and the schedule's phases with the sample each begins at (a step counts the global batch
of the run that started the schedule, whatever batch a resume took); the documents seen are counted from the data,
opened again where the state names it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..common.checkpoint_folders import RUN_FILE, latest_checkpoint
from ..common.errors import UserError
from ..datasets.gpt_dataset import GPTDatasetConfig, split_span
from ..datasets.indexed import IndexedDataset, fingerprint, idx_path
from ..loading.epochs import EpochOrder
from ..loading.packing import pack
from ..loading.sources import permuted


def read_state(path: str | Path) -> tuple[dict, Path]:
    """The loader state in `path`: a JSON file of `state_dict()`, a checkpoint folder of `helpers.training`
    (its run.json), or a folder of checkpoints (the latest). Returns the state and the file it came from."""
    path = Path(path)
    if path.is_dir():
        folder = path if (path / RUN_FILE).exists() else latest_checkpoint(path)
        if folder is None:
            raise UserError(f"{path}: no checkpoint in it (step-NNNNNNN/{RUN_FILE}); fix: name a checkpoint folder, "
                            "a folder of them, or a loader state saved as JSON")
        path = folder / RUN_FILE
    if not path.is_file():
        raise UserError(f"{path}: no such file; fix: name a checkpoint folder or a loader state saved as JSON")
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UserError(f"{path}: not JSON ({err}); fix: save the state with json.dump(loader.state_dict(), f)") \
            from None
    state = content.get("loader", content) if isinstance(content, dict) else None
    if not isinstance(state, dict) or "mix" not in state:
        raise UserError(f"{path}: holds no loader state of a blend or schedule (no 'mix'); fix: name the state of "
                        "make_dataloader over Megatron prefixes, or a checkpoint of helpers.training on them")
    return state, path


def _segment_ends(segments: list[dict], consumed: int) -> list[tuple[int, int, list[float]]]:
    starts = [s["from"] for s in segments] + [consumed]
    return [(starts[i], min(starts[i + 1], consumed), s["weights"]) for i, s in enumerate(segments)]


def _histogram(seen: np.ndarray) -> list[int]:
    """Documents seen 0, 1, 2, ... times."""
    return np.bincount(seen).tolist() if seen.size else []


def _gpt_dataset(entry: dict, cut: dict, samples: int) -> dict:
    indexed = IndexedDataset(entry["prefix"])
    span = split_span(cut["split"], cut["split_name"], len(indexed)) or (0, 0)
    if indexed.sequence_lengths[span[0]:span[1]].sum() <= 1:  # an empty split of weight 0: nothing taken
        return {"tokens": 0, "per_epoch": 0, "documents_seen": _histogram(np.zeros(span[1] - span[0], np.int64)),
                "tokens_per_sample": cut["seq_length"]}
    config = GPTDatasetConfig(cut["seq_length"], cut["seed"], eod_id=None)
    order = EpochOrder(indexed, span, config, cut["split_name"])
    return {"tokens": samples * cut["seq_length"], "per_epoch": order.per_epoch,
            "documents_seen": _histogram(order.documents_seen(samples)), "tokens_per_sample": cut["seq_length"]}


def _packed_dataset(entry: dict, cut: dict, samples: int, salt: int) -> dict:
    indexed = IndexedDataset(entry["prefix"])
    begin, end = split_span(cut["split"], cut["split_name"], len(indexed)) or (0, 0)
    plan = pack(indexed.sequence_lengths[begin:end], cut["seq_length"], cut["strategy"], overlong="split")
    if plan.rows == 0:  # an empty split of weight 0: nothing taken
        return {"tokens": 0, "per_epoch": 0, "documents_seen": _histogram(np.zeros(end - begin, np.int64)),
                "tokens_per_sample": 0.0}
    rows = permuted(np.arange(samples, dtype=np.int64), plan.rows, cut["seed"], salt=salt)
    epochs = np.arange(samples) // plan.rows
    fill = plan.row_fill()
    seen = np.zeros(end - begin, dtype=np.int64)
    for e in np.unique(epochs):
        taken = np.zeros(plan.rows, dtype=bool)
        taken[rows[epochs == e]] = True
        seen[np.unique(plan.document[taken[plan.row]])] += 1
    return {"tokens": int(fill[rows].sum()), "per_epoch": plan.rows, "documents_seen": _histogram(seen),
            "tokens_per_sample": float(fill.mean()) if plan.rows else 0.0}


def _ranks(stints: list[dict], consumed: int) -> dict:
    """Whether the stints cover samples 0..consumed one after the other, each in whole global batches whose
    rank slices `r x B .. (r + 1) x B` are disjoint by construction; the problems found otherwise."""
    problems, expected = [], 0
    for stint in stints:
        size = stint["world_size"] * stint["batch_size"]
        if stint["from"] != expected:
            problems.append(f"samples {expected}..{stint['from']} were taken by no recorded stint")
        if (stint["to"] - stint["from"]) % size:
            problems.append(f"stint from sample {stint['from']} is not whole steps of {stint['world_size']} x "
                            f"{stint['batch_size']}")
        expected = stint["to"]
    if expected != consumed:
        problems.append(f"the stints end at sample {expected}, the state at {consumed}")
    return {"disjoint": not problems, "problems": problems, "stints": stints}


def ledger(state: dict) -> dict:
    """Per dataset what the run took and what it was asked; the ranks' stints (see the module docstring)."""
    mix, consumed = state["mix"], int(state["samples_consumed"])
    cut = mix["cut"]
    asked = np.zeros(len(mix["datasets"]))
    for start, end, weights in _segment_ends(mix["segments"], consumed):
        asked[:len(weights)] += np.array(weights) * max(end - start, 0)
    datasets = []
    for k, entry in enumerate(mix["datasets"]):
        samples = int(entry["samples"])
        row = {"name": entry["name"], "prefix": entry["prefix"], "samples": samples,
               "asked_samples": round(float(asked[k]), 1)}
        if not idx_path(entry["prefix"]).exists():
            raise UserError(f"{entry['prefix']}: the data of dataset {entry['name']} is not there; fix: run the "
                            "ledger where the run's data is (the state names its prefixes)")
        if fingerprint(entry["prefix"]) != entry["fingerprint"]:
            raise UserError(f"{entry['prefix']}: its data changed since the state was saved; fix: run the ledger on "
                            "the data the run read")
        opened = _gpt_dataset(entry, cut, samples) if cut["kind"] == "megatron" else \
            _packed_dataset(entry, cut, samples, salt=k + 1)
        row.update(tokens=opened["tokens"], asked_tokens=round(float(asked[k]) * opened["tokens_per_sample"]),
                   epochs=-(-samples // opened["per_epoch"]) if opened["per_epoch"] else 0,
                   samples_per_epoch=opened["per_epoch"], documents_seen=opened["documents_seen"])
        datasets.append(row)
    return {"samples_consumed": consumed, "seq_length": cut["seq_length"], "datasets": datasets,
            "segments": mix["segments"], "samples_per_step": mix.get("samples_per_step"),
            "phases": _phases(mix, consumed), "ranks": _ranks(state.get("stints", []), consumed)}


def _phases(mix: dict, consumed: int) -> list[dict]:
    """Each phase of the schedule: its step, the samples it spans (`to` None: to the end of the run) and whether
    the run reached it; none for a state saved before it kept them."""
    phases = mix.get("phases", [])
    ends = [p["from"] for p in phases[1:]] + [None]
    return [{"step": p["step"], "from": p["from"], "to": end, "weights": p["weights"], "reached": p["from"] < consumed}
            for p, end in zip(phases, ends)]


def ledger_table(book: dict, source: Path) -> str:
    """The ledger as a few aligned lines a person reads."""
    lines = [f"ledger of {source}: {book['samples_consumed']:,} samples of {book['seq_length']} tokens, "
             f"{len(book['segments'])} segment(s) of the mix"]
    width = max(len(d["name"]) for d in book["datasets"])
    lines.append(f"{'dataset':<{width}}  {'tokens':>12}  {'asked':>12}  {'epochs':>6}  documents seen 0/1/2/... times")
    for d in book["datasets"]:
        lines.append(f"{d['name']:<{width}}  {d['tokens']:>12,}  {d['asked_tokens']:>12,}  {d['epochs']:>6}  "
                     + "/".join(str(n) for n in d["documents_seen"]))
    if len(book["phases"]) > 1:  # a blend's one phase, from sample 0, says nothing the lines above do not
        shown = [f"step {p['step']:,} from sample {p['from']:,}: " + "/".join(f"{w:.3g}" for w in p["weights"])
                 + ("" if p["reached"] else " (not reached)") for p in book["phases"]]
        lines.append(f"phases (a step is {book['samples_per_step']} samples; weights in the order above): "
                     + "; ".join(shown))
    ranks = book["ranks"]
    stints = ", ".join(f"{s['world_size']} x {s['batch_size']} to sample {s['to']:,}" for s in ranks["stints"])
    lines.append(("ranks: disjoint slices of every global batch" if ranks["disjoint"] else
                  "ranks: NOT shown disjoint: " + "; ".join(ranks["problems"])) + (f" ({stints})" if stints else ""))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    from ..common.cli import CommandParser

    parser = CommandParser(prog="python -m helpers.audit ledger", description=__doc__.split("\n\n")[0])
    parser.add_argument("state", type=Path, help="a checkpoint folder, a folder of them, or a loader state (JSON)")
    parser.add_argument("--json", action="store_true", help="the ledger as JSON, for machines")
    args = parser.parse_args(argv)
    state, source = read_state(args.state)
    book = ledger(state)
    print(json.dumps(book, indent=2) if args.json else ledger_table(book, source))
    return 0 if book["ranks"]["disjoint"] else 1
