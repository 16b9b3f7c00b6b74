"""jitvm: a JIT compiler for IREE VM bytecode, on llvmlite."""

from __future__ import annotations

from .errors import ArgumentError, DecodeError, Error, FormatError, Trap, UnsupportedError, VerifyError

from . import verify
from .verify import verify_module

from .version import __version__


def load(source, backend: str = "jit", **options):
    """Loads a .vmfb (path or bytes); see jitvm.api.load."""
    from .api import load as _load

    return _load(source, backend, **options)


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
