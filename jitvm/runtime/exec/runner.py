"""Workgroups in native code on all cores: the JIT's DispatchRunner for the HAL.

Native workers walk the workgroup grid (`workers.py`): the calling thread and a pool of
native threads parked between dispatches, each with its own workgroup-local memory. A
dispatch runs as a native sequence of steps (`replay.py`): one step for a dispatch from
Python, a whole run of a command buffer's dispatches at once when the HAL prepares them.
Per entry function the sequence measures both ways (all threads, the calling thread alone)
and keeps the faster: for small grids waking the pool costs more than the work.

Traps stay deterministic whatever the thread count: a failing worker stops the others
from claiming more work, and a claimed run is finished unless it fails itself; every index
below the first failure was claimed earlier and runs, so the lowest failing index, the one
a serial loop reports, is always among the failures recorded.
"""

from __future__ import annotations

import ctypes
import os
import threading
import weakref

from ...frontend import isa
from ..native.layout import CostT, RunnerT
from ..vm import traps
from ..vm.bytecode import describe_frame
from ..vm.objects import VmBuffer
from . import fpu, replay, workers
from .dispatch import LOCAL_MEMORY_ALIGNMENT, Dispatch, PreparedDispatch, PreparedFill, SerialDispatchRunner
from .library import LibraryCall, LibraryDispatch, LibraryEntry, PreparedLibraryDispatch
from .nativecode import native

SPARE_SEQUENCES = 4  # one-step sequences kept for Python dispatches (one per concurrent caller)
_runners: "weakref.WeakSet[NativeDispatchRunner]" = weakref.WeakSet()


def forget_costs(fns) -> None:
    """Every runner measures entries `fns` afresh: their code changed (a tier swapped in)."""
    for runner in list(_runners):
        for fn in fns:
            cost = runner._costs.get(fn)
            if cost is not None:
                ctypes.memset(ctypes.addressof(cost), 0, ctypes.sizeof(cost))


