"""The JIT backend: verified modules compiled to native code, run through the uniform ABI.

`prepare` compiles a module once (or loads it from the disk cache) and returns an
executable whose functions are native entry points taking the instance's ModuleState, or,
given a tier, an executable that compiles each function when first called (lower.lazy).
Functions the lowering could not handle run in the reference interpreter, with a warning
naming the op; `STATS` (lower.executable) counts compilations, cache hits and fallbacks.
"""

from __future__ import annotations

from ..runtime.exec.nativecode import native
from ..runtime.exec.runner import NativeDispatchRunner, default_threads
from ..runtime.exec.workers import NativePool
from ..runtime.native import cache as store, engine, target as targets
from ..runtime.vm.bytecode import LoadedModule
from . import handoff
from .executable import STATS, JitExecutable, _Progress
from .lazy import LazyExecutable
from .llvm import cache, compile_pool, compiler, loader, vector_math
from .steps import LOOP_STEPS
from .units import call_components

__all__ = ["STATS", "JitBackend", "JitExecutable", "dispatch_threads", "function_groups"]


class JitBackend:
    name = "jit"

    def __init__(self, speed: int = 2, use_cache: bool = True, progress: bool = True, threads: int | None = None,
                 loop_steps: dict | None = None, split_calls_from: int | None = None, tier: str | None = None):
        self.speed = speed
        # None: every function compiled when the module loads, with the full pipeline (the
        # differential tests' JIT); "auto", "baseline" or "full": compiled when first called
        # (lower.lazy), in those tiers.
        self.tier = tier
        self.use_cache = use_cache
        self.progress = progress
        self.threads = threads
        # Loop optimisations to turn off, for measuring each one (bench/lowering_steps.py): the
        # fields of lower.steps.LoopSteps, and slp (the compiler).
        self.loop_steps = dict(loop_steps or {})
        compile_pool.offload_llvm()  # LLVM's work on a compile worker: this process need not load libLLVM
        self._runner = None
        # Direct calls (not only dispatches) may split loop nests of at least this many
        # innermost iterations across a pool of their own: how the differential tests run
        # split loops against the interpreter. None: direct calls never split.
        self.split_calls_from = split_calls_from
        self._call_pool = None
        if tier in ("auto", "baseline") and handoff.enabled():
            # the runtime's own code too starts quickly; a detached tier-up optimises it for the next process
            engine.quick_start()
            handoff.register()

    @property
    def target(self):
        """The host: asked when first needed (on a cold host the compile helper, started as
        jitvm.load began, answers while the module is verified)."""
        return targets.host()

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

    def options(self, loaded: LoadedModule, probe: bool = True) -> dict:
        """Optimization levels: modules with loops get the full pipeline; straight-line host
        code (run once per call, dominated by imports) is compiled quickly instead. `probe`
        False: without vector math, so its probe never runs (the middle tier's options)."""
        if compiler.has_loops(loaded.verified):
            vector = vector_math.available() if probe else False
            # (deferred checked copies need a lazy executable's stub: lower.deferred)
            steps = {k: v for k, v in self.loop_steps.items() if k != "defer_checked"}
            return {"speed": self.speed, "codegen": 2, "vector_math": vector,
                    "wide_vectors": targets.wide_vectors(self.target), **steps}
        return {"speed": 1, "codegen": 0}

    def known_options(self, loaded: LoadedModule) -> dict | None:
        """`options` when they cost no vector math probe (vector_math.known), else None."""
        if compiler.has_loops(loaded.verified) and vector_math.known() is None:
            return None
        return self.options(loaded)

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
        steps = {n: options[n] for n in LOOP_STEPS if n in options}
        lowered = []
        from .module import ModuleLowering  # the lowering (emit, loops) only when something compiles

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
        if self.tier is not None:
            return LazyExecutable(self, loaded, self.tier, self.call_pool())
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
    components = call_components(verified)
    groups: list[list[int]] = []
    small: list[int] = []  # small components share a module: each module has a fixed cost
    looped = {vf.ordinal for vf in verified.functions if compiler.has_loops_in(vf)}
    for comp in sorted(components, key=lambda c: -sum(sizes[o] for o in c)):
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


