"""The JIT on the project's VM-assembly corpus: every CALL equals IREE's own runtime."""

from __future__ import annotations

import math
import struct

import pytest

import jitvm
from jitvm.frontend.module import load_module
from jitvm.fuzz.oracles.iree import run_module
from jitvm.lower.backend import JitBackend
from jitvm.runtime.vm.bytecode import LoadedModule
from jitvm.runtime.vm.context import Context
from jitvm.verify import verify_module
from tests.corpus import source_files

VMASM = [name for name, kind, _ in source_files() if kind == "vmasm"]


def same_value(a, b) -> bool:
    """Bit-exact for floats (any NaN equals any NaN: payloads are not observable in IREE's API)."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return True
        return struct.pack("<d", a) == struct.pack("<d", b)
    if hasattr(a, "addr") or hasattr(b, "addr"):
        return (a is None) == (b is None) or hasattr(a, "addr") and hasattr(b, "addr")
    return type(a) is type(b) and a == b


def instantiate(path, backend):
    verified = verify_module(load_module(path))
    context = Context()
    return context, context.add(LoadedModule(verified, backend))


@pytest.fixture(scope="module")
def jit():
    return JitBackend(use_cache=False, progress=False)


@pytest.mark.parametrize("name", VMASM)
def test_vmasm_calls_equal_iree(corpus_by_name, jit, name):
    cm = corpus_by_name[name]
    _ctx, instance = instantiate(cm.vmfb, jit)
    expected = run_module(cm)
    mismatches = []
    for call, want in zip(cm.calls, expected):
        if cm.expects_trap(call.function) and (call.function in cm.oracle_quirks or call.function in cm.oracle_crash):
            # IREE misbehaves here (e.g. reads outside a buffer), or divides by zero (its aarch64
            # build returns sdiv's 0; x86's dies of SIGFPE); jitvm must trap instead.
            want = type(want)(call=call, index=want.index, trapped=True, error="expected trap", results=[])
        fn = instance.lookup(call.function)
        try:
            got, trapped = fn.call([a.value for a in call.args]), None
        except Exception as e:  # noqa: BLE001 - compared below
            got, trapped = None, e
        if trapped is not None:
            assert isinstance(trapped, jitvm.Trap), f"{call}: {type(trapped).__name__}: {trapped}"
            if not want.trapped:
                mismatches.append(f"{call}: jit trapped ({trapped}) where IREE returned {want.results}")
            continue
        if want.trapped:
            mismatches.append(f"{call}: jit returned {got} where IREE trapped ({want.error})")
        elif len(got) != len(want.results) or not all(same_value(a, b) for a, b in zip(got, want.results)):
            # Even ORACLE-QUIRK functions (IREE bugs, implementation-defined C) match today.
            mismatches.append(f"{call}: jit {got} != IREE {want.results}")
    assert not mismatches, "\n".join(mismatches)


# --- found by the mutant campaign (bench/mutant_campaign.py --run jit) ----------------------

def _load_asm(text: str, backend):
    from jitvm.frontend.asm import assemble

    return jitvm.load(assemble(text), backend=backend)


def test_declared_ref_registers_beyond_those_used_compile_quickly(jit):
    """A descriptor may declare up to 8192 ref registers (one mutated byte declared 16383, which
    IREE's loader, and now jitvm's verifier, refuse). Every exit
    used to release each declared register: minutes of LLVM time for a three-block function.
    Only registers something writes (and ref arguments) can hold a reference."""
    import time

    text = """vm.module @m version 0
