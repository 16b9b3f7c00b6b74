"""The native half of the runtime: object lifetime and container storage, in LLVM IR.

Retain/release, destruction and the allocation of buffers and lists run in native code so
that JIT-compiled functions, worker threads and Python all share one implementation. The
IR (nativelib.ll) is compiled once per process for the host; its entry points are
registered as symbols for JIT-compiled modules and exposed to Python through ctypes.
"""

from __future__ import annotations

import ctypes
import threading

from ..native import engine, layout, template
from . import semantics

BUFFER_TYPE_ID = 1
LIST_TYPE_ID = 2
NO_TYPE_ID = 0xFFFFFFFF  # what checked ref ops naming `!vm.opaque` or a value type expect: no object has it

_lock = threading.Lock()
_code = None  # the compiled module (runtime.native.engine.JitModule), once loaded

# libc entry points the native code (runtime and JIT-compiled) may call.
LIBC_SYMBOLS = ("malloc", "calloc", "free", "posix_memalign", "memset", "memcpy", "memmove", "memcmp", "strlen",
                "snprintf")


def ir_text(saturating: bool) -> str:
    """The runtime's IR; `saturating`: vm.cast.f32.ui64 as aarch64 converts (x86_64 wraps
    the way clang's float -> u64 sequence does: a = cvttss2si(r), b = cvttss2si(r - 2^63),
    a | (b & (a >> 63)), where cvttss2si gives INT64_MIN for NaN and out of range; so
    [2^63, 2^64) converts exactly, and NaN, +-inf, >= 2^64 and < -2^63 give INT64_MIN)."""
    cast = template.render(__package__, "cast_f32_ui64.saturating.ll" if saturating else "cast_f32_ui64.x86_64.ll")
    return template.render(
        __package__, "nativelib.ll", cast_f32_ui64=cast, BUFFER_TYPE_ID=BUFFER_TYPE_ID, LIST_TYPE_ID=LIST_TYPE_ID,
        LIST_REF=layout.LIST_REF, LIST_VARIANT=layout.LIST_VARIANT, VARIANT_REF=layout.VARIANT_REF,
        MAX_FRAMES=layout.field("Trap", "frames").type[2])


# Name -> ctypes prototype of every exported runtime function.
PROTOTYPES = {
    "jv_retain": ctypes.CFUNCTYPE(None, ctypes.c_void_p),
    "jv_release": ctypes.CFUNCTYPE(None, ctypes.c_void_p),
    "jv_python_object_new": ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint64),
    "jv_buffer_destroy": ctypes.CFUNCTYPE(None, ctypes.c_void_p),
    "jv_list_destroy": ctypes.CFUNCTYPE(None, ctypes.c_void_p),
    "jv_buffer_alloc": ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint32),
    "jv_buffer_alloc_uninitialized": ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64,
                                                      ctypes.c_uint32),
    "jv_buffer_wrap": ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32,
                                       ctypes.c_void_p),
    "jv_list_alloc": ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                                      ctypes.c_uint32),
    "jv_list_reserve": ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint32),
    "jv_list_resize": ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint32),
    "jv_cast_f32_ui64": ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_float),
    "jv_trap_set": ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int64,
                                    ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p),
    "jv_trap_push_frame": ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32,
                                           ctypes.c_int32),
    "jv_trap_clear": ctypes.CFUNCTYPE(None, ctypes.c_void_p),
    "jv_trap_from_failure": ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p),
    "jv_object_init": ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p),
    "jv_strdup": ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_char_p),
    "jv_failure_clear": ctypes.CFUNCTYPE(None, ctypes.c_void_p),
    "jv_failure_copy": ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p),
    "jv_failure_set_text": ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_char_p),
}


def load() -> dict[str, object]:
    """Compiles the runtime's native functions (once) and returns name -> ctypes function."""
    global _code
    with _lock:
        if _code is None:
            engine.provide(engine.libc(LIBC_SYMBOLS))
            _code = engine.jit_module(ir_text(semantics.FLOAT_TO_INT_SATURATES), export=PROTOTYPES)
    return {name: _code.function(name, proto) for name, proto in PROTOTYPES.items()}


class _Lazy:
    """Module-level access to the compiled functions: `nativelib.fn.jv_retain(addr)`."""

    _fns: dict | None = None

    def __getattr__(self, name):  # only on first use of a name: it is cached as an attribute
        if _Lazy._fns is None:
            _Lazy._fns = load()
        f = _Lazy._fns[name]
        setattr(self, name, f)
        return f


fn = _Lazy()
