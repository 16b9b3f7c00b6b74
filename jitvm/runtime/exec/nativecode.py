"""The executor's native code, rendered and compiled once per process into one module.

Its parts call each other's internal functions, so they are one text: the grid walker
(grid.ll), the pool's threads (pool.ll, on hosts with futexes; serial.ll elsewhere: split
loops run on the calling thread), the sequence runner and its thread policy (replay.ll,
fill.ll), llvm-cpu library exports as workgroups (library.ll), and, when asked for, the workgroup trace (trace.ll). The values those templates
are rendered with are here; runtime.exec.workers (the pool) and runtime.exec.replay (the
sequences and their policy) describe what the code does and drive it from Python.
"""

from __future__ import annotations

import ctypes
import threading

from ...errors import STATUS_CODES
from ..native import engine, template
from ..native import target as targets
from . import fpu, trace
from .library import LIBRARY_FAILED
from .dispatch_args import VIEW_REFS

# futex(2) through syscall(2): the system call number per host architecture, and the pause
# hint a spinning core gives its sibling (declaration, call).
SYS_FUTEX = {"x86_64": 202, "aarch64": 98}
PAUSE = {"x86_64": ("declare void @llvm.x86.sse2.pause()", "call void @llvm.x86.sse2.pause()"),
         "aarch64": ("declare void @llvm.aarch64.hint(i32)", "call void @llvm.aarch64.hint(i32 1)")}
FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE = 128, 129
GATE_CLOSED = 1 << 30  # the gate word's flag; below it, how many threads are inside
RUNS_PER_SHARE = 4  # a split loop is claimed in about this many chunks per thread

# The thread policy (runtime.exec.replay describes it).
RUNS_PER_THREAD = 4  # a grid is claimed in about this many runs per thread (load balance) ...
RUN_S = 100e-6  # ... or in runs about this long on one thread, if shorter
PARALLEL_MARGIN = 1.15  # all threads must be this much faster per workgroup than one to win
SMALL_GRID_S = 50e-6  # grids measured below this on one thread stay there, never probed
REPROBE = 32  # runs of an entry before the way not chosen is measured again ...
REPROBE_MAX = 1024  # ... an interval doubling up to this while the choice holds

_POOL_THREAD = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32)
_POOL_SHUTDOWN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_RUN_STEPS = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_HOLD = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
_RELEASE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_CHOOSE = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64)
_RECORD = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint64)


def ir_text(pool_arch: str | None, traced: bool) -> str:
    """The module's IR: with the pool for `pool_arch` (an architecture of SYS_FUTEX) or
    without one (None), recording a trace or not."""
    kinds = {"traced": traced, "TRACE_SPLIT": trace.SPLIT}
    parts = [template.render(__package__, "grid.ll", TRACE_GRID=trace.GRID, **kinds)]
    if pool_arch is None:
        parts.append(template.render(__package__, "serial.ll"))
    else:
        declaration, pause = PAUSE[pool_arch]
        parts.append(template.render(
            __package__, "pool.ll", SYS_futex=SYS_FUTEX[pool_arch], pause_declaration=declaration, pause=pause,
            FUTEX_WAIT_PRIVATE=FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE=FUTEX_WAKE_PRIVATE,
            GATE_CLOSED=GATE_CLOSED, GATE_LAST=GATE_CLOSED + 1,  # the gate before the last thread inside leaves
            RUNS_PER_SHARE=RUNS_PER_SHARE, **kinds))
    fills = "".join(template.render(__package__, "fill.ll", width=w, bits=8 * w, wide=w == 8) for w in (2, 4, 8))
    parts.append(template.render(
        __package__, "replay.ll", fill_loops=fills, RUNS_PER_THREAD=RUNS_PER_THREAD, PARALLEL_MARGIN=f"{PARALLEL_MARGIN:e}",
        SMALL_GRID_S=f"{SMALL_GRID_S:e}", RUN_S=f"{RUN_S:e}",
        REPROBE=REPROBE, REPROBE_MAX=REPROBE_MAX, VIEW_REFS=VIEW_REFS))
    parts.append(template.render(__package__, "library.ll", S_INTERNAL=STATUS_CODES["INTERNAL"],
                                 K_LIBRARY_FAILED=LIBRARY_FAILED.code))
    if traced:
        parts.append(trace.ir_text())
    return "".join(parts)


class NativeCode:
    """The compiled functions."""

    def __init__(self):
        fpu.register_symbols()
        engine.provide(engine.libc(("clock_gettime", "syscall", "pthread_self", "sched_getcpu", "sched_yield")))
        arch = targets.host().arch
        self.pooled = arch in SYS_FUTEX
        traced = trace.requested()
        self.code = engine.jit_module(ir_text(arch if self.pooled else None, traced),
                                      export=("jv_parallel_for",  # called by split loops
                                              "jv_run_sequence"))  # and by the HAL's native execution
        self.run_steps = self.code.function("jv_run_steps", _RUN_STEPS)
        self.library_workgroup = self.code.address("jv_library_workgroup")  # runtime.exec.library
        self.library_import_thunk = self.code.address("jv_library_import_thunk")
        self.run_sequence = self.code.function("jv_run_sequence", _RUN_STEPS)
        self.try_hold = self.code.function("jv_pool_try_hold", _HOLD)
        self.release = self.code.function("jv_pool_release", _RELEASE)
        self.choose_threads = self.code.function("jv_choose_threads", _CHOOSE)
        self.record_cost = self.code.function("jv_record_cost", _RECORD)
        self.trace = trace.WorkgroupTrace(self.code, trace.capacity()) if traced else None
        if self.pooled:
            self.thread = self.code.function("jv_pool_thread", _POOL_THREAD)
            self.shutdown = self.code.function("jv_pool_shutdown", _POOL_SHUTDOWN)


_lock = threading.Lock()
_native: NativeCode | None = None


def native() -> NativeCode:
    """The process's executor code, compiled on first use."""
    global _native
    with _lock:
        if _native is None:
            _native = NativeCode()
    return _native


def workgroup_trace() -> trace.WorkgroupTrace | None:
    """The process's workgroup records (runtime.exec.trace), or None unless JITVM_TRACE_WORKGROUPS
    was set before the first native dispatch."""
    return native().trace
