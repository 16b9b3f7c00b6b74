"""Lazily compiled modules in tiers: code is made when a function is first called.

A `LazyExecutable` compiles nothing when a module loads. Each function it may compile has a
stable native entry (entries.ll): a jump through the function's cell. The cell first holds
a stub that compiles the function's unit (lower.units: the functions calling each other)
and then calls it; compiled code replaces the stub, so later calls never enter Python.
Run-once code (`__init` and what only it calls) runs in the interpreter, never compiled.
A VMVX kernel is compiled when its executable's entry is first dispatched: the dispatch
runner asks (`runs_natively`, `ensure_compiled(ahead=True)` for a command buffer's kernels
at once). Those compile side by side on the compile pool in the background (`CompileAhead`),
in the order the command buffer's sequence meets them, each installed as soon as its code
arrives, while the sequence already runs: a step whose kernel is not there yet waits in the
kernel's stub for that kernel alone (ResNet-50-style 224 from an empty store on 2 cores, load
3: first result 4.22 -> 3.87 s; before, the compile left a core idle part of the time and
the run waited for the last kernel). What the store has is installed before the sequence
starts; a compile error is raised where a call waits for that kernel.

Tiers (`tier=`): "full" compiles with today's pipeline (the first call waits for it);
"baseline" quickly (loop nests guarded but not jammed, lower.llvm.compiler.BASELINE's few
passes, fast instruction selection; slower code); "auto" starts with the baseline (a kernel
whose first call would run long on it: a jammed or the middle tier, `FIRST_TIERS`) and, for
functions called again (the counting entry counts calls natively), compiles the unit with
the full pipeline in the background (`TIER_UP`: lowered on its thread, optimised on compile
worker processes, so this process's LLVM stays free), then swaps the cell between calls. Both tiers are kept in the code store; a later process
takes the full code when it is there.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import queue
import sys
import threading
import time
import warnings
import weakref

from ..runtime.exec import runner as dispatch_runner
from ..runtime.native import cache as store, engine, memory, template
from ..runtime.vm import abi, traps
from ..runtime.vm.bytecode import instance_of_state
from . import deferred, handoff
from .executable import STATS, JitExecutable, _Progress
from .llvm import compile_pool, compiler, loader
from .unit_build import Unit, UnitBuilder
from . import work as units_work
from .units import call_components, run_once

TIERS = ("auto", "baseline", "full")
# The tiers code starts on under "auto", until its tier-up, from the quickest to compile.
QUICK = ("baseline", "jammed", "jammed_slp", "middle")
# A function called this often gets the full tier under "auto". A kernel is called once per
# workgroup: one whose workgroups in a call are known (a command buffer's) is hot once called
# after them, in a second call. So no tier-up takes the cores from the first call (on 2 cores,
# ResNet-50-style 224 cold, its parent's CPU to the first result 6.7 -> 6.1 s, load 6): a
# one-shot process hands it to a detached worker at exit (lower.handoff) instead.
HOT_CALLS = 2
POLL_SECONDS = 0.05  # how often the tier-up looks at the call counts
# A kernel's first tier under "auto", when its dispatches in the call are known: the quick
# tier costing least for them: compiling it (CPU seconds, lowering and LLVM: a kernel's, and
# more per flat loop, units_work.flat_loops) plus running its buffer element accesses
# (units_work's estimate) on its code (CPU seconds per access). Fitted by bench.tier_costs on
# every kernel of ResNet-50-style 64 (1.35 G accesses a call) and 224 (16 G) and
# EfficientNet-Lite0 (2.0 G), each compiled and run (one thread) at each tier on a 2-core
# AMD EPYC (Zen 4), load 3: compile by least squares over the kernels (a kernel + a flat
# loop), run time summed over them per access: baseline (the baseline's passes, no jam)
# 0.038 + 0.020 s, 0.89 ns an access; jammed (the same passes on a lowering jammed a few
# iterations wide, lower.loops.jam.NARROW_FACTOR) 0.055 + 0.018 s, 0.23 ns; jammed_slp (that
# lowering through O1 with the SLP vectoriser) 0.109 + 0.056 s, 0.061 ns; middle (the full
# tier's lowering at 256-bit blocking through O1 with SLP, compiler.MIDDLE) 0.22 + 0.11 s,
# 0.012 ns. Compile + run summed over the kernels (CPU s) at this table's choice against the
# best tier per kernel: 1.87 / 1.83 (ResNet 64), 4.57 / 4.35 (224), 3.37 / 3.28
# (EfficientNet); with the constants fitted before checked copies were deferred (lower.deferred)
# 2.18 / 2.15, 4.55 / 4.49, 3.36 / 3.26 in another run (the sums move some 15% between runs at
# load 3-4; the choice stays within 5% of the best). The three-tier table fitted on an Intel
# host chose 2.69, 5.92, 5.19 here before, against a best of 2.51, 5.15, 3.93. So kernels of
# more than some 25 M accesses start jammed, of more than some 0.3 G jammed and vectorised by
# SLP, of more than some 2 G on the middle tier.
FIRST_TIERS = {"baseline": (0.038, 0.020, 0.89e-9), "jammed": (0.055, 0.018, 0.23e-9),
               "jammed_slp": (0.109, 0.056, 0.061e-9), "middle": (0.22, 0.11, 0.012e-9)}


def first_tier(accesses: int, flat_loops: int = 0) -> str:
    """The quick tier costing least for a kernel making `accesses` in a call (`FIRST_TIERS`)."""
    def cost(tier):
        compile_s, per_flat_loop, per_access = FIRST_TIERS[tier]
        return compile_s + flat_loops * per_flat_loop + accesses * per_access
    return min(FIRST_TIERS, key=cost)


def entries_ir(prefix: str, count: int) -> str:
    """The entry module of `count` functions: cells, counts and the two entries of each."""
    parts = [template.render(__package__, "entries.ll", prefix=prefix, count=count)]
    parts += [template.render(__package__, "entry.ll", prefix=prefix, count=count, index=i) for i in range(count)]
    return "\n".join(parts)


class LazyExecutable(JitExecutable):
    def __init__(self, backend, loaded, tier: str, call_pool=None):
        self.backend = backend
        self.loaded = loaded
        self.tier = tier
        self.call_pool = call_pool
        verified = loaded.verified
        n = len(verified.functions)
        self.digest = hashlib.sha256(loaded.module.archive.flatbuffer).hexdigest()
        self.builder = UnitBuilder(verified, self.digest, backend.target, lambda: backend.options(loaded),
                                   backend.use_cache, backend.loop_steps, lambda: backend.known_options(loaded),
                                   lambda: backend.options(loaded, probe=False))
        self.prefix = self.builder.prefix
        self.units = [Unit(i, c) for i, c in enumerate(call_components(verified))]
        self.unit_of = {o: u for u in self.units for o in u.ordinals}
        self.interpreted = run_once(verified)
        self.fallbacks = {o: None for o in self.interpreted}  # JitExecutable runs these in the interpreter
        self.cache_interpreter_code = backend.use_cache
        self._interp = None
        self._ready: set[int] = set()
        self._lock = threading.Lock()
        self._compile_lock = threading.Lock()
        self._modules: list[engine.JitModule] = []  # every tier's code, kept while calls may be in it
        self._code: dict[int, object] = {}  # ordinal -> ctypes function of its current code
        self._per_call: dict[int, int] = {}  # kernel ordinal -> its workgroups in a call, when known
        self._ahead: dict[Unit, _Batch] = {}  # units compiling in the background (ensure_compiled(ahead=True))
        if tier != "full":
            _prestart_pool(self)
        native = [o for o in range(n) if o not in self.interpreted]
        self.entries: dict[int, int] = {}
        self.fns = {}
        if native:
            # jumps through cells: fast instruction selection emits the same code as O2, 3-4x sooner
            code = engine.jit_module(entries_ir(self.prefix, n), opt=0)
            self._modules.append(code)
            self.cells = (ctypes.c_void_p * n).from_address(code.global_address(f"{self.prefix}_cells"))
            self.baseline = (ctypes.c_void_p * n).from_address(code.global_address(f"{self.prefix}_baseline"))
            self.counts = (ctypes.c_uint64 * n).from_address(code.global_address(f"{self.prefix}_counts"))
            self.counted = {o: code.address(f"{self.prefix}_counted{o}") for o in native}
            self.entries = {o: code.address(f"{self.prefix}_entry{o}") for o in native}
            self.fns = {o: abi.NATIVE_FN(a) for o, a in self.entries.items()}
            self._stubs = {o: abi.NATIVE_FN(self._stub(o)) for o in native}
            for o in native:
                self.cells[o] = ctypes.cast(self._stubs[o], ctypes.c_void_p).value

    # --- what callers see -------------------------------------------------------------------

    def runs_natively(self, ordinal: int) -> bool:
        if ordinal not in self.entries:
            return False
        if self.unit_of[ordinal] not in self._ahead:  # else its stub waits for it (and, should
            self.ensure_compiled([ordinal])          # the lowering decline it, calls the interpreter)
        return ordinal not in self.fallbacks

    def call(self, instance, ordinal: int, args) -> list:
        if ordinal in self.entries:
            self.ensure_compiled([ordinal])  # here rather than in the stub: errors raise as they are
        return super().call(instance, ordinal, args)

    def compile_stats(self) -> dict:
        tiers = [self.unit_of[o].tier for o in self.entries]
        late = sum(1 for o in self.fallbacks if o not in self.interpreted)
        return {"functions": len(self.loaded.verified.functions),
                "compiled": sum(t is not None for t in tiers) - late,
                "interpreted": len(self.fallbacks),
                "uncompiled": sum(t is None for t in tiers),
                **{quick: sum(t == quick for t in tiers) for quick in QUICK},
                "full": sum(t == "full" for t in tiers) - late}

    def _stub(self, ordinal: int):
        """The first call's way in from native code: compile, then run what the cell holds now."""
        def stub(ctx, args, results, trap):
            try:
                self.ensure_compiled([ordinal])
                if ordinal in self._code:  # through the entry, which jumps to the code now (and counts it)
                    fn = self.fns[ordinal]
                else:  # the lowering declined it: the interpreter runs it
                    address, ictx = self.interpreter.native_entry(instance_of_state(ctx), ordinal)
                    fn, ctx = abi.NATIVE_FN(address), ictx
                return fn(ctx, args, results, trap)
            except BaseException as e:  # noqa: BLE001 - carried to the native caller
                return traps.park_exception(trap, e)
        return stub

    # --- compiling ------------------------------------------------------------------------

    def ensure_compiled(self, ordinals, workgroups: dict | None = None, ahead: bool = False) -> None:
        """Compiles the units of `ordinals` not compiled yet, together (on the compile pool).
        `workgroups`: how many workgroups each kernel runs per call (a sequence's dispatches),
        when known; under "auto", a kernel whose calls would run long on baseline code starts
        on a faster quick tier (`first_tier`). `ahead`: returns once what the store has is
        installed and compiles the rest in the background, in the order of `ordinals` (a
        sequence's, which meanwhile runs: `_build_ahead`); otherwise waits for units a
        background batch compiles, and raises its error."""
        units = list(dict.fromkeys(self.unit_of[o] for o in ordinals if o in self.entries))
        if all(u.tier is not None for u in units):
            return
        if not ahead:
            self._await(units)
        todo = [u for u in units if u.tier is None]
        if todo:
            with self._compile_lock:
                todo = [u for u in todo if u.tier is None and u not in self._ahead]
                if todo:
                    self._compile(todo if ahead else sorted(todo, key=lambda u: u.index), workgroups, ahead)
            if not ahead:
                self._await(units)  # those a background batch took meanwhile
        if self.tier == "auto" and any(u.tier in QUICK for u in todo):
            TIER_UP.watch(self)

    def _await(self, units) -> None:
        """Waits for those of `units` a background batch compiles (without the GIL); raises
        the batch's error for one it could not install."""
        for unit in units:
            batch = self._ahead.get(unit)
            if batch is not None:
                batch.ready[unit].wait()
                if unit.tier is None and batch.error is not None:
                    raise batch.error

    def options(self, unit: Unit, tier: str) -> dict:
        return self.builder.options(unit, tier)

    def _lower(self, unit: Unit, options: dict) -> tuple[str, dict]:
        return self.builder.lower(unit, options)

    def _compile(self, units: list[Unit], workgroups: dict | None = None, ahead: bool = False) -> None:
        first = "full" if self.tier == "full" else "baseline"
        found, missing, promote = [], [], []
        # a tier-up's code first; but where its key needs the vector math probe, none was
        # stored with this store (the probe's answer would be there): the baseline needs none
        tiers = ("full", first) if first == "full" or self.builder.known_full() is not None else (first,)
        for unit in units:
            hit = tier = None
            for tier in dict.fromkeys(tiers) if self.backend.use_cache else ():
                hit = store.load(self.builder.key(unit, self.options(unit, tier)))
                if hit is not None:
                    break
            if hit is None:
                missing.append(unit)
                continue
            if tier == "baseline" and self.tier == "auto" and not self.builder.one_tier(unit):
                # an earlier process ran this code and ended before its tier-up (a one-shot
                # run does): with detached tier-ups (lower.handoff) this one runs it now and
                # tiers it up in the background at once; without, it compiles the full tier
                # now, so later runs start on it
                if not handoff.enabled():
                    promote.append(unit)
                    continue
                unit.hot = True
            STATS["cache_hits"] += 1
            found.append((unit, tier, hit[0], hit[1]))
        if workgroups:
            self._per_call.update((o, n) for u in units for o in u.ordinals if (n := workgroups.get(o)))
        chosen = [(u, first) for u in missing]
        if first == "baseline" and self.tier == "auto" and workgroups:
            chosen = [(u, self._first_tier(u, workgroups)) for u in missing]
        tier_of = dict([(u, "full") for u in promote] + chosen)
        jobs = [(u, tier_of[u]) for u in units if u in tier_of]  # in the order asked
        if ahead and jobs:
            self._install(found)
            batch = _Batch([u for u, _tier in jobs])
            self._ahead.update((u, batch) for u in batch.ready)
            AHEAD.submit(self, batch, jobs)
            return
        progress = self._progress(jobs)
        try:
            # one pool for every tier, the long jobs first (QUICK runs from quickest to compile)
            order = {t: i for i, t in enumerate(("full", *reversed(QUICK)))}
            found.extend(self.builder.build_tiers(sorted(jobs, key=lambda job: order[job[1]])))
        finally:
            if progress:
                progress.done()
        self._install(found)

    def _progress(self, jobs) -> _Progress | None:
        """The progress line of compiling `jobs` (a call waits for them; a tier-up says nothing)."""
        if not jobs or not self.backend.progress:
            return None
        return _Progress(f"{self.loaded.name} ({sum(len(u.ordinals) for u, _tier in jobs)} functions)")

    def _build_ahead(self, batch: "_Batch", jobs: list[tuple[Unit, str]]) -> None:
        """Compiles a background batch (`ensure_compiled(ahead=True)`) in its order, on the
        compile pool, installing each unit as its code arrives and waking whoever waits
        for it (the stub of a dispatch the sequence reached); an error goes to each waiter
        of a unit left uncompiled, and such units compile afresh when next wanted."""
        progress = self._progress(jobs)

        def settle(unit: Unit) -> None:
            batch.settle(self._ahead, unit)
            if progress and batch.settled():  # said now: the waiting call may end the process
                progress.done()

        def arrived(built) -> None:
            self._install([built])
            if self.tier == "auto" and built[0].tier in QUICK:
                # watched before the unit is settled: the call it ends may end the process,
                # whose exit hands the watched units to a detached tier-up (lower.handoff)
                TIER_UP.watch(self)
            settle(built[0])

        try:
            with self._compile_lock:
                self.builder.build_tiers(jobs, arrived=arrived)
        except BaseException as e:  # noqa: BLE001 - raised where a call waits for the unit
            batch.error = e
        finally:
            for unit in batch.ready:
                settle(unit)

    def _first_tier(self, unit: Unit, workgroups: dict) -> str:
        """The quick tier for a call's dispatches of `unit` (`first_tier`; loop-free code:
        the baseline, the only one it has)."""
        if not self.builder._loops(unit):
            return "baseline"
        functions = [self.loaded.verified.functions[o] for o in unit.ordinals]
        accesses = sum(workgroups.get(vf.ordinal, 0) * units_work.accesses_per_workgroup(vf) for vf in functions)
        return first_tier(accesses, sum(units_work.flat_loops(vf) for vf in functions))

    def _install(self, built) -> None:
        """Links the units' code into this process and points their cells at it."""
        if not built:
            return
        if any(meta.get("deferred") for _unit, _tier, _objects, meta in built):
            deferred.stub_address()  # what their cells hold until a guard fails
        code = loader.load([obj for _unit, _tier, objects, _meta in built for obj in objects])
        self._modules.append(code)
        for unit, tier, _objects, meta in built:
            deferred.register(self, code, meta.get("deferred", ()))
            for group in meta["groups"]:
                self._fill_type_table(group["key"], code)
                unit.symbols = {int(o): s for o, s in group["symbols"].items()}
            for ordinal, name, op, reason in meta["fallbacks"]:
                if ordinal not in self.fallbacks:
                    self.fallbacks[ordinal] = (ordinal, name, op, reason)
                    STATS["fallback_functions"] += 1
                    warnings.warn(f"jitvm: {self.loaded.name}.{name} runs in the interpreter: cannot lower {op} "
                                  f"({reason})", RuntimeWarning, stacklevel=4)
            if tier == "baseline" and self.builder.one_tier(unit):
                tier = "full"  # loop-free code in a loop-free module: one tier only
            swap = self.tier == "auto" and tier in QUICK
            for ordinal, symbol in unit.symbols.items():
                address = code.address(symbol)
                self._code[ordinal] = abi.NATIVE_FN(address)
                if swap:  # quick code through the counting entry, until the tier-up
                    self.baseline[ordinal] = address
                    self.cells[ordinal] = self.counted[ordinal]
                else:
                    self.cells[ordinal] = address
            if unit.tier in QUICK and tier == "full":
                dispatch_runner.forget_costs([self.entries[o] for o in unit.symbols])
                STATS["tier_ups"] += 1
            unit.tier = tier

    # --- tiering up -----------------------------------------------------------------------

    def hot_units(self) -> list[Unit]:
        if self.tier != "auto":
            return []
        return [u for u in self.units if u.tier in QUICK and
                (u.hot or any(self.counts[o] >= max(HOT_CALLS, self._per_call.get(o, 0) + 1) for o in u.ordinals))]

    def baseline_units(self) -> list[Unit]:
        """Units running quick code (baseline or middle), waiting for their full tier (what
        lower.handoff passes on when the process ends first)."""
        return [u for u in self.units if u.tier in QUICK] if self.tier == "auto" else []

    def pending(self) -> bool:
        return self.tier == "auto" and any(u.tier in QUICK for u in self.units)

    def tier_up(self, units: list[Unit]) -> None:
        """Compiles `units` with the full pipeline on worker processes, then swaps them in."""
        built = self.builder.build(units, "full", in_workers=True)
        with self._compile_lock:
            self._install(built)


