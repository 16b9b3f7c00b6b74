"""The JIT on the project's VM-assembly corpus: every CALL equals IREE's own runtime."""

from __future__ import annotations

import math
import struct

import pytest

import jitvm
from jitvm.frontend.module import load_module
from jitvm.lower import registry
from jitvm.lower.backend import JitBackend
from jitvm.runtime.bytecode import LoadedModule
from jitvm.runtime.context import Context
from jitvm.verify import verify_module
from tests.corpus import source_files
from tests.corpus.oracle import run_module

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


def test_every_op_has_a_lowering():
    assert registry.missing() == []


@pytest.mark.parametrize("name", VMASM)
def test_vmasm_calls_equal_iree(corpus_by_name, jit, name):
    cm = corpus_by_name[name]
    _ctx, instance = instantiate(cm.vmfb, jit)
    expected = run_module(cm)
    mismatches = []
    for call, want in zip(cm.calls, expected):
        if call.function in cm.oracle_quirks and cm.expects_trap(call.function):
            # IREE misbehaves here (e.g. reads outside a buffer); jitvm must trap instead.
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
    """A descriptor may declare up to 16383 ref registers (one mutated byte did). Every exit
    used to release each declared register: minutes of LLVM time for a three-block function.
    Only registers something writes (and ref arguments) can hold a reference."""
    import time

    text = """vm.module @m version 0
vm.type !vm.buffer
vm.export @f
vm.func @f(%i0: i32) -> (i32) attributes {vm.ref_registers = 16383} {
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
