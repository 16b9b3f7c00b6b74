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

from ..native import engine, template
from ..native import target as targets

# The control-word bits that flush denormal inputs and results, per architecture with a
# template fpu.<arch>.ll (elsewhere fpu.none.ll: stubs, nothing is flushed).
FLUSH_BITS = {
    "x86_64": (1 << 15) | (1 << 6),  # MXCSR.FTZ | MXCSR.DAZ
    "aarch64": 1 << 24,  # FPCR.FZ
}
_GET, _SET = ctypes.CFUNCTYPE(ctypes.c_uint64), ctypes.CFUNCTYPE(None, ctypes.c_uint64)

_lock = threading.Lock()
_code = None  # the compiled functions (runtime.native.engine.JitModule)
_fns = None  # (get, set, flush bits) once compiled; () when the architecture has no support


def ir_text(arch: str) -> str:
    """`jv_fpu_get`/`jv_fpu_set` for `arch`: its control word, or stubs where unknown."""
    return template.render(__package__, f"fpu.{arch if arch in FLUSH_BITS else 'none'}.ll")


def _compile():
    global _code, _fns
    with _lock:
        if _fns is None:
            arch = targets.host().arch
            _code = engine.jit_module(ir_text(arch), export=("jv_fpu_get", "jv_fpu_set"))
            _fns = (_code.function("jv_fpu_get", _GET), _code.function("jv_fpu_set", _SET),
                    FLUSH_BITS[arch]) if arch in FLUSH_BITS else ()
        return _fns


def flush_bits() -> int:
    """The control-word bits that flush denormals on this CPU (0 where unsupported)."""
    fns = _compile()
    return fns[2] if fns else 0


def register_symbols() -> None:
    """Makes `jv_fpu_get`/`jv_fpu_set` linkable from JIT-compiled code (stubs if unsupported)."""
    _compile()


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
    get, put, bits = fns
    old = get()
    put(old | bits)
    try:
        yield
    finally:
        put(old)
