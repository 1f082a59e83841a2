"""A swarm: short training runs of one small model, each on another mixture of the domains, and what each
measured. It is the data a mixing law is fitted to (`helpers.runs.mixing_law`).

Each run of the swarm's notebook records, with `helpers.workshop.env.record`, per domain D:
`tokens.D` (the tokens the loader read from D: the realised mixture, which is what the law is fitted on,
not the mixture asked for), `held_out_loss.D` (mean loss in nats/token on D's held-out documents) and
`available_tokens.D` (the tokens D's training split holds, which bound how much of D a longer run can use).
`read_swarm` reads them from a `helpers.runs` summary.json; `draw_mixtures` designs the swarm's mixtures.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..common.errors import UserError

TOKENS = "tokens."
LOSS = "held_out_loss."
AVAILABLE = "available_tokens."
SHARE_TOLERANCE = 1e-6  # rows of a Swarm's shares sum to 1 within this


@dataclass(frozen=True, eq=False)
class Swarm:
    """The runs of a swarm, one row each: the realised shares of the domains and the held-out losses.

    `losses` holds NaN where a run recorded no loss for a domain; `source` says where the runs came from
    (for messages); `skipped` names the failed runs left out."""

    domains: tuple[str, ...]
    runs: tuple[str, ...]
    shares: np.ndarray
    losses: np.ndarray
    available_tokens: np.ndarray | None = None
    tokens_per_run: int | None = None
    source: str = "the swarm"
    skipped: tuple[str, ...] = ()

    def __post_init__(self):
        shares = np.asarray(self.shares, dtype=float)
        losses = np.asarray(self.losses, dtype=float)
        shape = (len(self.runs), len(self.domains))
        if shares.shape != shape or losses.shape != shape:
            raise ValueError(f"shares {shares.shape} and losses {losses.shape} must both be runs x domains {shape}")
        if len(set(self.runs)) != len(self.runs) or len(set(self.domains)) != len(self.domains):
            raise ValueError("run labels and domain names must each be unique")
        if shape[0] and not np.allclose(shares.sum(axis=1), 1.0, rtol=0, atol=SHARE_TOLERANCE):
            raise ValueError("every row of shares must sum to 1")
        object.__setattr__(self, "shares", shares)
        object.__setattr__(self, "losses", losses)
        if self.available_tokens is not None:
            available = np.asarray(self.available_tokens, dtype=float)
            if available.shape != (shape[1],):
                raise ValueError(f"available_tokens must hold one count per domain, not {available.shape}")
            object.__setattr__(self, "available_tokens", available)

    @property
    def natural(self) -> np.ndarray | None:
        """The natural mixture: each domain's share of all the tokens available (None when they are unknown)."""
        if self.available_tokens is None or self.available_tokens.sum() <= 0:
            return None
        return self.available_tokens / self.available_tokens.sum()


def _table(rows: Any, domains: Sequence[str], what: str, *, complete: bool) -> np.ndarray:
    """Runs x domains from a list of {domain: value} mappings or an array; a domain a mapping lacks is NaN,
    or refused when `complete`."""
    if len(rows) and isinstance(rows[0], Mapping):
        if complete:
            for number, row in enumerate(rows, start=1):
                missing = [d for d in domains if d not in row]
                if missing:
                    raise UserError(f"{what} of run {number}: no value for {', '.join(missing)}; fix: give one "
                                    f"for every domain ({', '.join(domains)})")
        rows = [[row.get(d, math.nan) for d in domains] for row in rows]
    try:
        return np.asarray(rows, dtype=float).reshape(len(rows), len(domains))
    except (TypeError, ValueError):
        raise UserError(f"{what}: not one number per run and domain ({', '.join(domains)}); fix: record numbers, "
                        "e.g. record('tokens.docs', 12345)") from None


