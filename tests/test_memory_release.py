"""LLVM's clean read-only pages and the C heap's free pages go back to the kernel at quiet
points (runtime.native.memory; issue 22 item 5): the resident part of libllvmlite drops,
and code compiled before and after keeps giving the same results."""

from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest

import jitvm
from jitvm.runtime.native import engine, memory

pytestmark = pytest.mark.skipif(not memory.enabled(), reason="needs Linux, glibc and /proc/self/pagemap")

IR = """
define i64 @memtest_mix(i64 %a, i64 %b) {
  %x = mul i64 %a, 6364136223846793005
  %y = xor i64 %x, %b
  %z = add i64 %y, 1442695040888963407
  ret i64 %z
}
"""


_alive: list = []


def _llvm_resident() -> int:
    """Resident bytes of libllvmlite's mappings release may drop."""
    return sum(rss for _start, _end, rss in memory.clean_readonly_ranges())


def _compile_fresh():
    """A function compiled now (not from the code store): LLVM's optimiser and code
    generator touch their pages again."""
    code = engine.jit_module(IR, opt=2, cached=False)
    _alive.append(code)  # the ctypes function does not keep the engine (the code) alive
    return code.function("memtest_mix", ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64))


def _mix(a: int, b: int) -> int:
    x = (a * 6364136223846793005) & (2**64 - 1)
    return ctypes.c_int64(((x ^ b) + 1442695040888963407) & (2**64 - 1)).value


def test_release_drops_llvm_pages_and_code_keeps_working():
    before_fn = _compile_fresh()
    touched = _llvm_resident()
    assert touched > 4 << 20, f"compiling touched only {touched} bytes of LLVM: nothing to measure"
    assert memory.release()
    dropped = _llvm_resident()
    assert dropped < touched // 4, f"libllvmlite resident {touched} -> {dropped} bytes"
    assert before_fn(12345, -7) == _mix(12345, -7)  # compiled before: still runs
    after_fn = _compile_fresh()  # LLVM itself works from the pages mapped again
    assert after_fn(-3, 99) == _mix(-3, 99)
    assert _llvm_resident() > dropped


def test_relro_and_writable_mappings_are_kept():
    """Only clean, non-writable private mappings are candidates: dropping the relocated
    RELRO segment or the data segment would lose what the loader or LLVM wrote there."""
    _compile_fresh()
    ranges = {(start, end) for start, end, _rss in memory.clean_readonly_ranges()}
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 6 or "libllvmlite" not in fields[5]:
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if "w" in fields[1]:
                assert (start, end) not in ranges, f"writable mapping {line.strip()} chosen"
    assert ranges, "no libllvmlite mapping found"


def test_load_releases_at_its_end():
    x = np.random.default_rng(3).standard_normal((1, 28, 28, 1)).astype(np.float32)
    want = jitvm.load("example:cnn", backend="interp").predict(x)
    _compile_fresh()
    touched = _llvm_resident()
    module = jitvm.load("example:cnn", tier="full")  # compiles or maps the module, then releases
    assert _llvm_resident() < touched // 4
    np.testing.assert_array_equal(module.predict(x), want)


def test_release_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("JITVM_RELEASE_MEMORY", "0")
    _compile_fresh()
    touched = _llvm_resident()
    assert not memory.release()
    assert _llvm_resident() >= touched * 3 // 4
