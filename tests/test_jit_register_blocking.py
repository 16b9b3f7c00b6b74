"""Register blocking (lower.jam.OuterJam): the jammed loop's parent runs several iterations
at once too. A matmul-shaped nest with a constant column count (a multiple of the inner
factor) and a row count that leaves 0-3 rows to the remainder, or a constant one with none,
under the JIT and the interpreter; results must be bit-identical, also when the output
overlaps an input (the buffers are not apart: the blocked copy must not run)."""

from __future__ import annotations

import numpy as np
import pytest

from jitvm.fallback_interp import InterpreterBackend
from jitvm.frontend import assemble
from jitvm.frontend.module import load_module
from jitvm.lower import jam
from jitvm.lower.backend import JitBackend
from jitvm.lower.loops import find_nests
from jitvm.runtime.objects import VmBuffer
from jitvm.verify import verify_module
from tests.interp_support import instantiate

N, K = 32, 5  # columns (P: 2 groups of 16 per row), reduction length

# @mm(out, a, b, M): out[i*N + j] += over k of a[i*K + k] * b[k*N + j], in place; M rows
# from the argument, or the constant ROWS when given.
_MATMUL = """
vm.module @blocked version 0
vm.export @mm
vm.func @mm(%r0: !vm.buffer, %r1: !vm.buffer, %r2: !vm.buffer, %i0: i32) -> () {
^bb0:
  ROWS
  %i6:7 = vm.const.i64 COLS
  %i8:9 = vm.const.i64 DEPTH
  %i10:11 = vm.const.i64.zero
  %i12:13 = vm.const.i64 1
  vm.br ^bb1(%i10->%i14, %i11->%i15)
^bb1:
  %i3 = vm.cmp.lt.i64.s %i14:15, %i4:5
  vm.cond_br %i3, ^bb2(), ^bb9()
^bb2:
  vm.br ^bb3(%i10->%i16, %i11->%i17)
^bb3:
  %i3 = vm.cmp.lt.i64.s %i16:17, %i6:7
  vm.cond_br %i3, ^bb4(), ^bb8()
^bb4:
  %i18:19 = vm.fma.i64 %i14:15, %i6:7, %i16:17
  vm.br ^bb5(%i10->%i20, %i11->%i21)
^bb5:
  %i3 = vm.cmp.lt.i64.s %i20:21, %i8:9
  vm.cond_br %i3, ^bb6(), ^bb7()
^bb6:
  %i22:23 = vm.fma.i64 %i14:15, %i8:9, %i20:21
  %i24 = vm.buffer.load.f32 %r1, %i22:23
  %i26:27 = vm.fma.i64 %i20:21, %i6:7, %i16:17
  %i25 = vm.buffer.load.f32 %r2, %i26:27
  %i28 = vm.buffer.load.f32 %r0, %i18:19
  %i29 = vm.mul.f32 %i24, %i25
  %i28 = vm.add.f32 %i28, %i29
  vm.buffer.store.f32 %i28, %r0, %i18:19
  %i20:21 = vm.add.i64 %i20:21, %i12:13
  vm.br ^bb5()
^bb7:
  %i16:17 = vm.add.i64 %i16:17, %i12:13
  vm.br ^bb3()
^bb8:
  %i14:15 = vm.add.i64 %i14:15, %i12:13
  vm.br ^bb1()
^bb9:
  vm.return
}
"""


def _source(rows: int | None) -> str:
    m = "%i4:5 = vm.ext.i32.i64.s %i0" if rows is None else f"%i4:5 = vm.const.i64 {rows}"
    return _MATMUL.replace("ROWS", m).replace("COLS", str(N)).replace("DEPTH", str(K))


def _plan(rows: int | None):
    vf = verify_module(load_module(assemble(_source(rows), "<blocked>"))).functions[0]
    (nest,) = find_nests(vf)
    return jam.plan(vf, nest)


@pytest.fixture(scope="module", params=[None, 8], ids=["rows from the argument", "8 rows"])
def instances(request):
    vmfb = assemble(_source(request.param), "<blocked>")
    jit = JitBackend(use_cache=False, progress=False, threads=1)
    return request.param, {name: instantiate(vmfb, be)[1] for name, be in (("jit", jit),
                                                                          ("interp", InterpreterBackend()))}


def test_the_row_loop_is_blocked_over_the_column_groups():
    for rows, remainder in ((None, True), (8, False)):
        plan = _plan(rows)
        assert plan is not None and plan.outer is not None, rows
        assert plan.outer.loop.id == 0 and plan.loop.id == 1
        assert (plan.outer.factor, plan.outer.inner) == (jam.OUTER_FACTOR, jam.OUTER_INNER)
        assert plan.outer.jammed_remainder is remainder


def _run(inst, m: int, seed: int, overlap: bool) -> bytes:
    rng = np.random.default_rng(seed)
    a = VmBuffer.from_bytes(rng.standard_normal(m * K).astype(np.float32).tobytes())
    out = VmBuffer.from_bytes(rng.standard_normal(max(m, K) * N).astype(np.float32).tobytes())
    b = out if overlap else VmBuffer.from_bytes(rng.standard_normal(K * N).astype(np.float32).tobytes())
    inst.lookup("mm").call([out, a, b, m])
    return out.tobytes()


@pytest.mark.parametrize("m", [4, 5, 6, 7, 9, 12])
@pytest.mark.parametrize("overlap", [False, True], ids=["apart", "output is the right-hand side"])
def test_blocked_rows_agree_with_the_interpreter(instances, m, overlap):
    rows, backends = instances
    if rows is not None:
        m = rows
    out = {name: _run(inst, m, m, overlap) for name, inst in backends.items()}
    assert out["jit"] == out["interp"]
