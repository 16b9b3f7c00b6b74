"""Object code -> callable functions in this process.

Apart from the compiler, so compile workers (lower.llvm.compile_worker) import nothing of
the runtime they never link against.
"""

from __future__ import annotations

from ...runtime.exec.nativecode import native
from ...runtime.native import engine
from ...runtime.native import target as targets
from ...runtime.vm import symbols
from . import cache, compiler


def load_runtime_ir(text: str, what: str, export=()) -> engine.JitModule:
    """A native module's hand-written IR (the HAL's, the call plan's) in this process:
    optimized and compiled once per text and host, then kept in the on-disk cache (the
    text holds this process's type ids and addresses of nothing, so equal texts compile
    alike), so later processes only load its object code."""
    target = targets.host()
    k = cache.key(text.encode(), target, {"runtime": what})
    hit = cache.load(k)
    if hit is not None:
        objects = hit[0]
    else:
        objects = [compiler.build_object(text, target, speed=2, codegen=2, slp=False)]
        cache.store(k, objects, {"runtime": what})
    return engine.jit_module(objects=objects, export=export)


def load(objects: list[bytes]) -> engine.JitModule:
    """Object code linked into this process, against the runtime's symbols and the
    executor's (jv_parallel_for); the JitModule keeps the code alive."""
    symbols.load()
    native()
    return engine.jit_module(objects=objects)
