"""Where the threads' time goes: an opt-in record of every workgroup and split-loop chunk.

With JITVM_TRACE_WORKGROUPS set when the process first runs a dispatch natively, the
native grid walker and the split-loop shares (runtime.exec.workers) record, per kernel call: the
thread, whether it was a workgroup or a chunk of a split loop, its index (the workgroup's
linear index, or the chunk's first iteration), start and end times (CLOCK_MONOTONIC ns,
the clock of time.perf_counter_ns) and the function called. Without it the worker code
is compiled without a trace, so runs that do not ask pay nothing. bench/thread_trace.py
reads the records to tell scheduling losses (idle threads, late starts, serial host code)
from kernels that run slower when both cores are busy.

The value is the record capacity (1 means the default); records beyond it are counted
and dropped.
"""

from __future__ import annotations

import ctypes
import os
import re

import numpy as np

ENV = "JITVM_TRACE_WORKGROUPS"
DEFAULT_CAPACITY = 1 << 20
GRID, SPLIT = 0, 1  # record kinds
FIELDS = ("thread", "kind", "index", "start_ns", "end_ns", "function")
RECORD = np.dtype([(name, np.int64) for name in FIELDS])

_MARK = re.compile(r"^(?P<call>.*\)) ; traced (?P<kind>\d) (?P<index>%[\w.]+) (?P<fn>%[\w.]+)$", re.M)

IR = """
@jv_trace_count = global i64 0
@jv_trace_capacity = global i64 0
@jv_trace_rows = global ptr null
declare i64 @pthread_self()

define internal void @trace_record(i64 %kind, i64 %index, i64 %t0, ptr %fn) {
entry:
  %t1 = call i64 @now_ns()
  %k = atomicrmw add ptr @jv_trace_count, i64 1 monotonic
  %cap = load i64, ptr @jv_trace_capacity
  %room = icmp ult i64 %k, %cap
  br i1 %room, label %put, label %done
put:
  %rows = load ptr, ptr @jv_trace_rows
  %row = getelementptr [6 x i64], ptr %rows, i64 %k
  %thread = call i64 @pthread_self()
  store i64 %thread, ptr %row
  %p1 = getelementptr i64, ptr %row, i64 1
  store i64 %kind, ptr %p1
  %p2 = getelementptr i64, ptr %row, i64 2
  store i64 %index, ptr %p2
  %p3 = getelementptr i64, ptr %row, i64 3
  store i64 %t0, ptr %p3
  %p4 = getelementptr i64, ptr %row, i64 4
  store i64 %t1, ptr %p4
  %f = ptrtoint ptr %fn to i64
  %p5 = getelementptr i64, ptr %row, i64 5
  store i64 %f, ptr %p5
  br label %done
done:
  ret void
}
"""


def requested() -> bool:
    return bool(os.environ.get(ENV))


def instrument(text: str) -> str:
    """The worker IR with a timed record around every call marked `; traced KIND INDEX FN`."""
    count = 0

    def traced(m: re.Match) -> str:
        nonlocal count
        count += 1
        t0 = f"%trace{count}.t0"
        return (f"  {t0} = call i64 @now_ns()\n{m['call']}\n"
                f"  call void @trace_record(i64 {m['kind']}, i64 {m['index']}, i64 {t0}, ptr {m['fn']})")

    return _MARK.sub(traced, text) + IR


class WorkgroupTrace:
    """The record buffer of a traced process (one per process: the worker code is global)."""

    def __init__(self, engine, capacity: int):
        self._rows = np.zeros(capacity, dtype=RECORD)
        self._count = ctypes.c_int64.from_address(engine.get_global_value_address("jv_trace_count"))
        ctypes.c_int64.from_address(engine.get_global_value_address("jv_trace_capacity")).value = capacity
        ctypes.c_void_p.from_address(engine.get_global_value_address("jv_trace_rows")).value = \
            self._rows.ctypes.data
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
