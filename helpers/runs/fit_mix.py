"""`python -m helpers.runs fit-mix`: fit mixing laws to a swarm's runs and propose a mixture for a target.

    python -m helpers.runs fit-mix runs/swarm/summary.json --target docs=0.5,man-pages=0.5 --csv runs/swarm/olmix
    python -m helpers.runs fit-mix --ratios ratios.csv --metrics metrics.csv --target docs

It fits the log-linear law and the linear baseline per domain (`helpers.runs.mixing_law`), says how well each
predicts a run left out, and proposes the mixture with the least predicted target loss, each domain repeated at
most --max-epochs times in a run of --run-tokens (`helpers.runs.mix_proposal`), next to the natural mixture
and the uniform one. `--csv DIR` writes the swarm as Olmix's ratios.csv and metrics.csv.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np

from ..common.cli import CommandParser
from ..common.errors import UserError
from .mix_proposal import check_caps, epoch_caps, propose_mix
from .mixing_law import LeaveOneOut, MixingLaw, fit_mixing_law, leave_one_out, require_runs
from .swarm import Swarm, parse_assignments, parse_target, read_swarm

KINDS = ("log_linear", "linear")
DEFAULT_MAX_EPOCHS = 4.0


@dataclass(frozen=True, eq=False)
class Candidate:
    """A mixture next to the target loss each law predicts for it."""

    name: str
    shares: np.ndarray
    predicted: dict[str, float]  # by kind of law


@dataclass(frozen=True, eq=False)
class MixFit:
    """Everything `fit-mix` found: the laws and how well each predicts a run left out, the caps, the proposal."""

    swarm: Swarm
    target: dict[str, float]
    laws: dict[str, MixingLaw]  # by kind: "log_linear", "linear"
    checks: dict[str, LeaveOneOut]  # by kind
    caps: np.ndarray | None
    run_tokens: int | None
    max_epochs: float | None
    proposal: np.ndarray
    candidates: tuple[Candidate, ...]  # the proposal, the natural mixture (when known) and the uniform one


def check_target_measured(swarm: Swarm, target: Mapping[str, float]) -> None:
    """Refuse a target whose domain's held-out loss some run did not record."""
    for domain in target:
        missing = np.flatnonzero(~np.isfinite(swarm.losses[:, swarm.domains.index(domain)]))
        if len(missing):
            raise UserError(f"{swarm.source}: {len(missing)} of {len(swarm.runs)} runs record no held-out loss on "
                            f"{domain!r}, the target's metric (held_out_loss.{domain}; in metrics.csv, a column "
                            f"{domain!r}), the first run {swarm.runs[missing[0]]}; fix: have every run record it")


def _caps(swarm: Swarm, max_epochs: float | None, run_tokens: int | None) -> np.ndarray | None:
    if max_epochs is None:
        return None
    if swarm.available_tokens is None:
        raise UserError(f"{swarm.source}: max epochs {max_epochs:g} needs each domain's available tokens, which the "
                        "swarm does not hold; fix: record available_tokens.<domain> in every run (beside --ratios: "
                        "give --available-tokens docs=N,...), or leave --max-epochs out")
    if run_tokens is None:
        raise UserError(f"{swarm.source}: max epochs {max_epochs:g} needs the tokens of a run, which the swarm does "
                        "not say; fix: give --run-tokens N")
    return epoch_caps(swarm.available_tokens, run_tokens, max_epochs)