def swarm_from_runs(domains: Sequence[str], tokens: Any, losses: Any, available_tokens: Any = None,
                    runs: Sequence[str] | None = None, *, source: str = "the swarm",
                    skipped: Sequence[str] = ()) -> Swarm:
    """A Swarm from runs made in this process: `tokens` and `losses` are one {domain: value} mapping per run
    (or runs x domains arrays), `available_tokens` a {domain: count} mapping or an array, `runs` labels."""
    domains = tuple(domains)
    counts = _table(tokens, domains, f"{source}: tokens", complete=True)
    totals = counts.sum(axis=1)
    if not np.all(np.isfinite(counts)) or np.any(counts < 0) or np.any(totals <= 0):
        first = int(np.flatnonzero(~np.isfinite(totals) | (totals <= 0) | np.any(counts < 0, axis=1))[0])
        label = runs[first] if runs is not None else first + 1
        raise UserError(f"{source}: run {label} read {counts[first].tolist()} tokens of {', '.join(domains)}; fix: "
                        "record tokens.<domain> as the counts the loader read (none negative, not all zero)")
    if isinstance(available_tokens, Mapping):
        missing = [d for d in domains if d not in available_tokens]
        if missing:
            raise UserError(f"{source}: the available tokens give no count for {', '.join(missing)}; fix: give one "
                            f"for every domain ({', '.join(domains)})")
        available_tokens = _table([available_tokens], domains, f"{source}: available tokens", complete=True)[0]
    labels = tuple(str(r) for r in runs) if runs is not None else tuple(str(i) for i in range(1, len(counts) + 1))
    return Swarm(domains=domains, runs=labels, shares=counts / totals[:, None],
                 losses=_table(losses, domains, f"{source}: losses", complete=False),
                 available_tokens=None if available_tokens is None else np.asarray(available_tokens, dtype=float),
                 tokens_per_run=int(np.median(totals)) if len(totals) else None, source=source,
                 skipped=tuple(str(s) for s in skipped))


def _summary_entries(path: Path) -> list[dict[str, Any]]:
    """The run entries of a `helpers.runs` summary.json, refused in one line when the file is not one."""
    fix = "fix: give the summary.json that `python -m helpers.runs NOTEBOOK --grid GRID --out DIR` wrote in DIR"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: no such file; {fix}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        reason = getattr(err, "strerror", None) or str(err).splitlines()[0]
        raise UserError(f"{path}: cannot be read as JSON ({reason}); {fix}") from None
    entries = summary.get("notebooks") if isinstance(summary, dict) else None
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        raise UserError(f"{path}: holds no runs (no list under 'notebooks'); {fix}")
    return entries


def _run_label(entry: dict[str, Any], index: int) -> str:
    return str(entry.get("run", index + 1))


def _one_line(text: str, width: int = 160) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= width else line[: width - 3] + "..."


def _named(metrics: dict[str, Any], prefix: str) -> dict[str, float]:
    return {name[len(prefix):]: value for name, value in metrics.items() if name.startswith(prefix)}


def read_swarm(summary_path: str | Path, skip_failed: bool = False) -> Swarm:
    """The swarm a `helpers.runs` summary.json holds: one run per entry under "notebooks", read from the
    metrics it recorded (`tokens.D`, `held_out_loss.D`, `available_tokens.D`). A failed run is refused,
    or left out (and named in `skipped`) with `skip_failed`."""
    path = Path(summary_path)
    entries = _summary_entries(path)
    labels = [_run_label(e, i) for i, e in enumerate(entries)]
    twice = next((label for i, label in enumerate(labels) if label in labels[:i]), None)
    if twice is not None:
        raise UserError(f"{path}: run {twice} ran several notebooks; fix: give fit-mix the summary of a grid over "
                        "the swarm's one notebook")
    failed = [i for i, e in enumerate(entries) if e.get("status") != "ok"]
    if failed and not skip_failed:
        first = entries[failed[0]]
        raise UserError(f"{path}: {len(failed)} of {len(entries)} runs failed, the first run {labels[failed[0]]} "
                        f"with {_one_line(first.get('error', 'no error recorded'))}; fix: rerun it, or pass "
                        f"--skip-failed to fit the other {len(entries) - len(failed)}")
    kept = [i for i in range(len(entries)) if i not in failed]
    metrics = [entries[i].get("metrics") or {} for i in kept]
    domains = tuple(_named(metrics[0], TOKENS)) if metrics else ()
    if not domains:
        raise UserError(f"{path}: {'no run ended' if not kept else f'run {labels[kept[0]]} records no tokens.*'}; "
                        "fix: have the swarm's notebook record tokens.<domain>, held_out_loss.<domain> and "
                        "available_tokens.<domain> with helpers.workshop.env.record")
    for index, recorded in zip(kept, metrics):
        missing = [d for d in domains if d not in _named(recorded, TOKENS)]
        if missing or set(_named(recorded, TOKENS)) - set(domains):
            raise UserError(f"{path}: run {labels[index]} read other domains ({', '.join(_named(recorded, TOKENS))}) "
                            f"than run {labels[kept[0]]} ({', '.join(domains)}); fix: run every mixture over the "
                            "same domains")
    available = [_named(m, AVAILABLE) for m in metrics]
    known = all(d in available[0] for d in domains)
    return swarm_from_runs(domains, [_named(m, TOKENS) for m in metrics], [_named(m, LOSS) for m in metrics],
                           available_tokens=available[0] if known else None, runs=[labels[i] for i in kept],
                           source=str(path), skipped=[labels[i] for i in failed])