class _Batch:
    """Units compiling in the background (LazyExecutable._build_ahead): each unit's event is
    set once its code is installed, or once the batch ended without it (then `error` says why)."""

    def __init__(self, units: list[Unit]):
        self.ready = {u: threading.Event() for u in units}
        self.error: BaseException | None = None

    def settled(self) -> bool:
        return all(event.is_set() for event in self.ready.values())

    def settle(self, ahead: dict, unit: Unit) -> None:
        """`unit` is done with (installed, or never will be by this batch): its waiters go on."""
        self.ready[unit].set()
        if ahead.get(unit) is self:
            del ahead[unit]


class CompileAhead:
    """The thread compiling command buffers' kernels while their sequences run: one batch
    at a time, in the order asked (the compile pool takes every core)."""

    def __init__(self):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, executable: LazyExecutable, batch: _Batch, jobs: list) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="jitvm-compile-ahead", daemon=True)
                self._thread.start()
            self._queue.put((executable, batch, jobs))

    def _run(self) -> None:
        while True:
            executable, batch, jobs = self._queue.get()
            executable._build_ahead(batch, jobs)
            del executable, batch, jobs  # nothing held while idle


AHEAD = CompileAhead()
_prestarted: list = []


def _prestart_pool(executable: LazyExecutable) -> None:
    """The compile workers of the first module with several baseline units to compile
    together (an executable's kernels) start while it loads: once per process, and not
    when the store has code for them all (a warm load: the workers would only take the
    cores from it)."""
    if _prestarted or compile_pool.processes() < 2:
        return
    looped = [u for u in executable.units if u.ordinals[0] not in executable.interpreted and
              executable.builder._loops(u)]
    if len(looped) < 2 or (executable.backend.use_cache and all(_stored(executable, u) for u in looped)):
        return
    _prestarted.append(True)
    compile_pool.prestart(compile_pool.processes(), executable.backend.target)


