"""The domains of a mixture and one short run on them: what a swarm's runs are made of, and what bad input gets."""

from __future__ import annotations

import json

import pytest

from helpers.common.errors import UserError
from helpers.corpus.machine_domains import write_machine_domain
from helpers.datasets.indexed import IndexedDataset
from helpers.training.mix_domains import domain_names, prepare_domains
from helpers.training.mixture_runs import MIXTURE_SIZES, mixture_run, proof_sizes, size_settings


@pytest.fixture(scope="module")
def domains(tmp_path_factory, corpus_dir):
    """The five default domains, tokenized as bytes into a folder of this module's own."""
    folder = tmp_path_factory.mktemp("mix_domains")
    kinds = ["licences", "man-pages"]
    return domain_names(kinds), prepare_domains(corpus_dir, folder, kinds), folder


def test_the_machine_kinds_become_domains_of_real_documents(domains):
    names, prefixes, folder = domains
    assert names == ["literature", "docs", "code", "licences", "man-pages"]
    lines = (folder / "text" / "licences.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) > 10 and all(r["text"].strip() and r["id"].startswith("licences-") for r in records)
    sizes = {name: IndexedDataset(prefix).num_tokens for name, prefix in zip(names, prefixes)}
    assert 500_000 < sizes["licences"] < 1_100_000 and sizes["docs"] < sizes["literature"]


def test_preparing_again_tokenizes_nothing(domains, corpus_dir):
    names, prefixes, folder = domains
    before = {p: (folder / (p.rsplit("/", 1)[-1] + ".bin")).stat().st_mtime_ns for p in prefixes}
    assert prepare_domains(corpus_dir, folder, ["licences", "man-pages"]) == prefixes
    assert before == {p: (folder / (p.rsplit("/", 1)[-1] + ".bin")).stat().st_mtime_ns for p in prefixes}


def test_a_run_reads_its_mixture_and_scores_every_domain(domains):
    names, prefixes, _ = domains
    settings = size_settings("tiny")
    run = mixture_run(prefixes, names, [0.5, 0.0, 0.5, 0.0, 0.0], size="tiny", seed=0)
    assert sum(run.tokens.values()) == settings.steps * settings.batch_size * settings.seq_length
    assert run.tokens["docs"] == run.tokens["licences"] == 0 and run.tokens["literature"] > 0
    assert set(run.held_out_loss) == set(names) and all(0 < v < 6 for v in run.held_out_loss.values())
    assert set(run.metrics()) == {f"{field}.{n}" for field in ("held_out_loss", "tokens", "available_tokens")
                                  for n in names}


@pytest.mark.parametrize("call, says", [
    (lambda p, n: mixture_run(p, n, [0.5, 0.5], size="tiny"), "one name and one weight per domain"),
    (lambda p, n: mixture_run(p, n, [0.2] * 5, size="huge"), "unknown mixture-run size 'huge'"),
    (lambda p, n: mixture_run(p, n, size="tiny"), "5 domains, 5 names and 0 weights"),
    (lambda p, n: domain_names(["docs"]), "a name appears twice"),
    (lambda p, n: proof_sizes("proxy", "proxy"), "larger_size 'proxy' is the swarm's own size"),
    (lambda p, n: proof_sizes("proxy", "largest"), "unknown mixture-run size 'largest'"),
    (lambda p, n: write_machine_domain("poems", "/nonexistent/poems.jsonl"), "unknown kind of machine text 'poems'"),
])
def test_bad_input_is_one_line_with_its_fix(domains, call, says):
    names, prefixes, _ = domains
    with pytest.raises(UserError, match="fix:") as raised:
        call(prefixes, names)
    assert says in str(raised.value) and "\n" not in str(raised.value)


def test_a_missing_corpus_file_names_the_command_that_builds_it(tmp_path):
    with pytest.raises(UserError, match=r"literature.jsonl: no such corpus file; fix: .*helpers.corpus"):
        prepare_domains(tmp_path / "raw", tmp_path / "data", ["licences"])


def test_every_size_names_a_model_and_a_run_the_loop_accepts():
    for size in MIXTURE_SIZES:
        settings = size_settings(size)
        assert settings.steps > 0 and settings.eval_every == 0 and settings.eval_batches > 0
