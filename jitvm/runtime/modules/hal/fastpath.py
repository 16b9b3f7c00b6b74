"""Native fast paths for the HAL queries a compiled host function makes on every call.

A model call's host code asks, per argument and result, `hal.buffer_view.assert`,
`hal.buffer_view.buffer`, `hal.buffer.assert` and `hal.device.allocator`: questions about
facts fixed when the objects were made. Through Python each costs a ctypes callback, a Ref
per argument and a few lookups, 5-10 us; with the facts copied next to the object's header
(runtime.native.layout `HalBuffer`, `HalBufferView`, `HalDevice`) native code answers the
ordinary case directly.

Each function has the uniform import ABI (runtime.vm.abi) and its ctx is the Python
implementation's trampoline: anything but the plain case (a null or foreign ref, a check
that fails, an element type that only IREE's compatibility rule accepts, more dims than the
facts hold, bits a sign-extending Python check would read differently) is handed to it with
the same arguments, so errors, messages and edge cases stay exactly the Python
implementation's. The interpreter calls the Python implementations directly.
"""

from __future__ import annotations

import os
import threading

from ...native import engine, layout, template
from ...vm import nativelib
from ...vm.objects import register_type
from . import types as t

_lock = threading.Lock()
_code = None  # the compiled fast paths (runtime.native.engine.JitModule)
# JITVM_HAL_FAST_PATHS=0: compiled code calls the Python implementations (comparisons, bisection).
enabled = os.environ.get("JITVM_HAL_FAST_PATHS", "1") != "0"


# Queries `0r_r` answered with a ref an object holds: name -> (its type, facts struct, field).
HELD = {
    "jv_hal_buffer_view_buffer": ("hal.buffer_view", "HalBufferView", "buffer"),  # hal.buffer_view.buffer
    "jv_hal_device_allocator": ("hal.device", "HalDevice", "allocator"),  # hal.device.allocator
}


def ir_text() -> str:
    """The fast paths (fastpath.ll; one held.ll per HELD query), with this process's type ids."""
    view, buffer, allocator = (register_type(name) for name in ("hal.buffer_view", "hal.buffer", "hal.allocator"))
    held = "\n".join(template.render(__package__, "held.ll", name=name, type_id=register_type(type_name),
                                      offset=layout.field(facts, fact).offset)
                     for name, (type_name, facts, fact) in HELD.items())
    return template.render(
        __package__, "fastpath.ll", held=held, VM_BUFFER=nativelib.BUFFER_TYPE_ID,
        HAL_BUFFER=buffer, HAL_BUFFER_VIEW=view, HAL_ALLOCATOR=allocator, ENCODING_OPAQUE=t.ENCODING_OPAQUE)


def address(name: str) -> int:
    """The native fast path `name` (compiled once per process, with the runtime's types)."""
    global _code
    with _lock:
        if _code is None:
            nativelib.load()  # jv_retain
            # Code generation without optimisation: a few straight-line functions, compiled
            # in 7 ms instead of 21 ms at each process's first load.
            _code = engine.jit_module(ir_text(), opt=0)
    return _code.address(name)


def of(name: str):
    """An export's `native_fast_path`: the address of `name` when fast paths are enabled as
    the import is bound, else 0 (the Python implementation is called directly)."""
    return lambda: address(name) if enabled else 0
