"""jitvm's process-wide symbol table: what native code loaded later links against.

`engine.provide` (libc, libm, Python callbacks) and `engine.jit_module(export=...)` register
names here. Code mapped by jitvm's own object loader (runtime.native.objload) resolves its
undefined symbols here first, then in the process (dlsym); LLVM's symbol table
(llvm.add_symbol, what MCJIT consults) is filled from here the first time llvmlite's
bindings are needed (`attach`), and kept in step from then on, so code compiled late links
against everything registered early.
"""

from __future__ import annotations

import threading
from typing import Callable, Mapping

from . import clib

_symbols: dict[str, int] = {}
_lock = threading.Lock()
_add: Callable[[str, int], None] | None = None  # llvm.add_symbol once attached


def add(symbols: Mapping[str, int]) -> None:
    """Registers each name at its address (a later registration of a name replaces it, as in LLVM)."""
    with _lock:
        _symbols.update(symbols)
        if _add is not None:
            for name, addr in symbols.items():
                _add(name, addr)


def attach(add_symbol: Callable[[str, int], None]) -> None:
    """Hands every symbol registered so far to LLVM's `add_symbol`, and each later one as it comes."""
    global _add
    with _lock:
        if _add is None:
            for name, addr in _symbols.items():
                add_symbol(name, addr)
            _add = add_symbol


def lookup(name: str) -> int | None:
    """The address of `name`: jitvm's table first, then the process's global symbols (what
    MCJIT's symbol search finds, in the same order), or None."""
    addr = _symbols.get(name)
    if addr is not None:
        return addr
    return clib.address(name)


def registered() -> dict[str, int]:
    """A copy of jitvm's own table (tests, diagnostics)."""
    with _lock:
        return dict(_symbols)