def default_threads() -> int:
    env = os.environ.get("JITVM_THREADS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            pass
    return os.cpu_count() or 1


class NativeDispatchRunner:
    """Runs a dispatch's workgroups in native code on `threads` threads."""

    def __init__(self, threads: int | None = None):
        self.threads = threads or default_threads()
        self.state = RunnerT(warm=1)  # what native code reads: the pool and the knobs below
        self.address = ctypes.addressof(self.state)
        self.flush = fpu.flush_bits()
        self._pool = None  # started on the first dispatch that uses it
        self._pool_lock = threading.Lock()
        self._serial = SerialDispatchRunner()
        self._costs: dict[int, CostT] = {}  # entry fn -> its measured cost
        self._spare: list[replay.Sequence] = []
        self._targets: dict[int, tuple] = {}  # id(entry) -> (entry, (fn, ctx) or None)
        self.library_exports: dict[int, str] = {}  # address -> name of every library export run (traces name them)
        self._no_helpers = (None, None)
        _runners.add(self)

    force_threads = property(lambda self: self.state.force, lambda self, n: setattr(self.state, "force", n or 0),
                             doc="nonzero: every grid runs on this many threads (tests)")
    warm_pool = property(lambda self: bool(self.state.warm), lambda self, on: setattr(self.state, "warm", int(on)),
                         doc="sequences of several steps wake parked pool threads first")
    last_threads = property(lambda self: self.state.last_threads, doc="how many threads the last dispatch ran on")

    def pool(self) -> workers.NativePool | None:
        """The runner's pool, started once even when several threads make their first
        dispatch at the same time: a second pool would replace the first in `state.pool`
        while native code running on another thread still posts to it, and the first,
        collected, would free the memory that code waits on (a hang, seen in CI)."""
        if self._pool is None and self.threads > 1 and native().pooled:
            with self._pool_lock:
                if self._pool is None:
                    pool = workers.NativePool(self.threads - 1)
                    self.state.pool = ctypes.addressof(pool.state)
                    self._pool = pool
        return self._pool

    def split_loops_from(self, iterations: int) -> None:
        """Kernels split a loop nest across the idle pool from this many innermost iterations
        (workers.SPLIT_MIN_WORK by default; 0 splits every nest that qualifies: tests)."""
        pool = self.pool()
        if pool is not None:
            pool.state.split_min_work = iterations

    def close(self) -> None:
        if self._pool is not None:
            self.state.pool = None
            self._pool.close()
            self._pool = None

    # --- what sequences need ------------------------------------------------------------

    def cost_address(self, fn: int) -> int:
        cost = self._costs.get(fn)
        if cost is None:
            cost = self._costs.setdefault(fn, CostT())
        return ctypes.addressof(cost)

    def helper_locals(self, size: int):
        pool = self.pool()
        if pool is None:
            return self._no_helpers
        objs, data = pool.helper_locals(size)
        return ctypes.addressof(objs), ctypes.addressof(data)

    def _native_target(self, entry) -> tuple[int, int] | None:
        """(fn, ctx) of a JIT-compiled entry the native loop may run, or None: an interpreted
        entry, or one whose module stores globals the workers would share. Asked once per entry."""
        cached = self._targets.get(id(entry))
        if cached is not None and cached[0] is entry:
            return cached[1]
        instance = getattr(entry, "instance", None)
        native = None
        runs_natively = getattr(instance.loaded.executable, "runs_natively", None) if instance is not None else None
        if runs_natively is not None and runs_natively(entry.ordinal) and \
                not (self.threads > 1 and writes_globals(instance)):
            native = entry.native_entry()
        self._targets[id(entry)] = (entry, native)  # holding `entry` keeps its id unique
        return native

    # --- running --------------------------------------------------------------------------

    def run(self, dispatch: Dispatch) -> None:
        target = self._native_target(dispatch.entry)
        if target is None:
            return self._serial.run(dispatch)
        cx, cy, cz = dispatch.workgroup_count
        if cx * cy * cz == 0:
            return
        try:
            seq = self._spare.pop()  # one call: another thread may take the last one meanwhile
        except IndexError:
            seq = replay.Sequence(self, 1)
        try:
            seq.set_step(0, target, dispatch.constants.addr, dispatch.bindings.addr, dispatch.local_memory,
                         (cx, cy, cz))
            self.run_sequence(seq, None)
        finally:
            if len(self._spare) < SPARE_SEQUENCES:
                self._spare.append(seq)

    def run_library(self, dispatch: LibraryDispatch) -> None:
        """A library export's dispatch from Python (runtime.exec.library): one native step."""
        call = LibraryCall(dispatch.entry, dispatch.workgroup_count, dispatch.constants,
                           [length for _, length in dispatch.bindings])
        self.library_exports[dispatch.entry.function] = dispatch.entry.name
        if 0 in call.grid:
            return
        seq = replay.Sequence(self, 1)
        seq.set_library_step(0, call, library_local(dispatch.entry), [(-1, address, length)
                                                                      for address, length in dispatch.bindings])
        self.run_sequence(seq, None)

    def prepare(self, steps: list[PreparedDispatch | PreparedLibraryDispatch | PreparedFill]) -> replay.Sequence | None:
        """The dispatches and fills as one native sequence, or None if a dispatch is not native."""
        compile_together((d.entry, d.workgroup_count) for d in steps if isinstance(d, PreparedDispatch))
        targets = [self._native_target(d.entry) if isinstance(d, PreparedDispatch) else None for d in steps]
        if any(t is None for d, t in zip(steps, targets) if isinstance(d, PreparedDispatch)):
            return None
        seq = replay.Sequence(self, len(steps), keep=steps)
        for i, (d, target) in enumerate(zip(steps, targets)):
            if isinstance(d, PreparedFill):
                seq.set_fill(i, d.target, d.pattern, d.pattern_length)
            elif isinstance(d, PreparedLibraryDispatch):
                call = LibraryCall(d.entry, d.workgroup_count, d.constants, [n for _, _, n in d.bindings])
                self.library_exports[d.entry.function] = d.entry.name
                seq.set_library_step(i, call, library_local(d.entry), d.bindings)
            else:
                seq.set_step(i, target, d.constants.addr, d.bindings.addr, d.local_memory, d.workgroup_count,
                             d.views)
        return seq

    def run_sequence(self, seq: replay.Sequence, bases) -> None:
        """Runs `seq`'s steps with the pool held (or on this thread alone when it is busy):
        jv_run_sequence, which the HAL's native execution calls too."""
        self.pool()
        if native().run_sequence(self.address, seq.address, bases):
            raise failure(seq)


def compile_together(dispatches) -> None:
    """The entries of (entry, workgroup count) dispatches a lazily compiled executable has not
    compiled yet, compiled in one go (side by side on the compile pool) rather than one by one
    as the sequence meets them; with how many workgroups each runs per run of the sequence
    (which code is worth the full tier at once: lower.lazy). They compile in the background,
    in the order the sequence meets them, while it runs: a step whose kernel is not there
    yet waits in the kernel's stub for that kernel alone."""
    by_executable: dict[int, tuple] = {}
    for entry, count in dispatches:
        instance = getattr(entry, "instance", None)
        ensure = getattr(instance.loaded.executable, "ensure_compiled", None) if instance is not None else None
        if ensure is not None:
            workgroups = by_executable.setdefault(id(instance.loaded.executable), (ensure, {}))[1]
            workgroups[entry.ordinal] = workgroups.get(entry.ordinal, 0) + count[0] * count[1] * count[2]
    for ensure, workgroups in by_executable.values():
        ensure(list(workgroups), workgroups, ahead=True)


def failure(seq: replay.Sequence) -> BaseException:
    """The failing step's exception: the share holding the lowest failing workgroup, the one
    a serial loop reports (the other shares' parked exceptions are dropped)."""
    n = max(1, seq.struct.last_threads)
    failures = [(seq.failed[k], k) for k in range(n) if seq.statuses[k]]
    _, k = min(failures)
    for j in range(n):
        if j != k and seq.statuses[j]:
            traps.take_exception(seq.records[j], describe_frame)
        seq.statuses[j] = 0
    return traps.take_exception(seq.records[k], describe_frame)


def library_local(entry: LibraryEntry) -> VmBuffer:
    """A library step's workgroup-local memory (the calling thread's share): 64-byte aligned,
    as IREE's workers' is (the code may use aligned vector loads); zeroed before each run."""
    return VmBuffer.allocate(entry.local_memory_size, LOCAL_MEMORY_ALIGNMENT)


_shared: NativeDispatchRunner | None = None
_shared_lock = threading.Lock()


def shared_runner() -> NativeDispatchRunner:
    """The process's native runner on all threads, for library dispatches of hosts whose
    backend brings no native runner (the interpreter's VMVX runner is Python)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = NativeDispatchRunner()
    return _shared


def writes_globals(instance) -> bool:
    """Whether the module's functions (other than __set_constants) store into globals."""
    cached = getattr(instance.loaded, "_writes_globals", None)
    if cached is None:
        m = instance.loaded.module
        setter = m.export("__set_constants")
        skip = setter.internal_ordinal if setter else -1
        cached = any(ins.op.kind == isa.GLOBALS and ins.op.access.action == isa.STORE
                     for vf in instance.loaded.verified.functions if vf.ordinal != skip
                     for ins in vf.instructions)
        instance.loaded._writes_globals = cached
    return cached
