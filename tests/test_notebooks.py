"""What the notebooks record (helpers.workshop.env.record) is read back and checked: the metrics of nbval's own
run with the default parameters (`default_run_metrics` in conftest.py: one run of each notebook serves nbval's
comparison of the committed outputs and these checks). Runs with other parameters, headless, are
tests/test_runs.py's.
"""

from __future__ import annotations

import importlib.util

import nbformat
import pytest

from helpers.common.paths import DATA_DIR, NOTEBOOK_DIR, RUNS_DIR

pytestmark = pytest.mark.notebook


def test_every_notebook_has_the_workshop_shape():
    notebooks = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
    assert len(notebooks) >= 2
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, f"{path.name}: exactly one cell tagged 'parameters'"
        markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        for heading in ("**What you will do**", "**Prerequisites**", "**Run time**", "## Exercises", "## What you learned"):
            assert heading in markdown, f"{path.name}: missing {heading}"
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        assert "assert " in code, f"{path.name}: checks what it teaches"
        assert "class " not in code, f"{path.name}: classes belong in helpers"
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
        assert outputs, f"{path.name}: committed with the outputs of its default run"
        assert not any(o.output_type == "error" for o in outputs), f"{path.name}: committed with an error"


def test_00_environment_and_corpus(default_run_metrics):
    metrics = default_run_metrics("00_environment_and_corpus")
    assert metrics["device"] in {"cpu", "cuda", "mps"}
    assert metrics["corpus_mb.total"] >= 10
    assert metrics["corpus_documents.literature"] == 1374  # fixed, checksummed source
    assert metrics["median_document_chars.code"] > metrics["median_document_chars.docs"]
    assert metrics["median_length_ratio"] > 3
    assert metrics["literature_documents_near_cap"] == 210  # the 16,000-character cap's spike, fixed source
    assert metrics["ln_vocab.llama3"] == pytest.approx(11.7617, abs=1e-4)  # ln 128,256: the flat loss of random tokens
    assert metrics["ln_vocab.bytes"] == pytest.approx(5.553, abs=1e-3)  # ln 258: the bytes tokenizer's ids
    # the silent fallback: the same tiny model stays at ln V on random ids and falls on real text
    assert metrics["fallback_final_loss"] == pytest.approx(metrics["ln_vocab.bytes"], abs=0.05)
    assert metrics["real_final_loss"] < metrics["ln_vocab.bytes"] - 1


def test_01_tokenizer_choice(default_run_metrics):
    m = default_run_metrics("01_tokenizer_choice")
    for domain in ("literature", "docs", "code"):
        assert 2.8 < m[f"bytes_per_token.llama3.{domain}"] < 5.5
        assert m[f"bytes_per_token.bytes.{domain}"] == pytest.approx(1.0, abs=0.02)
        assert m[f"bytes_per_token.mistral.{domain}"] < m[f"bytes_per_token.llama3.{domain}"]
        assert len(m[f"bpe_bytes_per_token.{domain}"]) == 3  # one for each of the default vocabulary sizes
    assert m["vocab_parameter_share.llama3"] > 0.5 > m["vocab_parameter_share.bytes"]
    assert m["disk_bytes_per_text_byte.llama3"] > m["disk_bytes_per_text_byte.mistral"]
    assert m["mb_per_s.llama3"] > 0  # a rate is recorded; how fast is for benchmarks/, not tests
    assert (m["llama3_hub_vocab_size"], m["llama3_hub_len"]) == (128_000, 128_256)
    assert m["mistral_transformers_conversion_disagreements"] >= 1


def test_02_to_05_preprocess_inspect_blend_and_pack_the_corpus(default_run_metrics):
    m = default_run_metrics("02_preprocessing")
    for domain in ("literature", "docs", "code"):
        assert m[f"documents.{domain}"] > 0 and m[f"tokens.{domain}"] > 50 * m[f"documents.{domain}"]
    assert m["speedup_vs_megatron_style"] > 0  # recorded; the speed goal lives in benchmarks/
    assert 0 < m["val_token_share"] < 1
    assert m["special_documents_in_corpus"] == 0
    assert m["parquet_same_bytes"] is True  # the literature domain from Parquet shards, byte for byte

    m = default_run_metrics("03_index_inspection")
    assert m["check_passed.literature"] is True
    assert m["faults_caught"] == 4

    m = default_run_metrics("04_blending")
    assert m["max_cumulative_deviation"] < 0.01
    assert m["achieved_share.literature"] == pytest.approx(0.5, abs=0.01)
    assert m["reads_per_token.docs"] > m["reads_per_token.literature"] > 0
    assert m["unread_after_one_epoch.random"] > 0.25 > 0.01 > m["unread_after_one_epoch.megatron"]

    m = default_run_metrics("05_packing_visualization")
    assert m["padding_fraction.best_fit_decreasing"] < m["padding_fraction.pad"]
    assert m["rows.best_fit_decreasing"] <= min(m[f"rows.{s}"] for s in ("pad", "next_fit", "first_fit", "window"))
    assert m["packed_loss_gap"] < 1e-9
    assert 0 < m["pad_and_truncate_thrown_away_tokens"] < m["corpus_tokens"]  # the corpus has documents over 1024
    assert m["pad_and_truncate_padding_fraction"] > m["padding_fraction.best_fit_decreasing"]
    assert 0 < m["cross_document_pair_share.concat"] < 1
    assert m["streaming_deterministic"] is True


