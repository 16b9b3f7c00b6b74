"""Where the threads' time goes: an opt-in record of every workgroup and split-loop chunk.

With JITVM_TRACE_WORKGROUPS set when the process first runs a dispatch natively, the
native grid walker and the split-loop shares (grid.ll, pool.ll) record, per kernel call, a
TraceRecord (runtime.native.layout): the thread, whether it was a workgroup or a chunk of a
split loop, its index (the workgroup's linear index, or the chunk's first iteration), start
and end times (CLOCK_MONOTONIC ns, the clock of time.perf_counter_ns) and the function
called (for an llvm-cpu library step, the export's own address, not the adapter's that
every library workgroup goes through; the runner's library_exports names them). Without it the worker code is rendered without the trace (`${if traced}` lines),
so runs that do not ask pay nothing. bench/thread_trace.py reads the records to tell
scheduling losses (idle threads, late starts, serial host code) from kernels that run
slower when both cores are busy.

The value is the record capacity (1 means the default); records beyond it are counted
and dropped.
"""

from __future__ import annotations

import ctypes
import os

import numpy as np

from ..native import layout, template

ENV = "JITVM_TRACE_WORKGROUPS"
DEFAULT_CAPACITY = 1 << 20
GRID, SPLIT = 0, 1  # record kinds
RECORD = np.dtype(layout.TraceRecordT)


def requested() -> bool:
    return bool(os.environ.get(ENV))


def ir_text() -> str:
    """The record buffer and @trace_record, which the traced worker code calls."""
    return template.render(__package__, "trace.ll")


class WorkgroupTrace:
    """The record buffer of a traced process (one per process: the worker code is global)."""

    def __init__(self, code, capacity: int):
        self._rows = np.zeros(capacity, dtype=RECORD)
        self._count = ctypes.c_int64.from_address(code.global_address("jv_trace_count"))
        ctypes.c_int64.from_address(code.global_address("jv_trace_capacity")).value = capacity
        ctypes.c_void_p.from_address(code.global_address("jv_trace_rows")).value = self._rows.ctypes.data
        self.dropped = 0

    def take(self) -> np.ndarray:
        """The records since the last take, by start time; call it while no dispatch runs."""
        n = self._count.value
        kept = min(n, len(self._rows))
        self.dropped += n - kept
        out = np.sort(self._rows[:kept].copy(), order="start_ns")
        self._count.value = 0
        return out


def capacity() -> int:
    try:
        value = int(os.environ.get(ENV, "1"))
    except ValueError:
        value = 1
    return DEFAULT_CAPACITY if value <= 1 else value
