"""A swarm as the two CSV files Olmix (allenai/olmix, `olmix fit`) reads, and back.

`ratios.csv`: a run id column `run`, a `name`, then one column per domain holding the run's shares (a row sums
to 1, within 0.01). `metrics.csv`: `run`, `name`, then one column per metric; here the held-out loss on each
domain, the column named by the domain. A reader takes `run` or `run_id` as the id, treats `run`, `run_id`,
`name`, `index` and `Unnamed...` columns as not data, and joins the two files on the id. Writing them lets a
swarm run here be fitted with Olmix too, and reading them fits a swarm run elsewhere here.
"""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from ..common.errors import UserError
from ..common.files import write_text_atomically
from .swarm import Swarm, swarm_from_runs

ID_COLUMNS = ("run", "run_id")
NOT_DATA = {"run", "run_id", "name", "index"}
SUM_TOLERANCE = 0.01  # Olmix's: a row of ratios.csv sums to 1 within this


def is_data_column(name: str) -> bool:
    """Whether a column of ratios.csv or metrics.csv holds data (a domain's share, a metric)."""
    return name not in NOT_DATA and not name.startswith("Unnamed")


def write_olmix_csvs(swarm: Swarm, folder: str | Path) -> tuple[Path, Path]:
    """Write `ratios.csv` and `metrics.csv` for `swarm` into `folder` (each whole or not at all)."""
    clashing = [d for d in swarm.domains if not is_data_column(d)]
    if clashing:
        raise UserError(f"{swarm.source}: domain {', '.join(clashing)} has the name of a column Olmix reads as no "
                        "data; fix: rename that domain")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ids = {"run": list(swarm.runs), "name": list(swarm.runs)}
    written = []
    for name, table in (("ratios.csv", swarm.shares), ("metrics.csv", swarm.losses)):
        frame = pd.DataFrame({**ids, **{d: table[:, j] for j, d in enumerate(swarm.domains)}})
        written.append(write_text_atomically(folder / name, frame.to_csv(index=False)))
    return written[0], written[1]


def _read_csv(path: Path, what: str) -> tuple[pd.DataFrame, str]:
    """One of the two files, and the name of its id column; refused in one line when unreadable."""
    columns = "domain" if what == "ratios.csv" else "metric"
    fix = f"fix: give {what} with a 'run' (or 'run_id') column and a column per {columns}"
    try:
        text = path.read_text(encoding="utf-8")
        frame = pd.read_csv(io.StringIO(text), dtype={c: str for c in (*ID_COLUMNS, "name")})
    except FileNotFoundError:
        raise UserError(f"{path}: no such file; {fix}") from None
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        reason = getattr(err, "strerror", None) or str(err).splitlines()[0]
        raise UserError(f"{path}: cannot be read as CSV ({reason}); {fix}") from None
    id_column = next((c for c in ID_COLUMNS if c in frame.columns), None)
    if id_column is None:
        raise UserError(f"{path}: no 'run' or 'run_id' column (it has {', '.join(map(str, frame.columns))}); {fix}")
    duplicated = frame[id_column][frame[id_column].duplicated()]
    if len(duplicated):
        raise UserError(f"{path}: run {duplicated.iloc[0]} appears twice; fix: give each run one row")
    return frame, id_column


def _numbers(frame: pd.DataFrame, columns: list[str], path: Path) -> np.ndarray:
    values = frame[columns].apply(pd.to_numeric, errors="coerce")
    bad = values.isna() & frame[columns].notna()
    if bad.to_numpy().any():
        row, column = np.argwhere(bad.to_numpy())[0]
        raise UserError(f"{path}: {frame[columns[column]].iloc[row]!r} in column {columns[column]} is not a number; "
                        "fix: write a number (or leave it empty for a metric not measured)")
    return values.to_numpy(dtype=float)


def read_olmix_csvs(ratios: str | Path, metrics: str | Path,
                    available_tokens: Mapping[str, float] | None = None) -> Swarm:
    """The swarm in Olmix's two CSV files (the rules in the module's docstring); the held-out loss on a domain
    is metrics.csv's column named by the domain (NaN when it has none). `available_tokens`, {domain: count},
    are not in the files; give them to bound a proposal by epochs."""
    ratios, metrics = Path(ratios), Path(metrics)
    shares_frame, ratio_id = _read_csv(ratios, "ratios.csv")
    metrics_frame, metric_id = _read_csv(metrics, "metrics.csv")
    domains = [str(c) for c in shares_frame.columns if is_data_column(str(c))]
    if not domains:
        raise UserError(f"{ratios}: no domain column; fix: add a column of shares per domain")
    shares = _numbers(shares_frame, domains, ratios)
    sums = np.nansum(shares, axis=1)
    off = np.isnan(shares).any(axis=1) | (shares < 0).any(axis=1) | (np.abs(sums - 1.0) > SUM_TOLERANCE)
    wrong = np.flatnonzero(off)
    if len(wrong):
        row = int(wrong[0])
        raise UserError(f"{ratios}: the shares of run {shares_frame[ratio_id].iloc[row]} sum to {sums[row]:.4g}, "
                        f"not 1 (within {SUM_TOLERANCE}), or one is missing or negative; {len(wrong)} such row(s); "
                        "fix: give every row shares of at least 0 that sum to 1")
    by_run = metrics_frame.set_index(metric_id)
    common = [i for i, run in enumerate(shares_frame[ratio_id]) if run in by_run.index]
    if not common:
        raise UserError(f"{metrics}: no run id in common with {ratios}; fix: use the same ids in both files")
    runs = [shares_frame[ratio_id].iloc[i] for i in common]
    measured = [d for d in domains if d in metrics_frame.columns]
    losses = np.full((len(runs), len(domains)), np.nan)
    if measured:
        values = _numbers(by_run.loc[runs].reset_index(), measured, metrics)
        for j, domain in enumerate(measured):
            losses[:, domains.index(domain)] = values[:, j]
    swarm = swarm_from_runs(domains, shares[common], losses, available_tokens=available_tokens, runs=runs,
                            source=str(metrics))
    return replace(swarm, tokens_per_run=None)  # shares, not token counts: the files do not say how long a run was
