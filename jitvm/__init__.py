"""jitvm: a JIT compiler for IREE VM bytecode, on llvmlite."""

from __future__ import annotations

from .errors import (
    ArgumentError,
    DecodeError,
    Error,
    FormatError,
    Trap,
    UnsupportedError,
    VerifyError,
)

from . import verify
from .verify import verify_module

__version__ = "0.1.0"

__all__ = [
    "ArgumentError",
    "DecodeError",
    "Error",
    "FormatError",
    "Trap",
    "UnsupportedError",
    "VerifyError",
    "__version__",
    "verify",
    "verify_module",
]
