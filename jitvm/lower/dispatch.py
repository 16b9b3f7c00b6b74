"""Workgroups in native code on all cores: the JIT's DispatchRunner for the HAL.

A small native worker walks the workgroup grid: it claims runs of consecutive workgroup
indices from a shared atomic counter (in increasing order; a run rather than one index, so
neighbouring workgroups, which write neighbouring memory, stay on one core), builds the
VMVX entry arguments and calls the compiled entry function, with the CPU's flush-to-zero
mode on as IREE runs dispatches. Python starts one worker per thread, each with its own
workgroup-local memory, and waits with the GIL released. Per entry function, the runner
measures both ways (all threads, the calling thread alone) and keeps the faster: for small
grids waking the pool costs more than the work.

Traps stay deterministic whatever the thread count: a failing worker stops the others
from claiming more work, and a claimed run is finished unless it fails itself; every index
below the first failure was claimed earlier and runs, so the lowest failing index, the one
a serial loop reports, is always among the failures recorded.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import llvmlite.binding as llvm

from ..runtime import traps
from ..runtime.bytecode import describe_frame
from ..runtime.layout import TrapT
from ..runtime.objects import VmBuffer
from ..runtime.native.hal import fpu
from ..runtime.native.hal.dispatch import Dispatch, SerialDispatchRunner
from ..runtime.nativelib import initialize_llvm
from . import target as targets

_WORKER_IR = """
declare i64 @jv_fpu_get()
declare void @jv_fpu_set(i64)

