"""The HAL's native code, rendered and compiled once per process into one module.

objects.ll makes and destroys the HAL's objects (their structs are runtime.native.layout's
Hal*); the Python classes (hal.buffer, hal.buffer_view, hal.fence, ...) are views that call
these functions through ctypes. The type ids the code checks and stores are this process's
(runtime.vm.objects.register_type), filled in when the text is rendered.
"""

from __future__ import annotations

import ctypes
import threading

from ...native import engine, layout, template
from ...vm import nativelib
from ...vm.objects import register_type

ALLOCATION_ALIGNMENT = 64  # IREE's heap buffers are 64-byte aligned

# The ref types native code checks or makes: template name -> type name.
TYPES = {
    "VM_BUFFER": "vm.buffer", "HAL_ALLOCATOR": "hal.allocator", "HAL_BUFFER": "hal.buffer",
    "HAL_BUFFER_VIEW": "hal.buffer_view", "HAL_SEMAPHORE": "hal.semaphore", "HAL_FENCE": "hal.fence",
    "HAL_DEVICE": "hal.device",
}

_P, _U64, _U32, _I32 = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_int32
PROTOTYPES = {
    "jv_hal_allocator_new": ctypes.CFUNCTYPE(_P),
    "jv_hal_buffer_new": ctypes.CFUNCTYPE(_P, _P, _U64, _U64, _U32, _U32, _U32, _P),
    "jv_hal_buffer_allocate": ctypes.CFUNCTYPE(_P, _U64, _U32, _U32, _U32, _U32),
    "jv_hal_buffer_view_new": ctypes.CFUNCTYPE(_P, _P, _U64, _P, _U32, _U32),
    "jv_hal_semaphore_new": ctypes.CFUNCTYPE(_P, _U64),
    "jv_hal_fence_new": ctypes.CFUNCTYPE(_P, _U64, _P),
}


def type_ids() -> dict[str, int]:
    return {key: register_type(name) for key, name in TYPES.items()}


def ir_text() -> str:
    return template.render(__package__, "objects.ll", ALLOCATION_ALIGNMENT=ALLOCATION_ALIGNMENT,
                           HOST_MEMORY=layout.BUFFER_MUTABLE | layout.BUFFER_ORIGIN_HOST,
                           **{k: v for k, v in type_ids().items() if k in _OBJECT_TYPES})


_OBJECT_TYPES = ("HAL_ALLOCATOR", "HAL_BUFFER", "HAL_BUFFER_VIEW", "HAL_SEMAPHORE", "HAL_FENCE")

_lock = threading.Lock()
_code = None


class _Functions:
    """`native.fn.jv_hal_buffer_new(...)`: the compiled functions as ctypes callables."""

    def __getattr__(self, name):
        f = code().function(name, PROTOTYPES[name])
        setattr(self, name, f)
        return f


def code() -> engine.JitModule:
    """The HAL's compiled native module (once per process)."""
    global _code
    with _lock:
        if _code is None:
            nativelib.load()
            _code = engine.jit_module(ir_text(), export=PROTOTYPES)
    return _code


def address(name: str) -> int:
    return code().address(name)


fn = _Functions()
