"""Compiled or not: when one of the package's numba loops pays for its start-up.

The hot loops of index building and batch layout are compiled with numba (`@jit(cache=True)`, below). The first
compiled call in a process loads numba's compiler and registries, even from its cache: about 0.2 s on a
2-core machine, 0.55 s where scipy is installed (numba's BLAS probe imports `scipy.linalg`). A workshop
notebook, a test or a short run spends less than that in the loops themselves. So each loop has a twin in
numpy or plain Python that gives the same arrays, and the compiled loop runs only on work large enough to win
its start-up back; tests hold every twin to its compiled loop. numba itself is imported only at a loop's first
call (`jit`), so a process that runs none, a short training run for one, starts about 0.35 s sooner. The
thresholds were measured on the 2-core machine:

- the sample index, by entries of the document index (documents x epochs): numpy (a cumulative sum and a
  binary search) took 0.08 s for 2M entries where numba took 0.56 s with its start-up, and 1.22 s for 20M
  where numba took 0.77 s;
- a batch, by the tokens of its windows: at 8 rows of 2,049 the twins gather and lay out a batch in 63 us
  against numba's 35 us, at 32 rows in 233 us against 138 us, so batches of 32 x 2,048 and up are compiled;
- a blend's or a schedule's greedy rule, by samples: the Python loop takes about 2 us a sample with three
  datasets, 0.1 s for 50,000;
- Gopher's n-gram measures of a document (`helpers.clean.text.ngrams`), by words: all nine took the twins 166 us at
  100 words and 1.8 ms at 1,000, the compiled loops 45 us and 155 us.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable

SAMPLE_INDEX_ENTRIES = 8_000_000
BATCH_TOKENS = 65_536
GREEDY_SAMPLES = 50_000


def compiled_pays(work: int, threshold: int) -> bool:
    """Whether `work` (in the unit of `threshold`) is large enough for the compiled loop."""
    return work >= threshold


_MAKING = threading.Lock()  # loops called from the loader's threads are made once


class LazyJit:
    """`numba.njit(**options)(function)`, made at the first call: importing numba costs a process about 0.35 s,
    which a process that never runs a compiled loop should not pay."""

    def __init__(self, function: Callable, options: dict[str, Any]):
        functools.update_wrapper(self, function)
        self.function, self.options, self.dispatcher = function, options, None

    def compiled(self) -> Callable:
        """numba's dispatcher. Numba reads the loops a loop calls from its module's globals when it compiles it,
        so every lazy loop that module names is made now and takes its name there, and so on in the modules those
        come from."""
        if self.dispatcher is None:
            with _MAKING:
                from numba import njit

                pending, done = [self.function.__globals__], set()
                while pending:
                    namespace = pending.pop()
                    if id(namespace) in done:
                        continue
                    done.add(id(namespace))
                    for name, value in list(namespace.items()):
                        if isinstance(value, LazyJit):
                            if value.dispatcher is None:
                                value.dispatcher = njit(**value.options)(value.function)
                            namespace[name] = value.dispatcher
                            pending.append(value.function.__globals__)
        return self.dispatcher

    def __call__(self, *args, **kwargs):
        return self.compiled()(*args, **kwargs)


def jit(**options) -> Callable[[Callable], LazyJit]:
    """`@jit(cache=True)` in place of `@numba.njit(cache=True)`: the same compiled loop, numba imported at its
    first call."""
    return lambda function: LazyJit(function, options)
