"""The one way native code enters this process: IR text or object code in an MCJIT engine.

Every engine gets a target machine of its own, for the host: MCJIT takes ownership of its
machine and frees it when the engine is disposed, so a machine shared between engines (or
with the compiler's cached ones) would be freed twice. A `JitModule` keeps its engine, and
so its code, alive for as long as it is referenced.

Symbols are process-wide (LLVM's symbol table): code compiled later links against what
earlier modules `export` and what `provide` registers (libc, libm, Python callbacks).
"""

from __future__ import annotations

import ctypes
import threading
from typing import Iterable, Mapping

import llvmlite.binding as llvm

from . import target as targets

_lock = threading.Lock()  # one engine at a time: loads come from several threads, LLVM's global context is shared


class JitModule:
    """Code compiled or linked into this process, alive as long as this object."""

    def __init__(self, engine: llvm.ExecutionEngine):
        self.engine = engine

    def address(self, name: str) -> int:
        """The address of function `name`."""
        addr = self.engine.get_function_address(name)
        if not addr:
            raise KeyError(f"symbol {name} not found in compiled code")
        return addr

    def global_address(self, name: str) -> int:
        """The address of global variable `name`."""
        addr = self.engine.get_global_value_address(name)
        if not addr:
            raise KeyError(f"global {name} not found in compiled code")
        return addr

    def function(self, name: str, prototype):
        """Function `name` as a ctypes callable of `prototype` (a CFUNCTYPE)."""
        return prototype(self.address(name))


def jit_module(ir: str | llvm.ModuleRef | None = None, objects: Iterable[bytes] = (), *, opt: int = 2,
               export: Iterable[str] = ()) -> JitModule:
    """`ir` (text or a parsed module, verified here) and/or object files, compiled at
    optimisation level `opt` for the host and finalized; the functions named in `export`
    become symbols later modules link against."""
    host = targets.host()
    with _lock:
        if ir is None:
            mod = llvm.parse_assembly(f'target triple = "{host.triple}"\n')
        else:
            mod = llvm.parse_assembly(ir) if isinstance(ir, str) else ir
            mod.triple = host.triple
            mod.verify()
        engine = llvm.create_mcjit_compiler(mod, targets.new_machine(host, opt))
        for obj in objects:
            engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
    code = JitModule(engine)
    provide({name: code.address(name) for name in export})
    return code


def provide(symbols: Mapping[str, int]) -> None:
    """Makes each name resolve to its address in code compiled from now on."""
    for name, addr in symbols.items():
        llvm.add_symbol(name, addr)


def libc(names: Iterable[str]) -> dict[str, int]:
    """The addresses of the C library's functions `names` (for `provide`)."""
    lib = ctypes.CDLL(None)
    return {name: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in names}
