"""Compiled or not: when one of the package's numba loops pays for its start-up.

The hot loops of index building and batch layout are compiled with numba (`@jit(cache=True)`, below). The first
compiled call in a process loads numba's compiler and registries, even from its cache: about 0.2 s on a
2-core machine, and 0.3 s more where scipy is installed, for numba's BLAS probe imports `scipy.linalg`,
unless scipy is hidden from it, as the first call here does (`_without_scipy`; the package's loops use no
BLAS). A workshop notebook, a test or a short run spends less than that in the loops themselves. So each loop
has a twin in numpy or plain Python that gives the same arrays, and the compiled loop runs only on work large enough to win
its start-up back; tests hold every twin to its compiled loop. numba itself is imported only at a loop's first
call (`jit`), so a process that runs none, a short training run for one, starts about 0.35 s sooner. The
thresholds were measured on the 2-core machine:

- the sample index, by entries of the document index (documents x epochs): numpy (a cumulative sum and a
  binary search) took 0.08 s for 2M entries where numba took 0.56 s with its start-up, and 1.22 s for 20M
  where numba took 0.77 s;
- a batch, by the tokens of its windows: at 8 rows of 2,049 the twins gather and lay out a batch in 63 us
  against numba's 35 us, at 32 rows in 430 us against 180 us, so batches of 32 x 2,048 and up are compiled, but
  only once numba is loaded: a batch's loops run again and again, and a process that takes a few batches and ends
  spends more on numba (about 0.2 s to load its loops, 0.3 s more to tear them down at exit) than they save, so a
  process starts on the twins and loads numba once their batch-sized work adds up to `BATCH_START_UP_WORK`, about
  what they lose to the compiled loops meanwhile (a loader that rents until it has paid the price of buying);
- a blend's or a schedule's greedy rule, by samples: the Python loop takes about 2 us a sample with three
  datasets, 0.1 s for 50,000;
- Gopher's n-gram measures of a document (`helpers.clean.text.ngrams`), by words: all nine took the twins 166 us at
  100 words and 1.8 ms at 1,000, the compiled loops 45 us and 155 us (the English splitter's: `words.py`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.abc
import os
import sys
import threading
from pathlib import Path
from typing import Any, Callable

SAMPLE_INDEX_ENTRIES = 8_000_000
BATCH_TOKENS = 65_536
GREEDY_SAMPLES = 50_000


# Batch-sized work (tokens of windows) the twins are asked for before a process loads numba. A batch asks once for
# each of its loops: a Megatron prefix's for its gather and its layout, a schedule's once more, a .npy file's or
# shards' for the layout alone; so 760 to 2,290 batches of 32 x 2,049, over which the twins lose 0.2 to 0.6 s to
# the compiled loops (0.25 ms a batch), the order of numba's own start-up and teardown.
BATCH_START_UP_WORK = 150_000_000
_TWIN_BATCH_WORK = [0]


def compiled_pays(work: int, threshold: int) -> bool:
    """Whether `work` (in the unit of `threshold`) is large enough for the compiled loop. For a batch's loops
    (`BATCH_TOKENS`), once numba is loaded in this process or the twins' batch-sized work has passed
    `BATCH_START_UP_WORK` (see the module docstring)."""
    if work < threshold:
        return False
    if threshold != BATCH_TOKENS or _LOADED:
        return True
    _TWIN_BATCH_WORK[0] += work
    return _TWIN_BATCH_WORK[0] > BATCH_START_UP_WORK


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
            with _MAKING, _cache_of_this_version():
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
        if self.dispatcher is None or not _LOADED:
            with _without_scipy():  # numba's first load, from its cache or not
                result = self.compiled()(*args, **kwargs)
            _LOADED[:] = [True]
            return result
        return self.dispatcher(*args, **kwargs)


_LOADED: list[bool] = []  # [True] once numba's registries are loaded in this process


def numba_loaded() -> bool:
    """Whether a compiled loop has run in this process (numba's start-up is paid)."""
    return bool(_LOADED)
PACKAGE_DIR = Path(__file__).resolve().parent.parent


@functools.lru_cache(maxsize=4)
def loops_digest(package: Path = PACKAGE_DIR) -> str:
    """A digest of the sources of every module of `package` that holds a compiled loop (`@jit(`)."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        source = path.read_bytes()
        if b"@jit(" in source:
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + source + b"\0")
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def _cache_of_this_version():
    """numba's cache folder, while the package's loops are made, one for each version of their sources. numba
    loads a loop's cached machine code when the loop's own file is unchanged, without looking at the files of the
    loops it calls and compiles into itself (`gather_row` in a blend's layout): a cache kept across a change to one
    of those would run the old code. Under NUMBA_CACHE_DIR where it is set, else in the package's `__pycache__`;
    numba falls back to its other places where the folder cannot be written."""
    from numba.core import config

    before = config.CACHE_DIR
    config.CACHE_DIR = os.path.join(before or str(PACKAGE_DIR / "__pycache__"), f"numba-{loops_digest()}")
    try:
        yield
    finally:
        config.CACHE_DIR = before


class _HideScipy(importlib.abc.MetaPathFinder):
    """Refuses `scipy` to one thread: numba probes for BLAS by importing `scipy.linalg` when its registries
    first load (0.3 s on a 2-core machine), and uses it for one inner product only (a loop of its own
    otherwise, the same sums); the package's loops use no linear algebra. Its `np.dot` imports scipy when
    compiled, later, as ever."""

    def __init__(self, thread: int):
        self.thread = thread

    def find_spec(self, name, path=None, target=None):
        if threading.get_ident() == self.thread and (name == "scipy" or name.startswith("scipy.")):
            raise ImportError(f"{name} is not imported while numba loads")
        return None


@contextlib.contextmanager
def _without_scipy():
    """numba's first load without the BLAS probe's import of scipy, where scipy is not imported already."""
    if "scipy" in sys.modules or _LOADED:
        yield
        return
    finder = _HideScipy(threading.get_ident())
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def jit(**options) -> Callable[[Callable], LazyJit]:
    """`@jit(cache=True)` in place of `@numba.njit(cache=True)`: the same compiled loop, numba imported at its
    first call."""
    return lambda function: LazyJit(function, options)


@jit(cache=True)
def _nothing(value):  # pragma: no cover - compiled
    return value


def load_now() -> None:
    """Load numba in this process now, so that batches are compiled from the first (a benchmark of a long run's
    steady state; a test of the compiled path)."""
    _nothing(0)