vm.type !vm.buffer
vm.export @f
vm.func @f(%i0: i32) -> (i32) attributes {vm.ref_registers = 8192} {
^bb0:
  %i2:3 = vm.const.i64 16
  %i4 = vm.const.i32 16
  %r0 = vm.buffer.alloc %i2:3, %i4
  vm.cond_br %i0, ^bb1(), ^bb2()
^bb1:
  %i2:3 = vm.const.i64.zero
  %i1 = vm.buffer.load.i8.u %r0, %i2:3
  vm.return %i1
^bb2:
  %i2:3 = vm.const.i64 99
  %i1 = vm.buffer.load.i8.u %r0, %i2:3
  vm.return %i1
}
"""
    start = time.perf_counter()
    m = _load_asm(text, jit)
    assert time.perf_counter() - start < 20  # was > 100 s
    assert m.f(1) == 0
    with pytest.raises(jitvm.Trap, match="out-of-bounds access"):
        m.f(0)


@pytest.mark.parametrize("backend", ["jit", "interp"])
def test_ref_register_read_before_any_write_is_null(jit, backend):
    """A verified function may read a ref register nothing wrote: it holds null. The JIT's
    buffer facts for such a register were uninitialized stack memory (a mutated result
    register made the corpus' load_from_null_default read one): the load must trap as a null
    buffer, not as a type mismatch, and never touch memory."""
    text = """vm.module @m version 0
vm.type !vm.buffer
vm.export @f
vm.func @f(%i0: i32) -> (i32) {
^bb0:
  %r0 = vm.const.ref.zero
  %r1 = vm.const.ref.rodata 0
  %r0 = vm.switch.ref %i0[%r1] else %r0 -> !vm.buffer
  %i2:3 = vm.const.i64.zero
  %i1 = vm.buffer.load.i8.u %r2, %i2:3
  vm.return %i1
}
vm.rodata[0] = 0A
"""
    m = _load_asm(text, jit if backend == "jit" else "interp")
    for index in (0, 1, -1):
        with pytest.raises(jitvm.Trap) as info:
            m.f(index)
        assert (info.value.status_name, info.value.message) == ("INVALID_ARGUMENT", "source_buffer is null")


def test_i32_write_to_the_high_half_of_an_outer_induction_variable_stops_versioning(jit):
    """An inner loop writing %i17 clobbers the outer loop's i64 induction variable %i16:17
    (a mutated fma result register did): the nest is no counted nest, so no access may run
    unchecked. The loop analysis forgot only the written slot, not the i64 it is the high
    half of; the guarded copy then read 16 EiB away (SIGSEGV)."""
    from jitvm.frontend.asm import assemble
    from jitvm.lower.loops.analysis import find_nests

    text = """vm.module @m version 0
vm.type !vm.buffer
vm.export @f
vm.func @f(%i0: i32) -> (f32) {
^bb0:
  %i2:3 = vm.const.i64.zero
  %i4:5 = vm.const.i64 4
  %i6:7 = vm.const.i64 1
  %i8:9 = vm.const.i64 64
  %i10 = vm.const.i32 16
  %r0 = vm.buffer.alloc %i8:9, %i10
  %i11 = vm.const.f32.zero
  vm.br ^bb1(%i2->%i16, %i3->%i17)
^bb1:
  %i12 = vm.cmp.lt.i64.s %i16:17, %i4:5
  vm.cond_br %i12, ^bb2(), ^bb6()
^bb2:
  vm.br ^bb3(%i2->%i20, %i3->%i21)
^bb3:
  %i12 = vm.cmp.lt.i64.s %i20:21, %i4:5
  vm.cond_br %i12, ^bb4(), ^bb5()
^bb4:
  %i13 = vm.buffer.load.f32 %r0, %i16:17
  %i11 = vm.add.f32 %i11, %i13
  %i17 = vm.or.i32 %i17, %i0
  %i20:21 = vm.add.i64 %i20:21, %i6:7
  vm.br ^bb3()
^bb5:
  %i16:17 = vm.add.i64 %i16:17, %i6:7
  vm.br ^bb1()
^bb6:
  vm.return %i11
}
"""
    data = assemble(text)
    vf = verify_module(load_module(data)).functions[0]
    assert find_nests(vf) == []  # checked before running: the old lowering crashed the process
    for backend in (jit, "interp"):
        m = jitvm.load(data, backend=backend)
        assert m.f(0) == 0.0
        with pytest.raises(jitvm.Trap) as info:
            m.f(-(1 << 31))  # sets the sign bit of the outer index: the next load is out of range
        assert info.value.status_name == "OUT_OF_RANGE"


@pytest.mark.parametrize("backend", ["jit", "interp"])
def test_raw_calls_check_argument_kinds_like_the_interpreter(jit, backend):
    """Wrong kinds of raw values raise ArgumentError under both backends (the JIT's call path
    raised struct.error for None as an f32: a mutated declaration made the API pass it), and
    an f32 argument beyond the f32 range rounds to infinity as C's (float) does."""
    text = """vm.module @m version 0
vm.type !vm.buffer
vm.export @f
vm.func @f(%i0: f32, %i1: i32, %r0: !vm.buffer) -> (f32, i32) {
^bb0:
  vm.return %i0, %i1
}
"""
    m = _load_asm(text, jit if backend == "jit" else "interp")
    fn = m.function("f").vm_function
    assert fn.call([1e300, 3, None]) == [math.inf, 3]
    assert fn.call([-1e300, -1, None]) == [-math.inf, -1]
    for args, message in (([None, 1, None], "argument 0 of m.f must be an f32 (got NoneType None)"),
                          (["x", 1, None], "argument 0 of m.f must be an f32 (got str 'x')"),
                          ([1.0, 1.5, None], "argument 1 of m.f must be an i32 (got float 1.5)"),
                          ([1.0, None, None], "argument 1 of m.f must be an i32 (got NoneType None)"),
                          ([1.0, 1, 7], "argument 2 of m.f must be a ref or None (got int)")):
        with pytest.raises(jitvm.ArgumentError) as info:
            fn.call(args)
        assert str(info.value) == message
