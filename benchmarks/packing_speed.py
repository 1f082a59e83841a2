"""Best-fit-decreasing packing speed: ours (numba, segment tree) against plain Python, side by side.

    python benchmarks/packing_speed.py [--documents 1000000] [--capacity 2048]

Lengths are log-normal (median about 400 tokens, a long tail), like web documents. The plain-Python
reference keeps the rows' free space in a sorted list and finds the tightest row with `bisect`: the
same algorithm, O(n log n), without compilation. The goal: 1M documents in under 2 s.
"""

from __future__ import annotations

import argparse
import bisect
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.loading.packing import pack, plan_metrics  # noqa: E402


def python_best_fit_decreasing(lengths: np.ndarray, capacity: int) -> int:
    """Rows used by best-fit-decreasing, in plain Python (sorted free spaces + bisect)."""
    free: list[int] = []
    for size in sorted(np.minimum(lengths, capacity).tolist(), reverse=True):
        i = bisect.bisect_left(free, size)
        if i == len(free):
            bisect.insort(free, capacity - size)
        else:
            room = free.pop(i) - size
            bisect.insort(free, room)
    return len(free)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=1_000_000)
    parser.add_argument("--capacity", type=int, default=2048)
    args = parser.parse_args()
    lengths = (np.random.default_rng(0).lognormal(6.0, 1.0, size=args.documents)).astype(np.int64) + 1

    pack(lengths[:1000], args.capacity, "best_fit_decreasing")  # compile (cached on disk after the first run)
    start = time.perf_counter()
    plan = pack(lengths, args.capacity, "best_fit_decreasing")
    ours = time.perf_counter() - start
    start = time.perf_counter()
    reference_rows = python_best_fit_decreasing(lengths, args.capacity)
    reference = time.perf_counter() - start
    metrics = plan_metrics(plan)
    print(f"{args.documents:,} documents, capacity {args.capacity}")
    print(f"ours (numba)    {ours:7.2f} s   {plan.rows:,} rows, padding {metrics['padding_fraction']:.4%}")
    print(f"plain Python    {reference:7.2f} s   {reference_rows:,} rows")
    print(f"speed-up        {reference / ours:.1f}x; goal (under 2 s): {'met' if ours < 2 else 'missed'}")


if __name__ == "__main__":
    main()
