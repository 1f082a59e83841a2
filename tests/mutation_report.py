"""docs/mutation.md from a `mutmut run` (`make mutation`): per module, the mutants made, killed (a test failed, or
the mutant hung past its time limit), survived and not run, and each survivor with its change and its standing:
equivalent (no test can tell it from the original; `tests/mutation_equivalents.json` gives the reason) or still to
kill. Run from the folder that holds `mutants/`.

    python tests/mutation_report.py --seconds 5400 [--machine "2 cores, no GPU"] > docs/mutation.md
"""

from __future__ import annotations

import argparse
import datetime
import json
from collections import Counter
from pathlib import Path

EQUIVALENTS = Path(__file__).parent / "mutation_equivalents.json"
KILLED = {1, 3, 255, -6, -11, 37}  # a test failed or errored, a crash (an abort, a segfault), a type check
# past the CPU-time limit (SIGXCPU, then SIGKILL): mostly a loop that never ends, but a mutant that only slows its
# tests' fixtures past the limit lands here too, so these are counted apart
TIMED_OUT = {24, -24, 36, 152, -9}
SURVIVED, NOT_RUN = {0}, {None, 2}
STANDINGS = ("made", "killed", "timed out", "survived", "no tests", "not run")


def outcomes(folder: Path) -> dict[str, dict[str, int | None]]:
    """Module -> mutant name -> mutmut's exit code, from the `.meta` files beside the mutated copies."""
    found = {}
    for meta in sorted(folder.rglob("*.py.meta")):
        module = meta.relative_to(folder).as_posix()[:-len(".meta")]
        found[module] = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
    return found


def standing(code: int | None) -> str:
    if code in KILLED:
        return "killed"
    if code in TIMED_OUT:
        return "timed out"
    if code in SURVIVED:
        return "survived"
    if code in NOT_RUN:
        return "not run"
    return "no tests"


def change(name: str, module: str) -> str:
    """The mutant's changed lines, from mutmut's own diff."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    lines = get_diff_for_mutant(name, path=module).splitlines()[3:]
    return " / ".join(line[0] + " " + line[1:].strip() for line in lines if line[:1] in "+-")


def report(folder: Path, seconds: float, machine: str) -> str:
    found = outcomes(folder)
    equivalents = json.loads(EQUIVALENTS.read_text(encoding="utf-8")) if EQUIVALENTS.is_file() else {}
    rows, survivors, totals = [], [], Counter()
    for module, codes in found.items():
        counts = Counter(standing(code) for code in codes.values())
        counts["made"] = len(codes)
        totals.update(counts)
        rows.append(f"| `{module}` | " + " | ".join(f"{counts[key]:,}" for key in STANDINGS)
                    + f" | {(counts['killed'] + counts['timed out']) / max(counts['made'] - counts['not run'], 1):.0%}"
                    " |")
        survivors += [(name, module) for name, code in codes.items() if standing(code) == "survived"]
    equivalent = [name for name, _ in survivors if name in equivalents]
    ran = totals["made"] - totals["not run"]
    caught = totals["killed"] + totals["timed out"]
    lines = [
        "# Mutation testing of the rules' code",
        "",
        f"`make mutation` on {datetime.date.today():%Y-%m-%d}, {machine}: {seconds / 60:.0f} minutes. "
        "mutmut plants one small change at a time in the modules named in pyproject.toml's `[tool.mutmut]` (a `<` "
        "for a `<=`, a constant one off, a condition dropped, a string changed) and runs the tests that reach the "
        "changed function; a mutant is killed when one fails, or timed out when its tests run past their CPU-time "
        "limit.",
        "",
        f"Of the **{ran:,} mutants run, {caught:,} were killed ({caught / max(ran, 1):.1%})**, {totals['timed out']:,} "
        f"of them by the time limit; {len(equivalent)} of the survivors are equivalent to the original (below, with "
        f"the reason), so {caught / max(ran - len(equivalent), 1):.1%} of the others were killed."
        + (f" {totals['not run']:,} of the {totals['made']:,} mutants made were not run: the run stopped before them, "
           "and `make mutation` picks up there." if totals["not run"] else ""),
        "",
        "| module | " + " | ".join(STANDINGS) + " | killed (or timed out) of those run |",
        "|---|" + "---:|" * (len(STANDINGS) + 1),
        *rows,
        "",
        "## Survivors",
        "",
    ]
    for name, module in survivors:
        why = equivalents.get(name)
        lines.append(f"- `{name}`: {change(name, module)}")
        lines.append(f"  - {'equivalent: ' + why if why else 'to kill: no test tells it from the original yet'}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, required=True, help="how long the run took")
    parser.add_argument("--machine", default="this machine")
    parser.add_argument("--mutants", type=Path, default=Path("mutants"))
    args = parser.parse_args()
    print(report(args.mutants, args.seconds, args.machine), end="")


if __name__ == "__main__":
    main()