def test_06_real_beats_synthetic_and_synthetic_sits_at_ln_v(default_run_metrics):
    m = default_run_metrics("06_training_real_vs_synthetic")
    assert m["real_final_loss"] < m["synthetic_final_loss"] - 1.0
    assert m["synthetic_final_loss"] >= 0.95 * m["ln_vocab"] and m["synthetic_eval_loss"] >= 0.95 * m["ln_vocab"]
    assert m["real_eval_loss"] < m["synthetic_eval_loss"]
    assert m["real_final_loss"] < m["unigram_entropy"] < m["ln_vocab"]  # past token frequencies, into context
    assert m["ln_vocab"] == pytest.approx(8.318, abs=1e-3)  # ln 4096: the vocabulary came from the sidecar
    assert 0 < m["max_reads_per_token"] < 1  # 60 steps of 16 x 128 read each domain less than once
    assert (RUNS_DIR / "06" / "real.csv").exists() and (RUNS_DIR / "06" / "synthetic.csv").exists()


def test_07_cleaning_measures_duplication_and_its_effect_on_the_blend(default_run_metrics):
    m = default_run_metrics("07_cleaning_dedup_scaling")
    assert m["removed_documents"] == 2  # one exact copy in docs, one in code; nothing near-duplicate at 0.8
    assert m["removed_fraction.exact.docs"] == pytest.approx(1 / 79, abs=1e-6)
    assert m["removed_fraction.exact.code"] == pytest.approx(1 / 192, abs=1e-6)
    assert m["removed_fraction.fuzzy.literature"] == m["removed_fraction.fuzzy.docs"] == 0
    assert 0.5 < m["nearest_pair_jaccard"] < 0.8
    assert m["minhash_mean_abs_error"] < 0.02
    assert m["contained_bytes_fraction.docs"] > 0.1 > m["contained_bytes_fraction.code"]
    assert 0.4 < m["folio_bytes_fraction"] < 0.55 and m["edition_jaccard_5gram"] < 0.1
    assert m["reads_per_token.one_edition.literature"] > 1.8 * m["reads_per_token.raw.literature"]
    assert m["tokens_removed_fraction.docs"] < 0.01
    assert m["modules_missing_an_import"] > 0  # --lines deletes imports from code
    assert m["precision.strict.0.15"] < m["precision.broad.0.15"]
    if importlib.util.find_spec("ray") is not None:  # the Ray deep dive skips without ray
        assert m["ray_identical_outputs"] is True  # the same run as Ray tasks wrote the same files
    assert (DATA_DIR / "clean" / "report.json").exists()


def test_08_every_framework_sees_the_same_batches_and_resumes_across_world_sizes(default_run_metrics):
    m = default_run_metrics("08_same_data_every_framework")
    assert m["same_batches_everywhere"] is True and m["max_curve_gap"] < 1e-3
    finals = [m[f"final_loss.{name}"] for name in ("helpers.training", "trainer", "deepspeed", "megatron")]
    assert max(finals) < m["ln_vocab"] - 1.0  # 20 steps: well below random guessing
    assert m["clipping_gap_at_last_step"] > 100 * max(m["max_curve_gap"], 1e-6)  # DeepSpeed's default clipping parts
    assert m["twice_shifted_loss_gap_at_step_0"] < 0.05  # labels shifted twice: invisible at step 0
    assert m["resume_max_difference"] < 1e-7
    assert (RUNS_DIR / "08" / "deepspeed.csv").exists() and (RUNS_DIR / "08" / "checkpoints").is_dir()
    # deep dive 7: the last steps on code lower code's held-out loss; resumed with literature's weight cut and
    # code's raised, megatron-core's rebuilt blend reads literature twice and skips code, at the same loss as ours
    assert m["anneal_change.code"] < 0 < m["anneal_change.literature"]
    assert m["megatron_repeated.literature"] > 0 and m["megatron_skipped.code"] > 0
    assert m["megatron_skipped.literature"] == m["megatron_repeated.code"] == 0
    assert m["resumed_loss_gap"] < 0.05 and (RUNS_DIR / "08" / "mix-checkpoints").is_dir()


def test_09_every_planted_bug_is_named_and_three_show_in_the_loss(default_run_metrics):
    m = default_run_metrics("09_is_my_batch_real")
    assert m["healthy_ok"] is True and m["bugs_caught"] == m["bugs_planted"] == 12
    assert m["trainer_default_stopped"] is True
    assert m["top10_share.llama3.real"] > 0.15 > 0.02 > m["top10_share.llama3.random"]
    assert m["final_loss.random-fallback"] == pytest.approx(m["eval_loss.random-fallback"], abs=0.2)
    assert m["final_loss.stream-loops"] < m["final_loss.healthy"] - 1 < m["eval_loss.stream-loops"] - 1
    assert m["eval_loss.double-shift"] > m["eval_loss.healthy"] + 0.2
