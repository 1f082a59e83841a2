"""The counts of a preprocessing run: what one range of the input gave, the parts of one input added up
in input order, and the lines printed at the end."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

from ..common.errors import UserError

FIRST_SKIPS = 5  # skipped records quoted in the summary


@dataclass
class Summary:
    """Totals of one preprocessing run, printed at the end and returned to callers."""

    outputs: dict[str, str]
    documents: int = 0
    empty_documents: int = 0
    tokens: int = 0
    dtype: str = ""
    bytes_read: int = 0
    bytes_written: int = 0
    blank_lines: int = 0
    special_documents: int = 0
    skipped: dict = field(default_factory=dict)
    first_skipped: list = field(default_factory=list)
    seconds: float = 0.0
    encoder: str = ""

    def lines(self) -> list[str]:
        rate = self.bytes_read / 1e6 / max(self.seconds, 1e-9)
        out = [f"documents       {self.documents:,} ({self.empty_documents:,} empty: a boundary, no tokens)",
               f"tokens          {self.tokens:,} ({self.tokens / max(self.seconds, 1e-9):,.0f}/s, {rate:.2f} MB/s)",
               f"dtype           {self.dtype}",
               f"encoder         {self.encoder}",
               f"bytes written   {self.bytes_written:,}",
               f"special-token strings in text: {self.special_documents:,} documents"]
        if self.blank_lines:
            out.append(f"blank lines     {self.blank_lines:,} skipped")
        for kind, count in self.skipped.items():
            out.append(f"skipped         {count:,} records: {kind}")
        out += [f"  e.g. {where}" for where in self.first_skipped]
        out += [f"output          {p}" for p in self.outputs.values()]
        return out


def combine_counts(parts: list[Summary], prefixes: dict[str, Path], dtype: str) -> Summary:
    """The counts of the parts of one input, in input order, as one run's."""
    total = Summary(outputs={key: str(prefix) for key, prefix in prefixes.items()}, dtype=dtype)
    for part in parts:
        for name in (f.name for f in fields(Summary) if f.name not in ("outputs", "dtype", "seconds")):
            mine, theirs = getattr(total, name), getattr(part, name)
            if isinstance(mine, dict):
                for kind, count in theirs.items():
                    mine[kind] = mine.get(kind, 0) + count
            elif isinstance(mine, list):
                mine.extend(theirs[: max(0, FIRST_SKIPS - len(mine))])
            else:
                setattr(total, name, mine + theirs)
    return total


def require_documents(summary: Summary, path: Path) -> Summary:
    """`summary`, when its run found at least one document: an output of none is refused."""
    if summary.documents == 0:
        raise UserError(f"{path}: no document in it (only blank or skipped lines); fix: check --input")
    return summary