def parse_assignments(text: str, what: str) -> dict[str, float]:
    """`"docs=0.5,man-pages=0.5"` as {name: number}; a bare name (`"docs"`) counts 1. `what` names the flag."""
    values: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in str(text).split(","))):
        name, sign, number = (s.strip() for s in part.partition("="))
        try:
            value = float(number) if sign else 1.0
        except ValueError:
            value = math.nan
        if not name or name in values or not math.isfinite(value) or value < 0:
            raise UserError(f"{what} {text}: {part!r} is not a domain and a number of at least 0 (or a domain given "
                            "twice); fix: write e.g. docs=0.5,man-pages=0.5")
        values[name] = value
    if not values:
        raise UserError(f"{what} {text!r}: names no domain; fix: write e.g. docs=0.5,man-pages=0.5")
    return values


def parse_target(text_or_mapping: str | Mapping[str, float], domains: Sequence[str]) -> dict[str, float]:
    """The target as normalised weights per domain: `"docs"` is {"docs": 1.0}; `"docs=1,man-pages=1"` (or the
    same mapping) is {"docs": 0.5, "man-pages": 0.5}. A domain the swarm does not have is refused."""
    if isinstance(text_or_mapping, Mapping):
        weights = {str(k): float(v) for k, v in text_or_mapping.items()}
        shown = ",".join(f"{k}={v:g}" for k, v in weights.items())
        if any(not math.isfinite(v) or v < 0 for v in weights.values()):
            raise UserError(f"--target {shown}: a weight is negative or not a number; fix: give weights of at least 0")
    else:
        weights, shown = parse_assignments(text_or_mapping, "--target"), str(text_or_mapping)
    unknown = [d for d in weights if d not in domains]
    if unknown:
        raise UserError(f"--target {shown}: the swarm has no domain {', '.join(map(repr, unknown))}; it has "
                        f"{', '.join(domains)}; fix: name domains among those")
    total = sum(weights.values())
    if total <= 0:
        raise UserError(f"--target {shown}: the weights sum to 0; fix: give at least one domain a weight above 0")
    return {d: w / total for d, w in weights.items() if w > 0}


def _rounded(shares: np.ndarray, decimals: int = 4) -> list[float]:
    """Shares rounded for a grid file, the largest absorbing the rounding so that they sum to 1."""
    whole = 10 ** decimals
    units = np.round(np.asarray(shares, dtype=float) * whole).astype(np.int64)
    units[np.argmax(units)] += whole - units.sum()
    return [float(u / whole) for u in units]


def draw_mixtures(natural: Sequence[float], count: int, *, seed: int = 0, temperature: float = 0.3,
                  concentration: float = 1.0) -> list[list[float]]:
    """`count` mixtures for a swarm: the natural mixture, the uniform one, then Dirichlet draws around
    natural ** temperature (a temperature below 1 flattens it, so that a small domain is still explored;
    `concentration` is the Dirichlet's total weight: lower spreads the draws further from that centre)."""
    natural = np.asarray(natural, dtype=float)
    if natural.ndim != 1 or natural.size == 0 or np.any(natural < 0) or natural.sum() <= 0:
        raise UserError(f"natural mixture {natural.tolist()}: not a share per domain; fix: give one non-negative "
                        "number per domain (the tokens each holds will do)")
    natural = natural / natural.sum()
    centre = natural ** temperature
    centre = centre / centre.sum()
    alpha = np.maximum(concentration * centre, 1e-3)  # a domain with no tokens at all still gets a tiny weight
    rng = np.random.default_rng(seed)
    rows = [natural, np.full(natural.size, 1.0 / natural.size)] + [rng.dirichlet(alpha) for _ in range(count - 2)]
    return [_rounded(row) for row in rows[:max(count, 0)]]
