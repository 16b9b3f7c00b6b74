"""The floating-point environment dispatches run in: denormals flushed, as IREE does.

IREE's local devices run every dispatch with the CPU's flush-to-zero and denormals-are-zero
modes on (iree_fpu_state_push), so a dispatch computing 1e-20f * 1e-20f yields 0, while
host code keeps IEEE denormals. Setting the same hardware mode around our workgroup loops
makes both backends (interpreted Python float math and JIT code alike) round as IREE does.
The mode is per thread: a runner that uses worker threads must enter it in each of them.
"""

from __future__ import annotations

import ctypes
import threading
from contextlib import contextmanager

import llvmlite.binding as llvm

from ..vm.nativelib import initialize_llvm

# (IR of get/set functions, bits that flush denormal inputs and results) per architecture
_ARCHES = {
    "x86_64": ("""
declare void @llvm.x86.sse.stmxcsr(ptr)
declare void @llvm.x86.sse.ldmxcsr(ptr)
define i64 @jv_fpu_get() {
  %p = alloca i32
  call void @llvm.x86.sse.stmxcsr(ptr %p)
  %v = load i32, ptr %p
  %w = zext i32 %v to i64
  ret i64 %w
}
define void @jv_fpu_set(i64 %w) {
  %p = alloca i32
  %v = trunc i64 %w to i32
  store i32 %v, ptr %p
  call void @llvm.x86.sse.ldmxcsr(ptr %p)
  ret void
}
""", (1 << 15) | (1 << 6)),  # MXCSR.FTZ | MXCSR.DAZ
    "aarch64": ("""
declare i64 @llvm.aarch64.get.fpcr()
declare void @llvm.aarch64.set.fpcr(i64)
define i64 @jv_fpu_get() {
  %v = call i64 @llvm.aarch64.get.fpcr()
  ret i64 %v
}
define void @jv_fpu_set(i64 %v) {
  call void @llvm.aarch64.set.fpcr(i64 %v)
  ret void
}
""", 1 << 24),  # FPCR.FZ
}

_lock = threading.Lock()
_fns = None  # (get, set, flush bits) once compiled; () when the architecture has no support


def _compile():
    global _fns
    with _lock:
        if _fns is not None:
            return _fns
        initialize_llvm()
        triple = llvm.get_process_triple()
        arch = triple.split("-")[0]
        if arch not in _ARCHES:
            _fns = ()
            return _fns
        ir_text, bits = _ARCHES[arch]
        mod = llvm.parse_assembly(ir_text)
        mod.triple = triple
        target = llvm.Target.from_triple(triple)
        machine = target.create_target_machine(cpu=llvm.get_host_cpu_name(), reloc="default",
                                               codemodel="jitdefault")  # owned by the engine
        engine = llvm.create_mcjit_compiler(mod, machine)
        engine.finalize_object()
        get = ctypes.CFUNCTYPE(ctypes.c_uint64)(engine.get_function_address("jv_fpu_get"))
        put = ctypes.CFUNCTYPE(None, ctypes.c_uint64)(engine.get_function_address("jv_fpu_set"))
        _fns = (get, put, bits, engine)  # the engine keeps the code alive for the process
        return _fns


def flush_bits() -> int:
    """The control-word bits that flush denormals on this CPU (0 where unsupported)."""
    fns = _compile()
    return fns[2] if fns else 0


def register_symbols() -> None:
    """Makes `jv_fpu_get`/`jv_fpu_set` linkable from JIT-compiled code (no-ops if unsupported)."""
    fns = _compile()
    if fns:
        llvm.add_symbol("jv_fpu_get", ctypes.cast(fns[0], ctypes.c_void_p).value)
        llvm.add_symbol("jv_fpu_set", ctypes.cast(fns[1], ctypes.c_void_p).value)
        return
    stub = llvm.parse_assembly("define i64 @jv_fpu_get() { ret i64 0 }\ndefine void @jv_fpu_set(i64 %v) { ret void }")
    engine = llvm.create_mcjit_compiler(stub, llvm.Target.from_triple(llvm.get_process_triple())
                                        .create_target_machine(codemodel="jitdefault"))
    engine.finalize_object()
    _stubs.append(engine)
    llvm.add_symbol("jv_fpu_get", engine.get_function_address("jv_fpu_get"))
    llvm.add_symbol("jv_fpu_set", engine.get_function_address("jv_fpu_set"))


_stubs: list = []


def state() -> int | None:
    """The current control word (MXCSR / FPCR), or None where unsupported."""
    fns = _compile()
    return fns[0]() if fns else None


@contextmanager
def denormals_flushed():
    """Runs the body with flush-to-zero and denormals-are-zero on, restoring the mode after."""
    fns = _compile()
    if not fns:
        yield
        return
    get, put, bits, _ = fns
    old = get()
    put(old | bits)
    try:
        yield
    finally:
        put(old)
