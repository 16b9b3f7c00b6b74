"""Object code -> callable functions in this process.

Apart from the compiler, so compile workers (lower.llvm.compile_worker) import nothing of
the runtime they never link against.
"""

from __future__ import annotations

from ...runtime.exec.nativecode import native
from ...runtime.native import engine
from ...runtime.vm import symbols


def load(objects: list[bytes]) -> engine.JitModule:
    """Object code linked into this process, against the runtime's symbols and the
    executor's (jv_parallel_for); the JitModule keeps the code alive."""
    symbols.load()
    native()
    return engine.jit_module(objects=objects)
