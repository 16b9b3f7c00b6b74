"""The JIT backend: verified modules compiled to native code, run through the uniform ABI.

`prepare` compiles a module once (or loads it from the disk cache) and returns an
executable whose functions are native entry points taking the instance's ModuleState.
Functions the lowering could not handle run in the reference interpreter, with a warning
naming the op; `STATS` counts compilations, cache hits and fallbacks.
"""

from __future__ import annotations

import ctypes
import sys
import threading
import time
import warnings
from collections import Counter

from ..fallback_interp import InterpreterBackend
from ..runtime.exec.nativecode import native
from ..runtime.exec.runner import NativeDispatchRunner, default_threads
from ..runtime.exec.workers import NativePool
from ..runtime.native import cache as store, engine, target as targets
from ..runtime.native.layout import TrapT
from ..runtime.vm import abi, traps
from ..runtime.vm.bytecode import BytecodeInstance, LoadedModule, describe_frame
from .llvm import cache, compile_pool, compiler, loader, vector_math
from .module import ModuleLowering, runtime_type_ids, type_table_symbol

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
        self.timer.cancel()
        if self.shown:
            sys.stderr.write(f"jitvm: compiled {self.what} in {time.perf_counter() - self.start:.1f} s\n")
            sys.stderr.flush()


class JitBackend:
    name = "jit"

    def __init__(self, speed: int = 2, use_cache: bool = True, progress: bool = True, threads: int | None = None,
                 loop_steps: dict | None = None, split_calls_from: int | None = None):
        self.speed = speed
        self.use_cache = use_cache
        self.progress = progress
        self.threads = threads
        # Loop optimisations to turn off, for measuring each one (bench/lowering_steps.py):
        # version_loops, jam_loops, jam_outer, share_copies, affine_indices, derive_indices, parallel_loops
        # (ModuleLowering)
        # and slp (the compiler).
        self.loop_steps = dict(loop_steps or {})
        self.target = targets.host()
        self._runner = None
        # Direct calls (not only dispatches) may split loop nests of at least this many
        # innermost iterations across a pool of their own: how the differential tests run
        # split loops against the interpreter. None: direct calls never split.
        self.split_calls_from = split_calls_from
        self._call_pool = None

    def call_pool(self):
        """The pool direct calls lend to their split loops (see split_calls_from), or None."""
        if self.split_calls_from is not None and self._call_pool is None:
            if native().pooled:
                self._call_pool = NativePool(max(1, dispatch_threads(self.threads) - 1))
                self._call_pool.state.split_min_work = self.split_calls_from
        return self._call_pool

    def dispatch_runner(self):
        """The HAL's runner for this backend's executables: native, on all cores."""
        if self._runner is None:
            self._runner = NativeDispatchRunner(self.threads)
        return self._runner

    def options(self, loaded: LoadedModule) -> dict:
        """Optimization levels: modules with loops get the full pipeline; straight-line host
        code (run once per call, dominated by imports) is compiled quickly instead."""
        if compiler.has_loops(loaded.verified):
            return {"speed": self.speed, "codegen": 2, "vector_math": vector_math.available(), **self.loop_steps}
        return {"speed": 1, "codegen": 0}

    def compile(self, loaded: LoadedModule) -> tuple[list[bytes], dict]:
        """Object code (one object per function group) and metadata, cached or compiled."""
        flat = loaded.module.archive.flatbuffer
        options = self.options(loaded)
        k = cache.key(flat, self.target, options)
        if self.use_cache:
            hit = store.load(k)
            if hit is not None:
                STATS["cache_hits"] += 1
                return hit
        processes = compile_pool.processes()
        groups = function_groups(loaded.verified, processes)
        progress = _Progress(f"{loaded.name} ({len(loaded.verified.functions)} functions"
                             f"{f', {min(processes, len(groups))} processes' if len(groups) > 1 else ''})") \
            if self.progress else None
        steps = {n: options[n] for n in
                 ("version_loops", "jam_loops", "jam_outer", "share_copies", "affine_indices", "derive_indices",
                  "parallel_loops", "vector_math") if n in options}
        lowered = []

        def texts():  # lowered one group at a time, while the workers compile the previous ones
            for i, group in enumerate(groups):
                lowered.append(ModuleLowering(loaded.verified, f"{k[:16]}g{i}", **steps).lower(group))
                yield str(lowered[-1])

        try:
            objects = compiler.build_objects(texts(), len(groups), self.target, options["speed"],
                                             options["codegen"], options.get("slp", True))
        finally:
            if progress:
                progress.done()
        STATS["compiled_modules"] += 1
        STATS["llvm_functions"] += sum(len(lm.symbols) for lm in lowered)
        STATS["blocked_nests"] += sum(lm.blocked_nests for lm in lowered)
        meta = {"groups": [{"key": lm.key, "symbols": {str(o): s for o, s in lm.symbols.items()}}
                           for lm in lowered],
                "fallbacks": [[f.ordinal, f.name, f.op, f.reason] for lm in lowered for f in lm.fallbacks]}
        if self.use_cache:
            store.store(k, objects, meta)
        return objects, meta

    def prepare(self, loaded: LoadedModule) -> "JitExecutable":
        objects, meta = self.compile(loaded)
        return JitExecutable(loaded, loader.load(objects), meta, self.call_pool())


