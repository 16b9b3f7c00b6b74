"""jitvm: a JIT compiler for IREE VM bytecode, on llvmlite."""

from __future__ import annotations

import gc
import importlib

from .errors import ArgumentError, DecodeError, Error, FormatError, Trap, UnsupportedError, VerifyError

from .version import __version__


def load(source, backend: str = "jit", **options):
    """Loads a .vmfb (path or bytes); see jitvm.api.load.

    Python's cyclic garbage collector is paused meanwhile: importing the runtime and
    loading a module allocate many objects that all live on (a warm CNN load: 46 passes
    freed 93 objects, the import's 32 none) and the passes cost it some 10 ms of ~90.
    It is resumed after, unless it was off already; what is garbage by then is collected
    as usual."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        from .api import load as _load

        return _load(source, backend, **options)
    finally:
        if was_on:
            gc.enable()


def __getattr__(name: str):
    """`jitvm.verify` and `jitvm.verify_module` are imported on first use: `import jitvm`
    itself reads no module table and imports neither numpy nor LLVM."""
    if name in ("verify", "verify_module"):
        verify = importlib.import_module(".verify", __name__)  # binds jitvm.verify: asked once
        return verify if name == "verify" else verify.verify_module
    raise AttributeError(f"module 'jitvm' has no attribute {name!r}")


__all__ = [
    "ArgumentError",
    "DecodeError",
    "Error",
    "FormatError",
    "Trap",
    "UnsupportedError",
    "VerifyError",
    "__version__",
    "load",
    "verify",
    "verify_module",
]
