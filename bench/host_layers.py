"""Where a small call's microseconds go under jitvm, layer by layer (bench.host_overhead --layers).

Each layer is timed on its own, in alternating batches (bench.alternate), from the outside in:

- the API call: `fn(*arrays)`, numpy in and out (through the function's native entry,
  jitvm.api.entry, when it has one: then no Python runs on the call's path);
- the native call alone (jitvm.api.plan's jv_invoke on a ready slot array): argument
  checks, input copies into new device buffers, the VM function, the results' hand-over;
- the VM function alone, with input views made beforehand: compiled host code and the
  native HAL functions it calls (fences, allocation, queue execution), dispatches included;
- the dispatches alone: each replayed sequence of the module's memoized command buffers
  run natively (thread choice, binding views, kernels);
- one ctypes call of an empty native function: the floor of any crossing from Python.

The table gives the differences: what the API adds around the native call (the native
entry's argument vector and result arrays, or Python's slot array and result arrays without
one), native marshalling, host code and HAL, dispatches. A
ctypes crossing is subtracted where a measurement adds one (and one per result released).
"""

from __future__ import annotations

import ctypes
import time

import numpy as np

from bench.alternate import alternating_medians


def _segments(module) -> list:
    """The replayable segments of the module's memoized command buffers (globals)."""
    from jitvm.runtime.modules.hal.command_buffer import HalCommandBuffer
    from jitvm.runtime.modules.hal.prepared import DispatchSegment
    from jitvm.runtime.vm.objects import Ref

    found = []
    refs = module._instance.refs
    for i in range(len(refs)):
        ref = Ref.wrap(refs[i] or 0)
        cmd = ref.payload if ref is not None else None
        if isinstance(cmd, HalCommandBuffer) and cmd.program is not None:
            found += [p for p in cmd.program.parts if isinstance(p, DispatchSegment)]
    return found


def layers(fn, inputs, rounds: int, batch: int, clock=time.perf_counter, warm_up: int = 20) -> dict[str, float]:
    """Median seconds per call of each layer of `fn` (a jitvm.api.Function) on `inputs`, timed
    by `clock` (bench.alternate)."""
    from jitvm.api import marshal
    from jitvm.runtime.exec.nativecode import native
    from jitvm.runtime.modules.hal import types as t
    from jitvm.runtime.native.layout import TrapT
    from jitvm.runtime.vm import abi, nativelib

    fn(*inputs)
    plan = fn._plan
    release = nativelib.fn.jv_release
    m = plan.output_count
    io = plan._io(*map(id, inputs))
    results_at = plan.input_count

    def native_call():
        plan._invoke[1](plan.address, io)
        for j in range(m):
            release(io[results_at + j])

    entry = abi.NATIVE_FN(plan.struct.fn)
    ctx = plan.struct.ctx
    views = [marshal.array_to_view(fn.module.hal, a, t.ELEMENT_OF_NUMPY[a.dtype]) for a in inputs]
    args = (ctypes.c_uint64 * max(1, len(views)))(*[v.addr for v in views])
    results = (ctypes.c_uint64 * max(1, m))()
    trap = TrapT()
    trap_at = ctypes.addressof(trap)

    def vm_function():
        entry(ctx, args, results, trap_at)
        for j in range(m):
            release(results[j])

    fn(*inputs)  # the replicas fit these inputs' table layout
    replicas = [(s, r) for s in _segments(fn.module) for r in s.replicas if r.struct.valid]
    run = native().run_sequence
    # Buffers of the layout each replica was prepared for, and slot bases of their own (a
    # call's buffers are freed when it returns; its execution rewrites the replica's bases).
    memory, runs = [], []
    for segment, r in replicas:
        n = segment.struct.slot_count
        bases = (ctypes.c_uint64 * max(1, n))()
        for k in range(n):
            length, base = r.signature[4 * k], r.signature[4 * k + 1]
            memory.append(np.zeros(length + 128, np.uint8))
            data = memory[-1].ctypes.data
            bases[k] = data + (-data % 64) + base  # 64-byte aligned, as the HAL's buffers (llvm-cpu kernels rely on it)
        runs.append((segment.runner.address, r.sequence.address, bases))

    def dispatches():
        for runner, sequence, bases in runs:
            run(runner, sequence, bases)

    def floor():
        release(0)

    ways = {"api": lambda: fn(*inputs), "native": native_call, "vm": vm_function, "dispatches": dispatches,
            "floor": floor}
    out = alternating_medians(ways, (), rounds, batch, warm_up=warm_up, clock=clock)
    out["replays"] = len(replicas)
    out["results"] = m
    return out


# Each row from the medians: A api, C native (+1 crossing, +1 per result released), D vm
# (the same), E dispatches (+1 crossing per replay), F one crossing; the rows add up to A.
ROWS = [
    ("API call (numpy in, numpy out)", lambda x: x["api"]),
    ("  around the native call (the entry's, or Python's: arguments in, result arrays out)",
     lambda x: x["api"] - x["native"] + (1 + x["results"]) * x["floor"]),
    ("  native marshalling (checks, input copies, hand-over)", lambda x: x["native"] - x["vm"]),
    ("  host code and native HAL (fences, allocation, queue)",
     lambda x: x["vm"] - (1 + x["results"]) * x["floor"] - x["dispatches"] + x["replays"] * x["floor"]),
    ("  dispatches (replayed sequences: views, threads, kernels)",
     lambda x: x["dispatches"] - x["replays"] * x["floor"]),
    ("one ctypes crossing, for reference", lambda x: x["floor"]),
]


def table(name: str, x: dict[str, float]) -> str:
    lines = [f"{name} (us a call)", "| layer | us |", "|---|---|"]
    lines += [f"| {label} | {value(x) * 1e6:.1f} |" for label, value in ROWS]
    return "\n".join(lines)
