"""Loop nests split across threads (lower.loops.parallel): the root loop of a nest runs on the
pool when its iterations are provably independent, and only then.

Each kernel is called on the JIT with a pool lent to direct calls (JitBackend's
split_calls_from=0) and on the interpreter; results must agree, and the pool's split
counter says whether the nest ran split. The negative cases are the ones a wrong analysis
would split: they must give the right answer and leave the counter alone."""

from __future__ import annotations

import numpy as np
import pytest

from jitvm.fallback_interp import InterpreterBackend
from jitvm.frontend.asm import assemble
from jitvm.fuzz.oracles.calls import instantiate
from jitvm.lower.backend import JitBackend
from jitvm.runtime.vm.objects import VmBuffer

# @k(out, in, rows, cols): a two-deep nest over rows (the root loop) and columns; BODY is
# the inner loop's work with %i18:19 = row * cols + col. START is the first row.
TEMPLATE = """
vm.module @split version 0
vm.export @k
vm.func @k(%r0: !vm.buffer, %r1: !vm.buffer, %i0: i32, %i1: i32) -> () {{
^bb0:
  %i2:3 = vm.ext.i32.i64.s %i0
  %i4:5 = vm.ext.i32.i64.s %i1
  %i6:7 = vm.const.i64 {start}
  %i8:9 = vm.const.i64 1
  %i24:25 = vm.const.i64.zero
  %i30 = vm.const.f32 0.0
  vm.br ^bb1(%i6->%i10, %i7->%i11)
^bb1:
  %i12 = vm.cmp.lt.i64.s %i10:11, %i2:3
  vm.cond_br %i12, ^bb2(), ^bb6()
^bb2:
  vm.br ^bb3(%i24->%i14, %i25->%i15)
^bb3:
  %i16 = vm.cmp.lt.i64.s %i14:15, %i4:5
  vm.cond_br %i16, ^bb4(), ^bb5()
^bb4:
  %i18:19 = vm.fma.i64 %i10:11, %i4:5, %i14:15
{body}
  %i14:15 = vm.add.i64 %i14:15, %i8:9
  vm.br ^bb3()
^bb5:
  %i10:11 = vm.add.i64 %i10:11, %i8:9
  vm.br ^bb1()
^bb6:
  vm.return
}}
"""

# Independent rows: out[r, c] = in[r, c] * 2 + 1.
ELEMENTWISE = """
  %i20 = vm.buffer.load.f32 %r1, %i18:19
  %i21 = vm.add.f32 %i20, %i20
  %i22 = vm.const.f32 1.0
  %i23 = vm.add.f32 %i21, %i22
  vm.buffer.store.f32 %i23, %r0, %i18:19"""
# Each row reads the row before it: out[r, c] = out[r - 1, c] + in[r, c] (rows from 1).
RECURRENCE = """
  %i26:27 = vm.sub.i64 %i18:19, %i4:5
  %i20 = vm.buffer.load.f32 %r0, %i26:27
  %i21 = vm.buffer.load.f32 %r1, %i18:19
  %i22 = vm.add.f32 %i20, %i21
  vm.buffer.store.f32 %i22, %r0, %i18:19"""
# A running sum carried in a register from row to row: out[r, c] = sum of in up to (r, c).
CARRIED = """
  %i20 = vm.buffer.load.f32 %r1, %i18:19
  %i30 = vm.add.f32 %i30, %i20
  vm.buffer.store.f32 %i30, %r0, %i18:19"""

ROWS, COLS = 64, 96


@pytest.fixture(scope="module")
def backends():
    jit = JitBackend(use_cache=False, progress=False, threads=2, split_calls_from=0)
    if jit.call_pool() is None:
        pytest.skip("no thread pool on this host")
    return {"jit": jit, "interp": InterpreterBackend()}


def _run(backends, body: str, start: int = 0, same_buffer: bool = False):
    """Per backend, the output buffer's floats after one call; and how many nests were split."""
    vmfb = assemble(TEMPLATE.format(body=body, start=start), "<split>")
    data = np.random.default_rng(7).standard_normal(ROWS * COLS).astype(np.float32)
    pool = backends["jit"].call_pool()
    before = pool.state.splits
    out = {}
    for name, be in backends.items():
        _ctx, inst = instantiate(vmfb, be)
        dst = VmBuffer.from_bytes(data.tobytes() if same_buffer else bytes(4 * ROWS * COLS))
        src = dst if same_buffer else VmBuffer.from_bytes(data.tobytes())
        inst.lookup("k").call([dst, src, ROWS, COLS])
        out[name] = np.frombuffer(dst.tobytes(), np.float32).copy()
    return out, pool.state.splits - before, data


def test_independent_rows_run_split(backends):
    out, splits, data = _run(backends, ELEMENTWISE)
    assert splits == 1
    assert out["jit"].tobytes() == out["interp"].tobytes()
    assert np.array_equal(out["jit"], data * 2 + 1)


def test_rows_reading_the_row_before_stay_on_one_thread(backends):
    """The footprints of neighbouring rows overlap (one row reads what the previous one
    wrote): the guard's per-iteration footprint check refuses to split."""
    out, splits, data = _run(backends, RECURRENCE, start=1)
    assert splits == 0
    assert out["jit"].tobytes() == out["interp"].tobytes()
    expect = np.cumsum(data.reshape(ROWS, COLS)[1:], axis=0, dtype=np.float32)
    assert np.array_equal(out["jit"].reshape(ROWS, COLS)[1:], expect)


def test_a_register_carried_across_rows_stays_on_one_thread(backends):
    out, splits, _ = _run(backends, CARRIED)
    assert splits == 0
    assert out["jit"].tobytes() == out["interp"].tobytes()


def test_a_store_over_the_input_stays_on_one_thread(backends):
    """Output and input are one buffer: the stored bytes are not apart from the read ones."""
    out, splits, data = _run(backends, ELEMENTWISE, same_buffer=True)
    assert splits == 0
    assert out["jit"].tobytes() == out["interp"].tobytes()
    assert np.array_equal(out["jit"], data * 2 + 1)


CONSTANTS = """
vm.module @consts version 0
vm.export @f
vm.func @f(%i0: i32) -> (i32) {
^bb0:
  %i2:3 = vm.const.i64 64
  %i4:5 = vm.const.i64 8
  %i6 = vm.const.i32 5
  %i1 = vm.const.i32 1
  %i7 = vm.cmp.lt.i32.s %i0, %i1
  vm.cond_br %i7, ^bb1(%i2->%i4, %i3->%i5), ^bb2()
^bb1:
  %i6 = vm.add.i32 %i6, %i1
  vm.br ^bb2()
^bb2:
  %i8:9 = vm.add.i64 %i4:5, %i2:3
  %i10 = vm.trunc.i64.i32 %i8:9
  %i11 = vm.add.i32 %i10, %i6
  vm.return %i11
}
"""


def test_entry_constants_are_registers_nothing_else_writes():
    """What the split body may take as constants: written once, by a constant in the entry
    block; a register a branch edge or another instruction also writes is not one."""
    from jitvm.frontend.module import load_module
    from jitvm.lower.loops.analysis import entry_constants
    from jitvm.lower.loops.parallel import live_at
    from jitvm.verify import verify_module

    vf = verify_module(load_module(assemble(CONSTANTS, "<consts>"))).functions[0]
    assert entry_constants(vf) == {2: ("i64", 64), 1: ("i32", 1)}
    # Live into ^bb1: its reads (6 and 1) and what ^bb2 reads that ^bb1 does not write.
    assert live_at(vf, 1) == {1, 2, 3, 4, 5, 6}
