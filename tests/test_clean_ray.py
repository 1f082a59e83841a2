"""`helpers.clean --engine ray` on a local Ray cluster: the same kept records, removals and bytes as the
local engine, for any number of parts, and a bad record reported as the local engine reports it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from helpers.clean import clean
from helpers.common.errors import UserError

STEPS = dict(normalize=True, exact=True, lines=True, fuzzy=True, line_min_count=2, progress=False)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> list[Path]:
    """Two small inputs with every kind of removal: exact and near duplicates across files, a repeated
    line, a record emptied by normalising, blank lines and a bare-CR line."""
    folder = tmp_path_factory.mktemp("clean-ray")
    story = " ".join(f"word{i % 37} tale{i % 11}" for i in range(300))
    header = "Copyright the example authors; all rights reserved here."
    first = [{"id": f"a{i}", "text": f"{header}\n{story} part {i} " + "x " * i} for i in range(12)]
    first += [{"id": "dup", "text": story}, {"id": "ctl", "text": "\x00\x01"}]
    second = [{"id": "b0", "text": story}, {"id": "b1", "text": story.replace("word3 ", "WORD3 ", 1)},
              {"id": "b2", "text": f"{header}\nfresh words only here"}, {"id": "b3", "text": header}]
    paths = []
    for name, records in (("a.jsonl", first), ("b.jsonl", second)):
        lines = [json.dumps(record) for record in records]
        lines.insert(3, "")
        paths.append(folder / name)
        paths[-1].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return paths


def _outputs(folder: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.name != "report.json"}


@pytest.mark.parametrize("parts", [1, 2, 7])
def test_ray_engine_writes_what_the_local_engine_writes(ray_cluster, inputs, tmp_path, parts):
    local = clean(inputs, tmp_path / "local", **STEPS)
    on_ray = clean(inputs, tmp_path / "ray", engine="ray", parts=parts, **STEPS)
    assert _outputs(tmp_path / "ray") == _outputs(tmp_path / "local")
    assert on_ray["inputs"] == local["inputs"] and on_ray["engine"] == "ray"
    removed = [json.loads(line) for line in (tmp_path / "ray" / "removed.jsonl").read_text().splitlines()]
    assert {r["step"] for r in removed} == {"normalize", "exact", "fuzzy", "lines"}


def test_ray_engine_reports_the_earliest_bad_record(ray_cluster, inputs, tmp_path):
    broken = tmp_path / "broken.jsonl"
    lines = inputs[0].read_text().splitlines()
    lines[9] = '{"id": "bad", "text": ["not", "a string"]}'
    broken.write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError, match=r"broken\.jsonl:10: field 'text'"):
        clean([broken], tmp_path / "out", engine="ray", parts=4, **STEPS)
    assert [p.name for p in (tmp_path / "out").iterdir()] == []


def test_the_quality_filters_run_on_ray_as_on_local_processes(ray_cluster, corpus_dir, tmp_path):
    """The filters are steps like the others: each Ray task splits words itself, and the output is the local one's."""
    real = [corpus_dir / "docs.jsonl", corpus_dir / "code.jsonl"]
    filters = dict(filters="c4-quality,gopher-quality,fineweb-quality", exact=True, progress=False)
    local = clean(real, tmp_path / "local", workers=2, **filters)
    on_ray = clean(real, tmp_path / "ray", engine="ray", parts=3, **filters)
    assert _outputs(tmp_path / "ray") == _outputs(tmp_path / "local")
    assert on_ray["inputs"] == local["inputs"]
    assert {row["step"] for row in local["inputs"][0]["steps"] if row.get("rules")} >= {"c4_quality"}


def test_decontamination_on_ray_writes_what_the_local_engine_writes(ray_cluster, humaneval, tmp_path):
    """A HumanEval problem planted in two of eight documents (on purpose): dropped, or cut GPT-3's way, the same on
    Ray in 7 parts as locally in one."""
    texts = [f"document {k} " + " ".join(f"w{k}x{i}" for i in range(300)) for k in range(8)]
    texts[2] += "\n" + humaneval.texts[11]
    texts[5] = humaneval.texts[40] + "\n" + texts[5]
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps({"id": f"d{k}", "text": text}) + "\n" for k, text in enumerate(texts)))
    for mode in ("drop", "gpt3"):
        local = clean([source], tmp_path / f"local-{mode}", decontaminate=["humaneval"], decontaminate_mode=mode,
                      parts=1, progress=False)
        on_ray = clean([source], tmp_path / f"ray-{mode}", decontaminate=["humaneval"], decontaminate_mode=mode,
                       engine="ray", parts=7, progress=False)
        assert _outputs(tmp_path / f"ray-{mode}") == _outputs(tmp_path / f"local-{mode}")
        assert on_ray["decontaminate"] == local["decontaminate"]
        assert local["decontaminate"]["benchmarks"]["humaneval"]["documents"] == {  # 43 shares a 13-gram with 40
            "HumanEval/11": 1, "HumanEval/40": 1, "HumanEval/43": 1}