def fit_mix(source: str | Path | Swarm, target: str | Mapping[str, float], *, max_epochs: float | None = 4.0,
            run_tokens: int | None = None, kl_reg: float = 0.0, skip_failed: bool = False) -> MixFit:
    """Fit both laws to the swarm in `source` (a summary.json or a Swarm), check each by leave-one-out on
    `target`, and propose a mixture bounded by `max_epochs` (None: no bound) of `run_tokens` (by default the
    swarm's median tokens a run)."""
    swarm = source if isinstance(source, Swarm) else read_swarm(source, skip_failed=skip_failed)
    target = parse_target(target, swarm.domains)
    check_target_measured(swarm, target)
    require_runs(swarm)
    run_tokens = swarm.tokens_per_run if run_tokens is None else int(run_tokens)
    caps = _caps(swarm, max_epochs, run_tokens)
    if caps is not None:
        check_caps(caps, swarm.domains)  # before the fits, which take a while
    laws = {kind: fit_mixing_law(swarm, kind) for kind in KINDS}
    checks = {kind: leave_one_out(swarm, target, kind) for kind in KINDS}
    proposal = propose_mix(laws["log_linear"], target, caps=caps, prior=swarm.natural, kl_reg=kl_reg)
    mixtures = {"proposal": proposal, "natural": swarm.natural,
                "uniform": np.full(len(swarm.domains), 1.0 / len(swarm.domains))}
    candidates = tuple(Candidate(name=name, shares=shares,
                                 predicted={kind: float(law.predict(shares, target)) for kind, law in laws.items()})
                       for name, shares in mixtures.items() if shares is not None)
    return MixFit(swarm=swarm, target=target, laws=laws, checks=checks, caps=caps, run_tokens=run_tokens,
                  max_epochs=max_epochs if caps is not None else None, proposal=proposal, candidates=candidates)


def _row(cells: list[str], widths: list[int]) -> str:
    return "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return [_row(header, widths), *(_row(r, widths) for r in rows)]


def _law_lines(fit: MixFit) -> list[str]:
    domains = list(fit.swarm.domains)
    log_linear, linear = fit.laws["log_linear"], fit.laws["linear"]
    lines = ["log-linear law per domain, L(r) = exp(log_c) + exp(r . t), fitted by summed Huber loss:"]
    lines += _table(["loss on", "log_c", *(f"t[{d}]" for d in domains)],
                    [[d, f"{law.log_c:.3f}", *(f"{v:.3f}" for v in law.t)] for d, law in log_linear.laws.items()])
    lines += ["linear law per domain, L(r) = r . b, by least squares:"]
    lines += _table(["loss on", *(f"b[{d}]" for d in domains)],
                    [[d, *(f"{v:.3f}" for v in law.b)] for d, law in linear.laws.items()])
    missing = [d for d in domains if d not in log_linear.laws]
    if missing:
        lines.append(f"no law for {', '.join(missing)}: some run recorded no held-out loss on it")
    return lines


def report_lines(fit: MixFit) -> list[str]:
    """The report `fit-mix` prints: the swarm, the laws, leave-one-out, the caps and the mixtures."""
    swarm, domains = fit.swarm, list(fit.swarm.domains)
    target = ",".join(f"{d}={w:.3g}" for d, w in fit.target.items())
    lines = [f"swarm: {swarm.source}: {len(swarm.runs)} runs over {len(domains)} domains ({', '.join(domains)})"
             + (f", {swarm.tokens_per_run:,} tokens a run (median)" if swarm.tokens_per_run else "")]
    if swarm.skipped:
        lines.append(f"skipped {len(swarm.skipped)} failed run(s): {', '.join(swarm.skipped)}")
    lines += [f"target: {target}", "", *_law_lines(fit), "",
              f"leave-one-out on the target ({len(swarm.runs)} fits per law, each predicting the run it left out):"]
    lines += _table(["law", "rank correlation", "mean |error|"],
                    [[kind.replace("_", "-"), f"{check.rank_correlation:.3f}", f"{check.mean_abs_error:.4f}"]
                     for kind, check in fit.checks.items()])
    lines.append("")
    if fit.caps is None:
        lines.append("limits: none (no epoch bound)")
    else:
        caps = ", ".join(f"{d} <= {c:.3f}" for d, c in zip(domains, fit.caps))
        lines.append(f"limits: at most {fit.max_epochs:g} epochs of each domain in {fit.run_tokens:,} tokens: {caps}")
    lines += _table(["mixture", *domains, "log-linear predicts", "linear predicts"],
                    [[c.name, *(f"{v:.3f}" for v in c.shares), f"{c.predicted['log_linear']:.4f}",
                      f"{c.predicted['linear']:.4f}"] for c in fit.candidates])
    return lines


