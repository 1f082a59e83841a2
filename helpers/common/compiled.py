"""Compiled or not: when one of the package's numba loops pays for its start-up.

The hot loops of index building and batch layout are compiled with numba (`@njit(cache=True)`). The first
compiled call in a process loads numba's compiler and registries, even from its cache: about 0.2 s on a
2-core machine, 0.55 s where scipy is installed (numba's BLAS probe imports `scipy.linalg`). A workshop
notebook, a test or a short run spends less than that in the loops themselves. So each loop has a twin in
numpy or plain Python that gives the same arrays, and the compiled loop runs only on work large enough to win
its start-up back; tests hold every twin to its compiled loop. The thresholds were measured on the 2-core
machine:

- the sample index, by entries of the document index (documents x epochs): numpy (a cumulative sum and a
  binary search) took 0.08 s for 2M entries where numba took 0.56 s with its start-up, and 1.22 s for 20M
  where numba took 0.77 s;
- a batch, by the tokens of its windows: at 8 rows of 2,049 the twins gather and lay out a batch in 63 us
  against numba's 35 us, at 32 rows in 233 us against 138 us, so batches of 32 x 2,048 and up are compiled;
- a blend's or a schedule's greedy rule, by samples: the Python loop takes about 2 us a sample with three
  datasets, 0.1 s for 50,000;
- Gopher's n-gram measures of a document (`helpers.clean.ngrams`), by words: all nine took the twins 166 us at
  100 words and 1.8 ms at 1,000, the compiled loops 45 us and 155 us.
"""

from __future__ import annotations

SAMPLE_INDEX_ENTRIES = 8_000_000
BATCH_TOKENS = 65_536
GREEDY_SAMPLES = 50_000


def compiled_pays(work: int, threshold: int) -> bool:
    """Whether `work` (in the unit of `threshold`) is large enough for the compiled loop."""
    return work >= threshold
