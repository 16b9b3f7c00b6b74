"""Everything JIT-compiled code links against: the runtime's native functions (nativelib),
the runtime functions implemented in Python that it calls as plain symbols (list element
access, vm.buffer.hash: off hot paths), and libm.

Above nativelib and the modules whose callbacks it links, so none of them imports another
to get registered.
"""

from __future__ import annotations

import ctypes
import threading

from ..native import engine, mathlib
from . import hashing, listops, nativelib

# Name -> (ctypes prototype, Python implementation).
CALLBACKS = {**listops.CALLBACKS, **hashing.CALLBACKS}
# What quick-tier code calls when a nest's guard fails, until that nest's checked copy is
# compiled (lower.loops.outline); lower.deferred provides it, since it compiles the copy.
CHECKED_COPY_STUB = "jv_checked_stub"

_lock = threading.Lock()
_callbacks: dict[str, object] = {}  # the ctypes thunks, kept alive for the process


def prototype(name: str):
    """The ctypes prototype of a native runtime function or callback, or None."""
    if name in nativelib.PROTOTYPES:
        return nativelib.PROTOTYPES[name]
    if name in CALLBACKS:
        return CALLBACKS[name][0]
    return None


def load() -> None:
    """Makes every runtime symbol resolvable (once): call before linking JIT-compiled code."""
    nativelib.load()
    with _lock:
        if _callbacks:
            return
        for name, (proto, impl) in CALLBACKS.items():
            _callbacks[name] = proto(impl)
        engine.provide({name: ctypes.cast(cb, ctypes.c_void_p).value for name, cb in _callbacks.items()})
        mathlib.register_symbols()
