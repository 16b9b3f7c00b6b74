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
