"""Alias scopes for the fast copy of a nest without a jam (lower.loops.scopes).

A dequantisation-shaped nest, out[i*N + j] = a[i*N + j] * scale[i], stores to one buffer and
loads from two others; nothing is jammed. Its fast copy is lowered twice, with one alias
scope per buffer (taken when the guard finds the bytes apart) and without (when they
overlap). The plan names the buffers; the IR carries the scopes only with the step on; the
JIT stays bit-identical to the interpreter whether the buffers are apart, the output is the
input itself (in place), or the output overlaps the scales (each row's scale is rewritten
by the row before it), with row counts that do and do not fill a vector."""

from __future__ import annotations

import numpy as np
import pytest

from jitvm.fallback_interp import InterpreterBackend
from jitvm.frontend.asm import assemble
from jitvm.frontend.module import load_module
from jitvm.fuzz.oracles.calls import instantiate
from jitvm.lower.backend import JitBackend
from jitvm.lower.loops import jam, scopes
from jitvm.lower.loops.analysis import find_nests
from jitvm.lower.module import ModuleLowering
from jitvm.runtime.vm.objects import VmBuffer
from jitvm.verify import verify_module

# @scale(out, a, scale, rows, cols): out[i*cols + j] = a[i*cols + j] * scale[i]
SOURCE = """
vm.module @scaled version 0
vm.export @scale
vm.func @scale(%r0: !vm.buffer, %r1: !vm.buffer, %r2: !vm.buffer, %i0: i32, %i1: i32) -> () {
^bb0:
  %i4:5 = vm.ext.i32.i64.s %i0
  %i6:7 = vm.ext.i32.i64.s %i1
  %i10:11 = vm.const.i64.zero
  %i12:13 = vm.const.i64 1
  vm.br ^bb1(%i10->%i14, %i11->%i15)
^bb1:
  %i3 = vm.cmp.lt.i64.s %i14:15, %i4:5
  vm.cond_br %i3, ^bb2(), ^bb5()
^bb2:
  %i24 = vm.buffer.load.f32 %r2, %i14:15
  vm.br ^bb3(%i10->%i16, %i11->%i17)
^bb3:
  %i3 = vm.cmp.lt.i64.s %i16:17, %i6:7
  vm.cond_br %i3, ^bb4(), ^bb6()
^bb4:
  %i18:19 = vm.fma.i64 %i14:15, %i6:7, %i16:17
  %i25 = vm.buffer.load.f32 %r1, %i18:19
  %i25 = vm.mul.f32 %i25, %i24
  vm.buffer.store.f32 %i25, %r0, %i18:19
  %i16:17 = vm.add.i64 %i16:17, %i12:13
  vm.br ^bb3()
^bb6:
  %i14:15 = vm.add.i64 %i14:15, %i12:13
  vm.br ^bb1()
^bb5:
  vm.return
}
"""


def test_the_plan_scopes_the_stored_buffer_apart_from_the_loaded_ones():
    vf = verify_module(load_module(assemble(SOURCE, "<scaled>"))).functions[0]
    (nest,) = find_nests(vf)
    assert jam.plan(vf, nest) is None  # no reduction: nothing to jam
    plan = scopes.plan(vf, nest)
    assert plan is not None and plan.stored == (0,) and plan.others == (1, 2)
    assert plan.region == nest.blocks


def test_the_scoped_copy_is_lowered_only_with_the_step():
    verified = verify_module(load_module(assemble(SOURCE, "<scaled>")))
    with_scopes = str(ModuleLowering(verified, "t").lower())
    without = str(ModuleLowering(verified, "t", scope_buffers=False).lower())
    assert "_apart_test" in with_scopes and "!alias.scope" in with_scopes  # in the split body or the fast copy
    assert "_apart_test" not in without and "!alias.scope" not in without


@pytest.fixture(scope="module")
def backends():
    vmfb = assemble(SOURCE, "<scaled>")
    made = (("jit", JitBackend(use_cache=False, progress=False, threads=1)),
            ("plain", JitBackend(use_cache=False, progress=False, threads=1, loop_steps={"scope_buffers": False})),
            ("interp", InterpreterBackend()))
    return {name: instantiate(vmfb, be)[1] for name, be in made}


def _run(inst, rows: int, cols: int, layout: str, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    a = VmBuffer.from_bytes(rng.standard_normal(rows * cols + rows).astype(np.float32).tobytes())
    scale = VmBuffer.from_bytes(rng.standard_normal(rows).astype(np.float32).tobytes())
    if layout == "apart":
        out = VmBuffer.from_bytes(np.zeros(rows * cols, np.float32).tobytes())
        inst.lookup("scale").call([out, a, scale, rows, cols])
        return out.tobytes()
    if layout == "in place":
        inst.lookup("scale").call([a, a, scale, rows, cols])
        return a.tobytes()
    # output, input and scales one buffer: row i's scale is element i, which the rows before
    # it have already rewritten (the stores overlap the scale loads)
    inst.lookup("scale").call([a, a, a, rows, cols])
    return a.tobytes()


@pytest.mark.parametrize("rows, cols", [(3, 16), (5, 37), (1, 1), (8, 64)])
@pytest.mark.parametrize("layout", ["apart", "in place", "scales in the output"])
def test_results_agree_with_the_interpreter(backends, rows, cols, layout):
    out = {name: _run(inst, rows, cols, layout, rows * 100 + cols) for name, inst in backends.items()}
    assert out["jit"] == out["interp"], layout
    assert out["plain"] == out["interp"], layout
