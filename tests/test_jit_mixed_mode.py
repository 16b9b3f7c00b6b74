"""Mixed mode: a function the lowering cannot handle runs in the interpreter, calls still work.

The lowering of one op is made to fail; every function using it must fall back (with a
warning naming the op, counted in STATS), and calls across the boundary in both directions
(native -> interpreted -> native), recursion through it, traps raised in it and VMVX dispatch
entries that fall back must behave exactly as under the all-native JIT.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitvm
from jitvm.frontend.asm import assemble
from jitvm.fuzz.corpus import make_inputs
from jitvm.fuzz.oracles.calls import instantiate
from jitvm.lower.emit.registry import LOWERINGS
from jitvm.lower.backend import STATS, JitBackend
from jitvm.lower.emit.emitter import LoweringError

PROGRAM = """
vm.module @mixed version 0

vm.export @outer
vm.func @outer(%i0: i32) -> (i32) {
  %i1 = vm.call @middle(%i0)
  %i2 = vm.const.i32 1000
  %i3 = vm.add.i32 %i1, %i2
  vm.return %i3
}

vm.export @middle
vm.func @middle(%i0: i32) -> (i32) {
^bb0:
  %i1 = vm.const.i32 3
  %i2 = vm.mul.i32 %i0, %i1
  %i3 = vm.const.i32 1
  %i4 = vm.cmp.lt.i32.s %i0, %i3
  vm.cond_br %i4, ^bb1(), ^bb2()
^bb1:
  vm.return %i2
^bb2:
  %i5 = vm.const.i32 -1
  %i6 = vm.add.i32 %i0, %i5
  %i7 = vm.call @leaf(%i6)
  %i8 = vm.add.i32 %i2, %i7
  vm.return %i8
}

vm.func @leaf(%i0: i32) -> (i32) {
  %i1 = vm.call @middle(%i0)
  %i2 = vm.const.i32 7
  %i3 = vm.xor.i32 %i1, %i2
  vm.return %i3
}

vm.export @trap_inside
vm.func @trap_inside(%i0: i32) -> (i32) {
  %i1 = vm.const.i32 5
  %i2 = vm.mul.i32 %i0, %i1
  %i3 = vm.div.i32.s %i1, %i0
  vm.return %i3
}
"""


@pytest.fixture
def unlowerable(monkeypatch):
    """Makes the JIT refuse one op (by name) for the duration of a test."""

    def refuse(name):
        def fail(e, ins):
            raise LoweringError(name, "refused by the test")
        monkeypatch.setitem(LOWERINGS.by_name, name, fail)
    return refuse


def _call(instance, name, *args):
    try:
        return instance.lookup(name).call(list(args))
    except jitvm.Trap as e:
        return ("trap", e.status_name, e.message)


def test_functions_using_a_refused_op_run_in_the_interpreter(tmp_path, unlowerable):
    path = tmp_path / "mixed.vmfb"
    path.write_bytes(assemble(PROGRAM))
    _ctx, native = instantiate(path, JitBackend(use_cache=False, progress=False))
    want = {(n, a): _call(native, n, a) for n in ("outer", "middle", "trap_inside") for a in (-2, 0, 1, 6)}

    unlowerable("mul.i32")
    before = STATS["fallback_functions"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _ctx, mixed = instantiate(path, JitBackend(use_cache=False, progress=False))
    assert STATS["fallback_functions"] - before == 2  # middle and trap_inside
    messages = [str(w.message) for w in caught]
    assert any("mixed.middle runs in the interpreter: cannot lower mul.i32" in m for m in messages), messages
    assert any("trap_inside" in m for m in messages), messages
    got = {(n, a): _call(mixed, n, a) for n in ("outer", "middle", "trap_inside") for a in (-2, 0, 1, 6)}
    assert got == want
    assert got[("trap_inside", 0)][:2] == ("trap", "INVALID_ARGUMENT")


def test_a_dispatch_entry_that_falls_back_still_computes_the_same(corpus_module, unlowerable):
    m = corpus_module("mlir/workgroups")
    args = make_inputs(m, 0)
    native = jitvm.load(str(m.vmfb), backend=JitBackend(use_cache=False, progress=False))
    want = native[m.calls[0].function](*args)

    unlowerable("buffer.store.f32")
    before = STATS["fallback_functions"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mixed = jitvm.load(str(m.vmfb), backend=JitBackend(use_cache=False, progress=False))
        got = mixed[m.calls[0].function](*args)
    assert STATS["fallback_functions"] > before
    assert any("cannot lower buffer.store.f32" in str(w.message) for w in caught)
    assert got.dtype == want.dtype and np.array_equal(got.view(np.uint32), want.view(np.uint32))
