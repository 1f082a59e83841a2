"""Which engine runs a command's jobs: `engine_for` starts the one asked for, and the flags every command
with an engine shares (`--engine`, `--ray-address`, `--workers`, and its count of parts) are checked here
once, the same way and in the same words, before anything is read or written."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from ..common.errors import UserError
from .local import LocalEngine

ENGINES = ("local", "ray")  # where a command's passes run: processes on this machine, or Ray tasks


def check_engine_flags(engine: str, workers: int, ray_address: str | None, parts: tuple[str, int]) -> None:
    """Refuse engine flags that cannot give a sound run; `parts` is the command's flag for its number of
    byte ranges and its value (`("--partitions", 4)`). With `--engine ray`, Ray must be installed."""
    if engine not in ENGINES:
        raise UserError(f"--engine {engine}: no such engine; fix: choose one of {', '.join(ENGINES)}")
    if ray_address is not None and engine != "ray":
        raise UserError(f"--ray-address {ray_address} is for --engine ray; fix: add --engine ray, or leave out "
                        "--ray-address")
    flag, count = parts
    if workers < 1 or count < 1:
        raise UserError(f"--workers {workers} {flag} {count}: both must be at least 1; fix: pass --workers 1 or "
                        f"more (one per CPU core is usual) and {flag} 1 or more")
    if engine == "ray":
        from .ray_cluster import require_ray

        require_ray()  # before any work: a run that cannot start says so at once


@contextmanager
def engine_for(name: str, workers: int, ray_address: str | None = None,
               fork_guard: tuple[str, str] | None = None) -> Iterator:
    """The engine called `name` (checked by `check_engine_flags`), started, and stopped on the way out: a
    `LocalEngine` of `workers` processes, or a `RayEngine` on the cluster at `ray_address` (None: the Ray
    this process runs, or one started here with `workers` CPUs). Either has `map(jobs, on_done)`. `fork_guard`:
    (a native library the jobs use, the module they need), for local workers started safely once that library
    has started its threads here (`helpers.engines.local.context_safe_from`)."""
    if name == "local":
        engine = LocalEngine(workers, fork_guard)
        try:
            engine.start()
            yield engine
        finally:
            engine.close()
        return
    from .ray_cluster import RayEngine, ray_session

    with ray_session(ray_address, num_cpus=None if ray_address else workers):
        yield RayEngine()
