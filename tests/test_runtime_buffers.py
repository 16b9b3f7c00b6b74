"""vm.buffer allocation: zero-filled, aligned as asked, and not paying to zero huge buffers."""

from __future__ import annotations

import time

import pytest

from jitvm.runtime.vm.objects import VmBuffer


@pytest.mark.parametrize("alignment", [1, 8, 16, 64, 4096])
def test_buffers_are_zeroed_and_aligned(alignment):
    for length in (0, 1, 17, 1 << 16):
        b = VmBuffer.allocate(length, alignment=alignment)
        assert b.length == length and b.struct.data % max(alignment, 16) == 0
        assert bytes(b.view()) == bytes(length)


def test_a_gigabyte_is_allocated_without_writing_it():
    start = time.perf_counter()
    b = VmBuffer.allocate(1 << 30)
    elapsed = time.perf_counter() - start
    view = b.view()
    assert view[0] == 0 and view[(1 << 29) + 123] == 0 and view[-1] == 0
    assert elapsed < 0.2, f"allocating 1 GiB took {elapsed:.2f} s (zeroed by hand?)"
