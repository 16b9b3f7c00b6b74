"""Checked copies compiled when a guard first fails: the stub quick-tier code calls then.

Quick tiers leave each function-level nest's checked copy out of the code they compile
(lower.loops.outline): a cell per nest holds this module's stub until the copy is needed.
The stub finds the cell's nest, lowers and compiles that copy alone (the baseline's passes:
it runs until a trap, or wherever the guard is too cautious), puts its address in the cell
and runs it; later failures call the copy directly. A guard fails on the way to a trap, so
this Python runs at most once per nest and process, never on a call's ordinary path.
"""

from __future__ import annotations

import ctypes
import threading
import weakref

from ..errors import STATUS_CODES, Trap
from ..runtime.native import engine
from ..runtime.vm import abi, traps
from ..runtime.vm.symbols import CHECKED_COPY_STUB
from .llvm import compiler, loader

_lock = threading.Lock()
_cells: dict[int, tuple] = {}  # cell address -> (executable weakref, ordinal, header)
_stub_fn = None
STATS = {"compiled": 0, "ran_to_exit": 0, "trapped": 0}  # copies compiled; how their first runs ended


def _stub(state, env, cell, trap):
    try:  # env and cell come as pointer objects (abi.NATIVE_FN's types)
        status = _copy_of(ctypes.cast(cell, ctypes.c_void_p).value)(state, env, cell, trap)
        STATS["ran_to_exit" if status == 0 else "trapped"] += 1
        return status
    except BaseException as e:  # noqa: BLE001 - carried to the native caller, which unwinds
        return traps.park_exception(trap, e)


def stub_address() -> int:
    """The stub's address, provided to native code as CHECKED_COPY_STUB (once per process)."""
    global _stub_fn
    with _lock:
        if _stub_fn is None:
            _stub_fn = abi.NATIVE_FN(_stub)
            engine.provide({CHECKED_COPY_STUB: ctypes.cast(_stub_fn, ctypes.c_void_p).value})
        return ctypes.cast(_stub_fn, ctypes.c_void_p).value


def register(executable, code: engine.JitModule, deferred) -> None:
    """The cells of loaded code `code`, one per (cell symbol, ordinal, header) of `deferred`."""
    for symbol, ordinal, header in deferred:
        _cells[code.global_address(symbol)] = (weakref.ref(executable), ordinal, header)


def _copy_of(cell: int):
    """The checked copy cell `cell` stands for, compiled on first use."""
    held = ctypes.c_void_p.from_address(cell)
    with _lock:
        if held.value != ctypes.cast(_stub_fn, ctypes.c_void_p).value:
            return abi.NATIVE_FN(held.value)
        ref, ordinal, header = _cells[cell]
        executable = ref()
        if executable is None:
            raise Trap(STATUS_CODES["INTERNAL"], "checked copy of a module no longer loaded")
        text, key, symbol = executable.builder.lower_checked(ordinal, header)
        objects = compiler.build_jobs([(text, (compiler.BASELINE, 0, False))], 1, executable.backend.target)
        code = loader.load(objects)
        executable._fill_type_table(key, code)
        executable._modules.append(code)
        held.value = code.address(symbol)
        STATS["compiled"] += 1
        return abi.NATIVE_FN(held.value)