def dispatch_threads(threads: int | None) -> int:
    return threads or default_threads()


# Below this many VM instructions a module compiles as one unit (splitting costs more).
PARALLEL_COMPILE_MIN_INSTRUCTIONS = 1500
GROUP_MIN_INSTRUCTIONS = 400  # loop-free functions below it share modules of about this size


def function_groups(verified, parts: int) -> list[list[int]]:
    """Functions in groups compiled as separate LLVM modules, largest first, when `parts`
    processes compile them: each set of functions calling each other is one group (calls
    between groups would go through the module's function table instead of a direct call).
    A function with loops (where compile time goes: its nests are versioned and jammed) is
    a module of its own: that costs less CPU than few large modules (a ResNet's 36 dispatch
    functions: 21.5 s alone, 23.0 s in 8 modules, 28.0 s in 2) and the pool balances them.
    Loop-free functions share modules of about GROUP_MIN_INSTRUCTIONS.
    """
    sizes = [len(vf.instructions) for vf in verified.functions]
    ordinals = list(range(len(sizes)))
    if parts <= 1 or sum(sizes) < PARALLEL_COMPILE_MIN_INSTRUCTIONS or len(ordinals) < 2:
        return [ordinals]
    # Connected components of the internal call graph, largest first, onto the lightest group.
    parent = list(range(len(sizes)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for vf in verified.functions:
        for site in vf.calls.values():
            if not site.is_import:
                parent[find(vf.ordinal)] = find(site.callee)
    components: dict[int, list[int]] = {}
    for o in ordinals:
        components.setdefault(find(o), []).append(o)
    groups: list[list[int]] = []
    small: list[int] = []  # small components share a module: each module has a fixed cost
    looped = {vf.ordinal for vf in verified.functions if compiler.has_loops_in(vf)}
    for comp in sorted(components.values(), key=lambda c: -sum(sizes[o] for o in c)):
        if looped.intersection(comp) or sum(sizes[o] for o in comp) >= GROUP_MIN_INSTRUCTIONS:
            groups.append(sorted(comp))
            continue
        small.extend(comp)
        if sum(sizes[o] for o in small) >= GROUP_MIN_INSTRUCTIONS:
            groups.append(sorted(small))
            small = []
    if small:
        groups.append(sorted(small))
    return groups


class JitExecutable:
    def __init__(self, loaded: LoadedModule, code: engine.JitModule, meta: dict, call_pool=None):
        self.loaded = loaded
        self.call_pool = call_pool  # lent to direct calls' split loops (JitBackend.split_calls_from)
        self.code = code
        self.entries = {int(o): code.address(s) for g in meta["groups"] for o, s in g["symbols"].items()}
        self.fns = {o: abi.NATIVE_FN(a) for o, a in self.entries.items()}
        self.fallbacks = {int(f[0]): f for f in meta["fallbacks"]}
        for group in meta["groups"]:
            self._fill_type_table(group["key"])
        self._interp = None
        self._ready: set[int] = set()
        self._lock = threading.Lock()
        for ordinal, name, op, reason in meta["fallbacks"]:
            STATS["fallback_functions"] += 1
            warnings.warn(f"jitvm: {loaded.name}.{name} runs in the interpreter: cannot lower {op} ({reason})",
                          RuntimeWarning, stacklevel=3)

    def _fill_type_table(self, key: str) -> None:
        ids = runtime_type_ids(self.loaded.verified)
        if not ids:
            return
        addr = self.code.global_address(type_table_symbol(key))
        (ctypes.c_int32 * len(ids)).from_address(addr)[:] = ids

    @property
    def interpreter(self):
        if self._interp is None:
            self._interp = InterpreterBackend().prepare(self.loaded)
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