def _parser() -> CommandParser:
    parser = CommandParser(prog="python -m helpers.runs fit-mix",
                           description="Fit mixing laws to a swarm of runs and propose a mixture for a target.")
    parser.add_argument("summary", nargs="?", type=Path, help="the swarm's summary.json (helpers.runs --out DIR)")
    parser.add_argument("--target", required=True, help="domain, or weights such as docs=0.5,man-pages=0.5")
    parser.add_argument("--max-epochs", type=float,
                        help=f"passes over a domain at most (default {DEFAULT_MAX_EPOCHS:g} when its tokens are known)")
    parser.add_argument("--run-tokens", type=int, help="tokens of the run to mix for (default: the swarm's median)")
    parser.add_argument("--kl-reg", type=float, default=0.0, help="pull towards the natural mixture (default 0)")
    parser.add_argument("--csv", type=Path, metavar="DIR", help="write Olmix's ratios.csv and metrics.csv into DIR")
    parser.add_argument("--skip-failed", action="store_true", help="fit the runs that ended, leaving failed ones out")
    parser.add_argument("--ratios", type=Path, help="Olmix's ratios.csv, instead of a summary.json")
    parser.add_needing("--metrics", ("--ratios",), type=Path, help="Olmix's metrics.csv (with --ratios)")
    parser.add_needing("--available-tokens", ("--ratios",), metavar="D=N,...",
                       help="tokens each domain holds (with --ratios; needed for --max-epochs)")
    return parser


def _swarm(args) -> Swarm:
    """The swarm the flags name: a summary.json, or Olmix's two CSV files."""
    if (args.summary is None) == (args.ratios is None):
        raise UserError("give a summary.json or --ratios R.csv --metrics M.csv, one of the two; fix: e.g. "
                        "'python -m helpers.runs fit-mix runs/swarm/summary.json --target docs'")
    if args.summary is not None:
        return read_swarm(args.summary, skip_failed=args.skip_failed)
    if args.metrics is None:
        raise UserError(f"--ratios {args.ratios}: needs --metrics beside it; fix: add --metrics metrics.csv")
    if args.skip_failed:
        raise UserError("--skip-failed: only a summary.json records failed runs; fix: leave --skip-failed out")
    from .olmix_csv import read_olmix_csvs

    available = parse_assignments(args.available_tokens, "--available-tokens") if args.available_tokens else None
    if available is None and args.max_epochs is not None:
        raise UserError(f"--max-epochs {args.max_epochs:g}: the CSV files hold no available tokens to bound; fix: add "
                        "--available-tokens docs=N,... (one count per domain), or leave --max-epochs out")
    return read_olmix_csvs(args.ratios, args.metrics, available_tokens=available)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.kl_reg < 0:
        raise UserError(f"--kl-reg {args.kl_reg:g}: a pull towards the natural mixture cannot be negative; fix: give "
                        "--kl-reg 0 or more")
    swarm = _swarm(args)
    max_epochs = args.max_epochs
    if max_epochs is None and swarm.available_tokens is not None:
        max_epochs = DEFAULT_MAX_EPOCHS
    fit = fit_mix(swarm, args.target, max_epochs=max_epochs, run_tokens=args.run_tokens, kl_reg=args.kl_reg)
    print("\n".join(report_lines(fit)))
    if args.csv is not None:
        from .olmix_csv import write_olmix_csvs

        ratios, metrics = write_olmix_csvs(swarm, args.csv)
        print(f"wrote {ratios} and {metrics} (Olmix's CSV files)")
    return 0