define i32 @jv_dispatch_worker(ptr %fn, ptr %ctx, ptr %local, ptr %consts, ptr %bindings,
                               i32 %cx, i32 %cy, i32 %cz, ptr %next, i64 %total, ptr %stop,
                               ptr %trap, ptr %failed, i64 %flush_bits, i64 %chunk) {
entry:
  %args = alloca [12 x i64], align 8
  %results = alloca [1 x i64], align 8
  %saved = call i64 @jv_fpu_get()
  %ftz = or i64 %saved, %flush_bits
  call void @jv_fpu_set(i64 %ftz)
  %l = ptrtoint ptr %local to i64
  %c = ptrtoint ptr %consts to i64
  %b = ptrtoint ptr %bindings to i64
  store i64 %l, ptr %args
  %a1 = getelementptr i64, ptr %args, i64 1
  store i64 %c, ptr %a1
  %a2 = getelementptr i64, ptr %args, i64 2
  store i64 %b, ptr %a2
  %a6 = getelementptr i64, ptr %args, i64 6
  store i64 1, ptr %a6
  %a7 = getelementptr i64, ptr %args, i64 7
  store i64 1, ptr %a7
  %a8 = getelementptr i64, ptr %args, i64 8
  store i64 1, ptr %a8
  %cx64 = zext i32 %cx to i64
  %cy64 = zext i32 %cy to i64
  %cz64 = zext i32 %cz to i64
  %a9 = getelementptr i64, ptr %args, i64 9
  store i64 %cx64, ptr %a9
  %a10 = getelementptr i64, ptr %args, i64 10
  store i64 %cy64, ptr %a10
  %a11 = getelementptr i64, ptr %args, i64 11
  store i64 %cz64, ptr %a11
  %cxy = mul i64 %cx64, %cy64
  br label %claim
claim:
  %stopped = load atomic i32, ptr %stop acquire, align 4
  %halt = icmp ne i32 %stopped, 0
  br i1 %halt, label %done, label %take
take:
  %first = atomicrmw add ptr %next, i64 %chunk seq_cst
  %more = icmp ult i64 %first, %total
  br i1 %more, label %claimed, label %done
claimed:
  %end0 = add i64 %first, %chunk
  %short = icmp ult i64 %total, %end0
  %end = select i1 %short, i64 %total, i64 %end0
  br label %run
run:
  %i = phi i64 [ %first, %claimed ], [ %i1, %next_in_run ]
  %x = urem i64 %i, %cx64
  %xy = udiv i64 %i, %cx64
  %y = urem i64 %xy, %cy64
  %z = udiv i64 %i, %cxy
  %a3 = getelementptr i64, ptr %args, i64 3
  store i64 %x, ptr %a3
  %a4 = getelementptr i64, ptr %args, i64 4
  store i64 %y, ptr %a4
  %a5 = getelementptr i64, ptr %args, i64 5
  store i64 %z, ptr %a5
  %status = call i32 %fn(ptr %ctx, ptr %args, ptr %results, ptr %trap)
  %ok = icmp eq i32 %status, 0
  br i1 %ok, label %next_in_run, label %fail
next_in_run:
  %i1 = add i64 %i, 1
  %in_run = icmp ult i64 %i1, %end
  br i1 %in_run, label %run, label %claim
fail:
  store i64 %i, ptr %failed
  store atomic i32 1, ptr %stop release, align 4
  call void @jv_fpu_set(i64 %saved)
  ret i32 %status
done:
  call void @jv_fpu_set(i64 %saved)
  ret i32 0
}
"""

_WORKER = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
    ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p,
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64)
RUNS_PER_THREAD = 4  # a grid is claimed in about this many runs per thread (load balance)
SERIAL_MARGIN = 0.8  # the calling thread alone must be this much faster per workgroup to win
REPROBE = 32  # every this many runs of an entry, the way not chosen is measured again

_lock = threading.Lock()
_worker = None


def _compile_worker():
    global _worker
    with _lock:
        if _worker is None:
            initialize_llvm()
            fpu.register_symbols()
            mod = llvm.parse_assembly(_WORKER_IR)
            mod.triple = targets.host().triple
            engine = llvm.create_mcjit_compiler(mod, targets.machine.__wrapped__(targets.host(), 2))  # owned
            engine.finalize_object()
            _worker = (_WORKER(engine.get_function_address("jv_dispatch_worker")), engine)
    return _worker[0]


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
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="jitvm-dispatch") \
            if self.threads > 1 else None
        self._serial = SerialDispatchRunner()
        self._cost: dict[int, dict] = {}  # entry -> {threads used: s per workgroup, "runs": n}
        self.last_threads = 0  # how many threads the last dispatch ran on

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

    def run(self, dispatch: Dispatch) -> None:
        entry = dispatch.entry
        instance = getattr(entry, "instance", None)
        if instance is None or not hasattr(instance.loaded.executable, "entries") or \
                entry.ordinal not in instance.loaded.executable.entries or \
                (self.threads > 1 and writes_globals(instance)):
            return self._serial.run(dispatch)  # interpreted entry, or state the workers would share
        fn, ctx = entry.native_entry()
        cx, cy, cz = dispatch.workgroup_count
        total = cx * cy * cz
        if total == 0:
            return
        worker = _compile_worker()
        flush = fpu.flush_bits()
        counter = ctypes.c_uint64(0)
        stop = ctypes.c_int32(0)
        n = self._threads_for(fn, total)
        chunk = max(1, total // (n * RUNS_PER_THREAD)) if n > 1 else total
        records = [TrapT() for _ in range(n)]
        failed = [ctypes.c_uint64(0) for _ in range(n)]
        size = dispatch.local_memory.length
        local = [dispatch.local_memory] + [VmBuffer.allocate(size) for _ in range(n - 1)]  # one per thread

        def work(k: int) -> int:
            return worker(fn, ctx, local[k].addr, dispatch.constants.addr, dispatch.bindings.addr,
                          cx, cy, cz, ctypes.addressof(counter), total, ctypes.addressof(stop),
                          ctypes.addressof(records[k]), ctypes.addressof(failed[k]), flush, chunk)

        start = time.perf_counter()
        if n <= 1 or self._pool is None:
            statuses = [work(0)]
        else:
            statuses = list(self._pool.map(work, range(n)))
        failures = [(failed[k].value, k) for k, st in enumerate(statuses) if st]
        if not failures:
            self._record(fn, time.perf_counter() - start, n, total)
        self.last_threads = n
        if failures:
            _, k = min(failures)
            for j in range(len(statuses)):  # drop the other workers' parked exceptions
                if j != k and statuses[j]:
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
