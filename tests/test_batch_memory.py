"""Recycled batch memory: a block returns to the pool only when nothing views it, and a batch held while
others are made keeps its values."""

from __future__ import annotations

import mmap

import numpy as np
import pytest
import torch

from helpers.datasets import batch_memory
from helpers.datasets.batch_memory import RecycledBlocks
from helpers.datasets.layout import from_windows


def test_a_block_returns_only_when_its_last_view_is_gone():
    pool = RecycledBlocks(keep=2)
    block = pool.block((4, 2, 3))
    tensors = [torch.from_numpy(block[k]) for k in range(4)]
    slice_of_one = tensors[2][:, 1:]
    as_numpy = tensors[3].numpy()
    del block, tensors
    assert pool.idle((4, 2, 3)) == 0, "a tensor's slice still views the block"
    del slice_of_one
    assert pool.idle((4, 2, 3)) == 0, "an array from .numpy() still views the block"
    del as_numpy
    assert pool.idle((4, 2, 3)) == 1
    again = pool.block((4, 2, 3))
    assert pool.idle((4, 2, 3)) == 0 and again.shape == (4, 2, 3) and again.dtype == np.int64


def test_idle_blocks_are_bounded_and_kept_by_shape_and_dtype():
    pool = RecycledBlocks(keep=2)
    blocks = [pool.block((8,), np.uint32) for _ in range(5)]
    other = pool.block((8,))
    del blocks
    assert pool.idle((8,), np.uint32) == 2 and pool.idle((8,)) == 0
    del other
    assert pool.idle((8,)) == 1


def test_a_held_batch_keeps_its_values_while_later_batches_reuse_memory():
    rng = np.random.default_rng(0)
    windows = [rng.integers(0, 1000, (3, 17)).astype(np.uint32) for _ in range(20)]
    held = from_windows(windows[0], eod_id=7)
    copy = {k: v.clone() for k, v in held.items()}
    pointers = set()
    for w in windows[1:]:
        batch = from_windows(w, eod_id=7)
        pointers.add(batch["input_ids"].data_ptr())
        assert torch.equal(batch["input_ids"], torch.from_numpy(w[:, :-1].astype(np.int64)))
        assert torch.equal(batch["labels"], torch.from_numpy(w[:, 1:].astype(np.int64)))
        del batch
    assert all(torch.equal(held[k], copy[k]) for k in held)
    assert held["input_ids"].data_ptr() not in pointers
    assert len(pointers) < len(windows) - 1, "memory of batches no longer held is used again"


def test_each_tensor_is_contiguous_with_its_own_storage():
    batch = from_windows(np.arange(2 * 9).reshape(2, 9), eod_id=None)
    for value in batch.values():
        assert value.is_contiguous() and value.untyped_storage().nbytes() == value.numel() * 8
    batch["labels"][:] = -100  # writing one tensor leaves the others as they were
    assert torch.equal(batch["input_ids"], torch.arange(18).reshape(2, 9)[:, :-1])


@pytest.mark.skipif(not hasattr(mmap, "MADV_HUGEPAGE"), reason="huge pages are asked for on Linux only")
def test_a_block_of_a_huge_page_or_more_starts_on_one_and_is_used_again():
    pool = RecycledBlocks(keep=1)
    block = pool.block((4, 32, 2048))  # 2 MiB: a batch of 32 x 2048
    assert block.ctypes.data % batch_memory.HUGE_PAGE == 0
    block[:] = np.arange(2048)
    assert int(block[3, 31, 2047]) == 2047 and int(block.sum()) == 4 * 32 * (2047 * 2048 // 2)
    address = block.ctypes.data
    del block
    assert pool.idle((4, 32, 2048)) == 1 and pool.block((4, 32, 2048)).ctypes.data == address
    small = pool.block((4, 2, 3))
    assert small.shape == (4, 2, 3) and small.dtype == np.int64


def test_where_the_kernel_refuses_huge_pages_a_block_is_ordinary_memory(monkeypatch):
    def refused(*args, **kwargs):
        raise OSError("no")
    monkeypatch.setattr(batch_memory.mmap, "mmap", refused)
    block = RecycledBlocks().block((2, 1024, 1024))  # 16 MiB
    block[:] = 5
    assert block.shape == (2, 1024, 1024) and int(block.sum()) == 5 * block.size
    batch = torch.from_numpy(block[1])
    assert batch.is_contiguous() and int(batch[1023, 1023]) == 5
