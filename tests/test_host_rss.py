"""Memory stays flat over many calls (issue 18: under 1 MiB of RSS growth over 100,000 calls):
every HAL object a call makes (fences, semaphores, buffers, views, the input copies, the
result arrays' memory) is freed with its last reference, natively. Slow: run with
`python -m pytest -m slow tests/test_host_rss.py`."""

from __future__ import annotations

import os

import numpy as np
import pytest

import jitvm

CALLS = 100_000


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_rss_is_flat_over_many_calls(corpus_module):
    fn = jitvm.load(str(corpus_module("mlir/matmul").vmfb), threads=1).function("matmul_4x8x5")
    a, b = np.ones((4, 8), np.float32), np.ones((8, 5), np.float32)
    for _ in range(10_000):  # warm: caches, allocator pools, the plan
        fn(a, b)
    before = _rss()
    for _ in range(CALLS):
        fn(a, b)
    grown = _rss() - before
    assert grown < 1 << 20, f"RSS grew by {grown} bytes over {CALLS} calls"
