"""Unroll-and-jam at its group boundaries (lower.jam): a matmul-shaped nest whose jammed loop
runs 63, 64, 65, 127, 128 and 129 times, so groups of 64 (and 32, and the remainder loop)
all run, under the JIT and the interpreter; results must be bit-identical. The fuzzer's
kernels are too small to fill a group of 32 or 64."""

from __future__ import annotations

import numpy as np
import pytest

from jitvm.fallback_interp import InterpreterBackend
from jitvm.frontend import assemble
from jitvm.lower.backend import JitBackend
from jitvm.runtime.objects import VmBuffer
from tests.interp_support import instantiate

# @mm(out, a, b, M, N, K): out[i*N + j] = fma over k of a[i*K + k] * b[k*N + j], in place
# (VMVX's shape: the reduction reads and writes the output element in the innermost loop).
MATMUL = """
vm.module @jam version 0
vm.export @mm
vm.func @mm(%r0: !vm.buffer, %r1: !vm.buffer, %r2: !vm.buffer, %i0: i32, %i1: i32, %i2: i32) -> () {
^bb0:
  %i4:5 = vm.ext.i32.i64.s %i0
  %i6:7 = vm.ext.i32.i64.s %i1
  %i8:9 = vm.ext.i32.i64.s %i2
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
  %i28 = vm.fma.f32 %i24, %i25, %i28
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


@pytest.fixture(scope="module")
def instances():
    vmfb = assemble(MATMUL, "<jam>")
    jit = JitBackend(use_cache=False, progress=False, threads=1)
    return {name: instantiate(vmfb, be)[1] for name, be in (("jit", jit), ("interp", InterpreterBackend()))}


def test_jam_plans_a_wide_group():
    from jitvm.frontend.module import load_module
    from jitvm.lower import jam
    from jitvm.lower.loops import find_nests
    from jitvm.verify import verify_module

    vf = verify_module(load_module(assemble(MATMUL, "<jam>"))).functions[0]
    (nest,) = find_nests(vf)
    plan = jam.plan(vf, nest)
    assert plan is not None and plan.factor == jam.FACTOR and plan.loop.id == 1


@pytest.mark.parametrize("n", [63, 64, 65, 127, 128, 129])
def test_groups_of_the_jammed_loop_agree_with_the_interpreter(instances, n):
    m, k = 3, 5
    rng = np.random.default_rng(n)
    a = rng.standard_normal(m * k).astype(np.float32)
    b = rng.standard_normal(k * n).astype(np.float32)
    out = {}
    for name, inst in instances.items():
        dst = VmBuffer.from_bytes(np.arange(m * n, dtype=np.float32).tobytes())
        inst.lookup("mm").call([dst, VmBuffer.from_bytes(a.tobytes()), VmBuffer.from_bytes(b.tobytes()), m, n, k])
        out[name] = dst.tobytes()
    assert out["jit"] == out["interp"]
    ref = np.arange(m * n, dtype=np.float32).reshape(m, n)
    for kk in range(k):  # the same order of fused multiply-adds
        ref = np.float32(a.reshape(m, k)[:, kk:kk + 1]) * b.reshape(k, n)[kk] + ref
    assert np.allclose(np.frombuffer(out["jit"], np.float32).reshape(m, n), ref, rtol=1e-5, atol=1e-5)
