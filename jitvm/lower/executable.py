"""A compiled module's functions as the runtime calls them (the JIT's Executable).

`JitExecutable` holds code compiled when the module loaded (lower.backend); `lower.lazy`'s
executable compiles as functions are first called. Functions the lowering could not
handle run in the reference interpreter; `STATS` counts compilations, cache hits and
fallbacks.
"""

from __future__ import annotations

import ctypes
import sys
import threading
import time
import warnings
from collections import Counter

from ..fallback_interp import InterpreterBackend
from ..runtime.native import engine
from ..runtime.native.layout import TrapT
from ..runtime.vm import abi, traps
from ..runtime.vm.bytecode import BytecodeInstance, LoadedModule, describe_frame
from .type_table import runtime_type_ids, type_table_symbol

STATS: Counter = Counter()  # compiled_modules, cache_hits, llvm_functions, fallback_functions, blocked_nests


class _Progress:
    """Tells stderr what is being compiled once compiling has taken more than a second."""

    def __init__(self, what: str, delay: float = 1.0):
        self.what = what
        self.start = time.perf_counter()
        self.shown = False
        self.timer = threading.Timer(delay, self._show)
        self.timer.daemon = True
        self.timer.start()

    def _show(self):
        self.shown = True
        sys.stderr.write(f"jitvm: compiling {self.what} ...\n")  # one write: modules compile on two threads
        sys.stderr.flush()

    def done(self):
        """Says how long it took (once, however often called)."""
        self.timer.cancel()
        if self.shown:
            self.shown = False
            sys.stderr.write(f"jitvm: compiled {self.what} in {time.perf_counter() - self.start:.1f} s\n")
            sys.stderr.flush()


class JitExecutable:
    # the interpreter's compiled Python kept in the code store (lazy executables run their
    # run-once code there at every load: lower.lazy)
    cache_interpreter_code = False

    def __init__(self, loaded: LoadedModule, code: engine.JitModule, meta: dict, call_pool=None):
        self.loaded = loaded
        self.call_pool = call_pool  # lent to direct calls' split loops (JitBackend.split_calls_from)
        self.code = code
        self.entries = {int(o): code.address(s) for g in meta["groups"] for o, s in g["symbols"].items()}
        self.fns = {o: abi.NATIVE_FN(a) for o, a in self.entries.items()}
        self.fallbacks = {int(f[0]): f for f in meta["fallbacks"]}
        for group in meta["groups"]:
            self._fill_type_table(group["key"], code)
        self._interp = None
        self._ready: set[int] = set()
        self._lock = threading.Lock()
        for ordinal, name, op, reason in meta["fallbacks"]:
            STATS["fallback_functions"] += 1
            warnings.warn(f"jitvm: {loaded.name}.{name} runs in the interpreter: cannot lower {op} ({reason})",
                          RuntimeWarning, stacklevel=3)

    def _fill_type_table(self, key: str, code: engine.JitModule) -> None:
        ids = runtime_type_ids(self.loaded.verified)
        if not ids:
            return
        addr = code.global_address(type_table_symbol(key))
        (ctypes.c_int32 * len(ids)).from_address(addr)[:] = ids

    def runs_natively(self, ordinal: int) -> bool:
        """Whether `ordinal` runs compiled code (what the dispatch runner may call natively)."""
        return ordinal in self.entries and ordinal not in self.fallbacks

    def ensure_compiled(self, ordinals, workgroups: dict | None = None, ahead: bool = False) -> None:
        """Compiles `ordinals` now (everything is compiled already here: see lower.lazy)."""

    def compile_stats(self) -> dict:
        """How many functions are compiled, run in the interpreter, or not compiled yet."""
        n = len(self.loaded.verified.functions)
        return {"functions": n, "compiled": len(self.entries), "interpreted": len(self.fallbacks), "uncompiled": 0,
                "baseline": 0, "full": len(self.entries)}

    @property
    def interpreter(self):
        if self._interp is None:
            self._interp = InterpreterBackend(cache_code=self.cache_interpreter_code).prepare(self.loaded)
        return self._interp

    def _prepare_instance(self, instance: BytecodeInstance) -> None:
        """Native imports and interpreter trampolines for fallbacks, once per instance."""
        key = id(instance)
        if key in self._ready:
            return
        with self._lock:
            instance.prepare_native_imports()
            for ordinal, address in self.entries.items():  # calls between function groups
                instance.function_table[ordinal] = address
            for ordinal in self.fallbacks:
                fn, _ctx = self.interpreter.native_entry(instance, ordinal)
                instance.function_table[ordinal] = fn
            self._ready.add(key)

    def native_entry(self, instance: BytecodeInstance, ordinal: int) -> tuple[int, int]:
        if ordinal in self.fallbacks:
            return self.interpreter.native_entry(instance, ordinal)
        self._prepare_instance(instance)
        return self.entries[ordinal], instance.state_addr

    def call(self, instance: BytecodeInstance, ordinal: int, args) -> list:
        if ordinal in self.fallbacks:
            return self.interpreter.call(instance, ordinal, args)
        self._prepare_instance(instance)
        module = self.loaded.module
        cconv = module.signatures[ordinal].cconv
        arg_slots = abi.pack_args(cconv, args, f"{module.name}.{module.display_name(ordinal)}")
        results = abi.result_array(cconv)
        trap = TrapT()
        pool = self.call_pool
        trap.pool = pool.lend(0) if pool is not None else 0
        try:
            status = self.fns[ordinal](instance.state_addr, arg_slots, results, ctypes.addressof(trap))
        finally:
            if trap.pool:
                pool.give_back()
        if status:
            raise traps.take_exception(trap, describe_frame)
        return abi.unpack_results(cconv, results)
