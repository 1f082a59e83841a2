"""The flags every command with an engine shares (`--engine`, `--ray-address`, `--workers`, and its count
of parts), checked once, the same way and in the same words, before anything is read or written."""

from __future__ import annotations

from ..common.errors import UserError

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