def _stored(executable: LazyExecutable, unit) -> bool:
    """Whether the store has code of `unit` at a tier a first call would take (lazy._compile)."""
    full = executable.builder.known_full()  # None: its key would need the vector math probe
    tiers = [executable.options(unit, "baseline")] + ([full] if full is not None else [])
    return any(store.contains(executable.builder.key(unit, options)) for options in tiers)


class TierUp:
    """The background thread that recompiles hot baseline code with the full pipeline."""

    def __init__(self):
        self._watched: "weakref.WeakSet[LazyExecutable]" = weakref.WeakSet()
        self._wake = threading.Condition()
        self._thread = None
        self.busy = False

    def watch(self, executable: LazyExecutable) -> None:
        with self._wake:
            self._watched.add(executable)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="jitvm-tier-up", daemon=True)
                self._thread.start()
                handoff.at_exit(self.executables)
            self._wake.notify_all()

    def _run(self) -> None:
        _lower_priority()
        while True:
            with self._wake:
                while not self._watched:
                    self._wake.wait()
                self.busy = True
            worked = False
            for executable in list(self._watched):
                hot = executable.hot_units()
                if hot:
                    worked = True
                    try:
                        executable.tier_up(hot)
                    except Exception as e:  # noqa: BLE001 - the baseline code stays
                        for unit in hot:
                            unit.tier = "failed"
                        warnings.warn(f"jitvm: tier-up of {executable.loaded.name} failed ({e}); "
                                      f"its baseline code stays", RuntimeWarning)
                if not executable.pending():
                    self._watched.discard(executable)
            if worked:
                memory.release()  # the end of a batch: LLVM's pages go back until the next one
            with self._wake:
                self.busy = False
                self._wake.notify_all()
                if not worked:
                    self._wake.wait(POLL_SECONDS)

    def executables(self) -> list[LazyExecutable]:
        return list(self._watched)

    def idle(self) -> bool:
        return not self.busy and not any(e.hot_units() for e in list(self._watched))

    def wait(self, timeout: float | None = None, progress: bool = True) -> bool:
        """Waits until no hot function waits for its full tier; False on timeout. Says so
        on stderr once waiting has taken more than a second (someone is waiting)."""
        start = time.perf_counter()
        shown = False
        while not self.idle():
            elapsed = time.perf_counter() - start
            if timeout is not None and elapsed > timeout:
                return False
            if progress and not shown and elapsed > 1.0:
                sys.stderr.write("jitvm: waiting for optimised code (tier-up) ...\n")
                shown = True
            with self._wake:
                self._wake.wait(POLL_SECONDS)
        if shown:
            sys.stderr.write(f"jitvm: optimised code ready after {time.perf_counter() - start:.1f} s\n")
        return True


def _lower_priority() -> None:
    """This thread (Linux: niceness is per thread) yields the cores to calls' threads."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + compiler.BACKGROUND_NICE)
    except (AttributeError, OSError):
        pass


TIER_UP = TierUp()


def wait_for_tier_up(timeout: float | None = None) -> bool:
    """Blocks until hot functions of every lazily compiled module run their full tier."""
    return TIER_UP.wait(timeout)
