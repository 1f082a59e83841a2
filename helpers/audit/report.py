"""What an audit found: its findings in order of step, and the statistics of what it looked at."""

from __future__ import annotations

from dataclasses import dataclass, field

CODES = ("random-tokens", "same-batch-across-ranks", "same-data-across-ranks", "repeated-batch", "repeated-samples",
         "repeated-documents", "labels-misaligned", "no-labels", "padding-in-loss", "attention-mask-inverted",
         "eos-not-learned", "double-bos", "truncated-documents", "unshuffled", "id-out-of-range", "id-wraparound",
         "vocab-mismatch", "ids-rounded", "constant-batch", "eval-overlap")


@dataclass(frozen=True)
class Finding:
    """One silent data bug: its stable code, the batch's index in its stream (from 0), the rank, one line."""

    code: str
    step: int
    rank: int
    message: str

    def line(self) -> str:
        return f"{self.code} (rank {self.rank}, step {self.step}): {self.message}"


@dataclass
class Report:
    """`ok` when nothing was found; `findings` in order of step (each code once per rank, where it was first
    seen; `steps_with` counts every step it was seen at); `statistics` per rank."""

    findings: list[Finding] = field(default_factory=list)
    steps_with: dict[tuple[str, int], int] = field(default_factory=dict)
    statistics: dict[int, dict] = field(default_factory=dict)
    last_step: dict[tuple[str, int], int] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return not self.findings

    def add(self, finding: Finding) -> bool:
        """Keep the first finding of each code on each rank; count the steps of the others (a step with two
        findings of a code, ids and labels out of range, counts once). True when it is new."""
        key = (finding.code, finding.rank)
        if self.last_step.get(key) == finding.step:
            return False
        self.last_step[key] = finding.step
        self.steps_with[key] = self.steps_with.get(key, 0) + 1
        if self.steps_with[key] == 1:
            self.findings.append(finding)
            self.findings.sort(key=lambda f: (f.step, f.rank))
            return True
        return False

    def summary(self) -> str:
        """A short table: what was looked at per rank, each finding's line, the statistics."""
        lines = ["rank  steps  rows  tokens  length  labels  entropy/ln V  fewest pairs (uniform)  max id"]
        for rank, stats in sorted(self.statistics.items()):
            lines.append(f"{rank:>4}  {stats['steps']:>5}  {stats['rows']:>4}  {stats['tokens']:>6,}  "
                         f"{stats['length']:>6}  {stats['labels'] or '-':>6}  "
                         f"{stats['entropy']:.2f}/{stats['ln_vocab']:.2f}  "
                         f"{_pairs(stats)}  {stats['max_id']:>6}")
        if self.ok:
            lines.append("no finding")
        for finding in self.findings:
            seen = self.steps_with[(finding.code, finding.rank)]
            lines.append(finding.line() + (f" [seen at {seen} steps]" if seen > 1 else ""))
        return "\n".join(lines)


def _pairs(stats: dict) -> str:
    """The fewest equal pairs a row's window had, with a uniform draw's mean; '-' where no row was long enough
    for a window of its own (rows under 128 tokens are tested pooled)."""
    if stats["fewest_pairs"] == float("inf"):
        return f"{'-':>10} {'':6}"
    return f"{stats['fewest_pairs']:>10.0f} ({stats['uniform_pairs']:.2f})"
