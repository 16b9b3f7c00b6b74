"""Workgroups in native code on all cores: the JIT's DispatchRunner for the HAL.

Native workers walk the workgroup grid (`workers.py`): the calling thread and a pool of
native threads parked between dispatches, each with its own workgroup-local memory. Per
entry function, the runner measures both ways (all threads, the calling thread alone) and
keeps the faster: for small grids waking the pool costs more than the work.

Traps stay deterministic whatever the thread count: a failing worker stops the others
from claiming more work, and a claimed run is finished unless it fails itself; every index
below the first failure was claimed earlier and runs, so the lowest failing index, the one
a serial loop reports, is always among the failures recorded.
"""

from __future__ import annotations

import ctypes
import os
import time

from ..runtime import traps
from ..runtime.bytecode import describe_frame
from ..runtime.layout import TrapT
from ..runtime.native.hal import fpu
from ..runtime.native.hal.dispatch import Dispatch, SerialDispatchRunner
from . import workers

RUNS_PER_THREAD = 4  # a grid is claimed in about this many runs per thread (load balance)
SERIAL_MARGIN = 0.8  # the calling thread alone must be this much faster per workgroup to win
REPROBE = 32  # every this many runs of an entry, the way not chosen is measured again


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
        self._pool = None  # started on the first dispatch that uses it
        self._serial = SerialDispatchRunner()
        self._cost: dict[int, dict] = {}  # entry -> {threads used: s per workgroup, "runs": n}
        self.last_threads = 0  # how many threads the last dispatch ran on
        self._targets: dict[int, tuple] = {}  # id(entry) -> (entry, (fn, ctx) or None)
        self._flush = fpu.flush_bits()

    def pool(self) -> workers.NativePool | None:
        if self._pool is None and self.threads > 1 and workers.native().pooled:
            self._pool = workers.NativePool(self.threads - 1)
        return self._pool

    def split_loops_from(self, iterations: int) -> None:
        """Kernels split a loop nest across the idle pool from this many innermost iterations
        (workers.SPLIT_MIN_WORK by default; 0 splits every nest that qualifies: tests)."""
        pool = self.pool()
        if pool is not None:
            pool.state.split_min_work = iterations

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def _threads_for(self, fn: int, total: int) -> int:
        """All threads or the calling thread alone, whichever this entry's runs found faster
        per workgroup (waking the pool costs more than a small grid's work). The first run
        (cold caches) is not measured; then both ways are measured, the calling thread is
        kept only when clearly faster, and every REPROBE-th run measures the other way again."""
        n = min(self.threads, total)
        if n <= 1:
            return n
        seen = self._cost.setdefault(fn, {"runs": 0})
        seen["runs"] += 1
        if seen["runs"] == 1 or n not in seen:
            return n
        if 1 not in seen:
            return 1
        best = 1 if seen[1] < SERIAL_MARGIN * seen[n] else n
        if seen["runs"] % REPROBE == 0:
            return n if best == 1 else 1
        return best

    def _record(self, fn: int, seconds: float, threads: int, total: int) -> None:
        seen = self._cost.setdefault(fn, {"runs": 1})
        if seen["runs"] <= 1 and threads > 1:
            return  # the first run: caches and pages were cold
        per_workgroup = seconds / total
        old = seen.get(threads)
        seen[threads] = per_workgroup if old is None else 0.25 * old + 0.75 * per_workgroup

    def _native_target(self, entry) -> tuple[int, int] | None:
        """(fn, ctx) of a JIT-compiled entry the native loop may run, or None: an interpreted
        entry, or one whose module stores globals the workers would share. Asked once per entry."""
        cached = self._targets.get(id(entry))
        if cached is not None and cached[0] is entry:
            return cached[1]
        instance = getattr(entry, "instance", None)
        native = None
        if instance is not None and hasattr(instance.loaded.executable, "entries") and \
                entry.ordinal in instance.loaded.executable.entries and \
                not (self.threads > 1 and writes_globals(instance)):
            native = entry.native_entry()
        self._targets[id(entry)] = (entry, native)  # holding `entry` keeps its id unique
        return native

    def run(self, dispatch: Dispatch) -> None:
        target = self._native_target(dispatch.entry)
        if target is None:
            return self._serial.run(dispatch)
        fn, ctx = target
        cx, cy, cz = dispatch.workgroup_count
        total = cx * cy * cz
        if total == 0:
            return
        flush = self._flush
        n = self._threads_for(fn, total)
        pool = self.pool() if n > 1 else None
        n = n if pool is not None else 1
        chunk = max(1, total // (n * RUNS_PER_THREAD)) if n > 1 else total
        records = [TrapT() for _ in range(n)]
        consts, bindings, local = dispatch.constants.addr, dispatch.bindings.addr, dispatch.local_memory.addr
        start = time.perf_counter()
        shares = pool.run(fn, ctx, consts, bindings, (cx, cy, cz), n, chunk, flush,
                          local, dispatch.local_memory.length, [ctypes.addressof(r) for r in records]) \
            if pool is not None else None
        if shares is None:
            # One thread walks the grid; the idle pool is lent to the kernels' split loops.
            lender = self.pool() if self.threads > 1 else None
            records[0].pool = lender.lend(flush) if lender is not None else 0
            counter, stop, failed = ctypes.c_uint64(0), ctypes.c_int32(0), ctypes.c_uint64(0)
            try:
                status = workers.native().grid(
                    fn, ctx, local, consts, bindings, cx, cy, cz, ctypes.addressof(counter), total,
                    ctypes.addressof(stop), ctypes.addressof(records[0]), ctypes.addressof(failed), flush, chunk)
            finally:
                if records[0].pool:
                    lender.give_back()
            shares = [(status, failed.value)]
            n = 1
        failures = [(index, k) for k, (status, index) in enumerate(shares) if status]
        if not failures:
            self._record(fn, time.perf_counter() - start, n, total)
        self.last_threads = n
        if failures:
            _, k = min(failures)
            for j, (status, _index) in enumerate(shares):  # drop the other workers' parked exceptions
                if j != k and status:
                    traps.take_exception(records[j], describe_frame)
            raise traps.take_exception(records[k], describe_frame)


def writes_globals(instance) -> bool:
    """Whether the module's functions (other than __set_constants) store into globals."""
    cached = getattr(instance.loaded, "_writes_globals", None)
    if cached is None:
        m = instance.loaded.module
        setter = m.export("__set_constants")
        skip = setter.internal_ordinal if setter else -1
        cached = any(ins.op.family.startswith("global_store")
                     for vf in instance.loaded.verified.functions if vf.ordinal != skip
                     for ins in vf.instructions)
        instance.loaded._writes_globals = cached
    return cached
