"""Notebook 08's your-turn: which rows of each global batch the loader hands rank r of W."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...loading.loader import make_dataloader

# (global batch size, rank, world size): the cases the check tries
CASES = ((8, 1, 4), (8, 0, 2), (12, 2, 3))


def rows_from_the_loader(data_path: Sequence[str], seq_length: int, global_batch_size: int, rank: int,
                         world_size: int, step: int = 3) -> list[int]:
    """The rows (numbered 0 to global_batch_size - 1) of global batch `step` that the loader hands rank `rank` of
    `world_size`: each row it hands that rank, found in the one-process batch."""
    def batch(**ranks):
        return make_dataloader(list(data_path), split="100,0,0", seq_length=seq_length, seed=0, cache_dir=None,
                               num_samples=(step + 1) * global_batch_size, **ranks).batch_at(step)["input_ids"]

    whole = batch(batch_size=global_batch_size)
    part = batch(batch_size=global_batch_size // world_size, rank=rank, world_size=world_size)
    return [int((whole == row).all(dim=1).nonzero()[0]) for row in part]


def case_name(global_batch_size: int, rank: int, world_size: int) -> str:
    return f"G={global_batch_size}, rank {rank} of {world_size}"


def loader_rows(data_path: Sequence[str], seq_length: int, cases=CASES) -> dict[str, list[int]]:
    """What the check expects: the loader's rows for each case, by name."""
    return {case_name(*case): rows_from_the_loader(data_path, seq_length, *case) for case in cases}


def answers(rank_rows: Callable[[int, int, int], list[int] | None], cases=CASES) -> dict[str, list[int]] | None:
    """The learner's `rank_rows(global_batch_size, rank, world_size)` on each case, by name; None while it is the
    skeleton (so the check says "not yet")."""
    found = {case_name(*case): rank_rows(*case) for case in cases}
    return None if any(rows is None for rows in found.values()) else found
