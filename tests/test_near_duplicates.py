"""Near-duplicate removal (`helpers.clean --fuzzy`) as a crawl needs it: a pair is removed only when the
exact Jaccard of its shingle sets reaches the threshold, never on the signature's estimate; a cluster of
thousands of copies is found by comparing each with a few representatives, not every pair; the same
records are kept whatever the parts and the engine."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers.clean import clean
from helpers.clean.text.shingles import exact_jaccard

WORDS = 1_000  # 996 word 5-grams: changing k words 5 apart gives J = (996 - 5k) / (996 + 5k)


def text_of(seed: int, words: int = WORDS) -> str:
    rng = np.random.default_rng(seed)
    return " ".join(f"w{value}" for value in rng.integers(0, 10**9, words))


def changed(text: str, count: int, seed: int) -> str:
    """`text` with `count` words replaced, 10 apart, so each change removes 5 shingles of its own."""
    words = text.split()
    for k in range(count):
        words[20 + 10 * k] = f"changed{seed}x{k}"
    return " ".join(words)


def write(path, texts: list[str]) -> None:
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)))


def removed_ids(folder) -> dict[str, str]:
    lines = (folder / "removed.jsonl").read_text().splitlines()
    return {entry["id"]: entry["duplicate_of"]["id"] for entry in map(json.loads, lines)}


def test_a_pair_just_below_the_threshold_stays_and_one_just_above_goes(tmp_path):
    above_original, below_original = text_of(1), text_of(2)
    above, below = changed(above_original, 22, 1), changed(below_original, 23, 2)
    assert 0.80 < exact_jaccard(above_original, above) < 0.802
    assert 0.79 < exact_jaccard(below_original, below) < 0.80
    write(tmp_path / "in.jsonl", [above_original, below_original, above, below] + [text_of(9 + i) for i in range(6)])
    # 128 bands of one row: a pair at J = 0.8 is a candidate with probability 1 - 0.2**128, so only the
    # exact check decides; the signature's estimate of the pair below (sigma 0.035) often passes 0.8
    report = clean([tmp_path / "in.jsonl"], tmp_path / "out", fuzzy=True, threshold=0.8, bands=128, rows=1,
                   progress=False)
    assert removed_ids(tmp_path / "out") == {"d2": "d0"}
    fuzzy = report["fuzzy"]
    assert fuzzy["candidate_documents"] >= 4 and fuzzy["bands_from"] == "--bands and --rows"
    assert fuzzy["candidate_probability"]["T"] == 1.0


def test_the_chosen_bands_are_in_the_report_with_their_curve(tmp_path):
    originals = [text_of(i) for i in range(8)]
    write(tmp_path / "in.jsonl", originals + [changed(t, 3, i) for i, t in enumerate(originals)])
    report = clean([tmp_path / "in.jsonl"], tmp_path / "out", fuzzy=True, threshold=0.8, progress=False)
    fuzzy = report["fuzzy"]
    assert (fuzzy["bands"], fuzzy["rows"], fuzzy["bands_from"]) == (14, 7, "chosen for recall at the threshold")
    assert fuzzy["candidate_probability"]["T"] >= 0.95 and fuzzy["candidate_probability"]["T+0.02"] >= 0.98
    assert removed_ids(tmp_path / "out") == {f"d{8 + i}": f"d{i}" for i in range(8)}  # J = 0.97: all caught


def test_five_thousand_copies_are_joined_through_representatives_not_pairs(tmp_path):
    original = text_of(0, words=120)
    copies = [changed(original, 1, seed) for seed in range(5_000)]
    write(tmp_path / "in.jsonl", [original] + copies + [text_of(100 + i, words=120) for i in range(50)])
    report = clean([tmp_path / "in.jsonl"], tmp_path / "out", fuzzy=True, threshold=0.8, workers=2,
                   progress=False)
    fuzzy = report["fuzzy"]
    assert fuzzy["removed"] == 5_000 and set(removed_ids(tmp_path / "out").values()) == {"d0"}
    assert fuzzy["candidate_pairs"] >= 5_000 * 5_000 // 2  # what listing every pair of a bucket would hold
    assert fuzzy["most_representatives"] <= 32 and fuzzy["comparisons"] < 2 * 5_001  # what is held and done


@pytest.mark.parametrize("parts", [2, 7])
def test_the_same_records_are_kept_for_any_number_of_parts(tmp_path, parts):
    originals = [text_of(i, words=200) for i in range(30)]
    texts = originals + [changed(t, 2 + i % 3, i) for i, t in enumerate(originals[:20])]
    write(tmp_path / "in.jsonl", texts)
    clean([tmp_path / "in.jsonl"], tmp_path / "one", fuzzy=True, threshold=0.8, progress=False)
    clean([tmp_path / "in.jsonl"], tmp_path / "many", fuzzy=True, threshold=0.8, workers=2, parts=parts,
          progress=False)
    for name in ("in.jsonl", "removed.jsonl"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "many" / name).read_bytes()
    assert len(removed_ids(tmp_path / "one")) == 20
