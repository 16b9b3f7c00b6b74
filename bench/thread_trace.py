"""Where all threads' time goes, against one thread's, from native workgroup records.

    python -m bench.thread_trace                          # ResNet-50-style 64x64
    python -m bench.thread_trace --models conv3x3_56x56x64_64 matmul128 --rounds 30

Runs each model on the JIT with one thread and with all, calls alternating, with the
native workgroup trace on (jitvm.runtime.exec.trace): every workgroup and split-loop chunk is
timed on the thread that ran it. Per call that separates
- host time: the call's wall time outside the first-to-last kernel span (Python HAL
  imports, marshalling; serial whatever the thread count);
- kernel work: the time threads spent inside kernels, summed over threads. With one
  thread it is the work itself; with N the excess over it is work that ran slower because
  the other cores were busy (shared caches and memory, a VM's cores lent unevenly);
- idle: threads x span minus work, what the scheduling lost (late starts, imbalance,
  serial parts of one-workgroup dispatches).
Beside it, the same sitting's ideal speed-up (bench.ideal: a kernel with nothing shared)
says what the machine gave any parallel code. Per dispatch, the table lists one thread's
time, the work with N threads (inflation) and the span (speed-up).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path

import numpy as np

from bench.build import compile_model
from bench.models import suite
from bench.run import select

RESULTS = Path(__file__).resolve().parent / "results"
WARM_UP = 40  # calls before timing: the thread policy measures both ways in its first runs


def _names(runners) -> dict[int, str]:
    """Native function address -> the VM entry's (or library export's) name, for every entry
    the runners ran."""
    out = {}
    for runner in runners:
        out.update(runner.library_exports)
        for entry, target in runner._targets.values():
            if target:
                out[target[0]] = entry.name.split(".", 1)[-1]
    return out


def work_intervals(rows: np.ndarray) -> dict[int, float]:
    """Per thread: ns spent in kernels (a split chunk inside a workgroup on its own thread
    counts once), minus the time a workgroup that split a loop waited for the pool."""
    busy: dict[int, float] = collections.Counter()
    grid = rows[rows["kind"] == 0]
    chunks = rows[rows["kind"] == 1]
    for thread in np.unique(rows["thread"]):
        mine = grid[grid["thread"] == thread]
        busy[int(thread)] += float((mine["end_ns"] - mine["start_ns"]).sum())
        for c in chunks[chunks["thread"] == thread]:  # chunks run for someone else's workgroup
            inside = (mine["start_ns"] <= c["start_ns"]) & (c["end_ns"] <= mine["end_ns"])
            if not inside.any():
                busy[int(thread)] += float(c["end_ns"] - c["start_ns"])
    # A workgroup that split a loop waited from its own last chunk to the helpers' last one.
    for g in grid:
        inside = chunks[(chunks["start_ns"] >= g["start_ns"]) & (chunks["end_ns"] <= g["end_ns"])]
        if len(inside) == 0:
            continue
        own = inside[inside["thread"] == g["thread"]]
        others = inside[inside["thread"] != g["thread"]]
        if len(own) and len(others):
            busy[int(g["thread"])] -= max(0.0, float(others["end_ns"].max() - own["end_ns"].max()))
    return busy


def dispatches(rows: np.ndarray, names: dict[int, str]) -> list[tuple[str, float, float]]:
    """(entry name, span ns, work ns) per dispatch, in order: consecutive workgroups of one
    function (a repeated index starts the next dispatch), with the split chunks they hold."""
    grid = rows[rows["kind"] == 0]
    chunks = rows[rows["kind"] == 1]
    out, current, seen = [], None, set()
    for g in grid:
        if current is None or g["function"] != current[0] or int(g["index"]) in seen:
            current = [g["function"], []]
            out.append(current)
            seen = set()
        seen.add(int(g["index"]))
        current[1].append(g)
    result = []
    for fn, members in out:
        m = np.array(members, dtype=rows.dtype)
        lo, hi = int(m["start_ns"].min()), int(m["end_ns"].max())
        inner = chunks[(chunks["start_ns"] >= lo) & (chunks["end_ns"] <= hi)]
        result.append((names.get(int(fn), hex(int(fn))), hi - lo,
                       sum(work_intervals(np.concatenate([m, inner])).values())))
    return result


def trace_model(spec, threads: int, rounds: int) -> dict:
    import jitvm
    from jitvm.runtime.exec import nativecode
    from jitvm.lower.backend import JitBackend

    from bench.ideal import ideal_speedup

    vmfb = str(compile_model(spec, "vmvx", log=lambda *a: None))
    inputs = spec.make_inputs()
    fns, runners = {}, []
    for t in (1, threads):
        backend = JitBackend(threads=t, progress=False)
        fns[t] = jitvm.load(vmfb, backend=backend).function(spec.function)
        runners.append(backend.dispatch_runner())
        for _ in range(WARM_UP):
            fns[t](*inputs)
    trace = nativecode.workgroup_trace()
    names = _names(runners)
    calls = {t: [] for t in fns}
    per_dispatch = {t: collections.defaultdict(list) for t in fns}  # name -> per call (span, work, runs)
    ideal = [ideal_speedup(threads)]
    for r in range(rounds):
        for t, fn in fns.items():
            trace.take()
            start = time.perf_counter_ns()
            fn(*inputs)
            end = time.perf_counter_ns()
            rows = trace.take()
            if len(rows) == 0:
                continue
            first, last = int(rows["start_ns"].min()), int(rows["end_ns"].max())
            work = sum(work_intervals(rows).values())
            calls[t].append((end - start, last - first, work))
            this_call = collections.defaultdict(lambda: [0.0, 0.0, 0])
            for name, span, w in dispatches(rows, names):
                d = this_call[name]
                d[0] += span
                d[1] += w
                d[2] += 1
            for name, d in this_call.items():
                per_dispatch[t][name].append(tuple(d))
        if r == rounds // 2:
            ideal.append(ideal_speedup(threads))
    ideal.append(ideal_speedup(threads))
    return {"calls": calls, "dispatches": per_dispatch, "ideal": ideal, "dropped": trace.dropped}


def _median(values, k: int) -> float:
    return float(np.median([v[k] for v in values])) if values else float("nan")


def report(spec, threads: int, result: dict) -> str:
    calls, ideal = result["calls"], result["ideal"]
    ms = 1e-6
    lines = [f"## {spec.name}", "",
             f"ideal kernel's {threads}-over-1 speed-up in this sitting (bench.ideal, start/middle/end): "
             + ", ".join(f"{x:.2f}x" for x in ideal), "",
             "| threads | call ms | host ms | kernel span ms | kernel work ms | idle ms | speed-up |",
             "|---|---|---|---|---|---|---|"]
    one = _median(calls[1], 0)
    for t in calls:
        wall, span, work = (_median(calls[t], k) for k in range(3))
        idle = t * span - work
        lines.append(f"| {t} | {wall * ms:.3f} | {(wall - span) * ms:.3f} | {span * ms:.3f} | {work * ms:.3f} | "
                     f"{idle * ms:.3f} | {one / wall:.2f}x |")
    n1, nn = calls[1], calls[threads]
    if n1 and nn:
        inflation = _median(nn, 2) / _median(n1, 2)
        lines += ["", f"Kernel work with {threads} threads is {inflation:.2f}x one thread's; the scheduling "
                  f"kept threads busy {_median(nn, 2) / (threads * _median(nn, 1)):.0%} of the kernel span."]
    lines += ["", f"| dispatch | runs/call | 1 thread ms | {threads} threads: work ms | span ms | idle ms | "
              "work inflation | speed-up |", "|---|---|---|---|---|---|---|---|"]
    d1, dn = result["dispatches"][1], result["dispatches"][threads]
    nan = [(float("nan"),) * 3]
    for name in sorted(d1, key=lambda k: -_median(d1[k], 1)):
        s1, w1, c1 = (_median(d1[name], k) for k in range(3))
        sn, wn = (_median(dn.get(name, nan), k) for k in range(2))
        lines.append(f"| {name} | {c1:.0f} | {w1 * ms:.3f} | {wn * ms:.3f} | {sn * ms:.3f} | "
                     f"{(threads * sn - wn) * ms:.3f} | {wn / w1:.2f}x | {s1 / sn:.2f}x |")
    if result["dropped"]:
        lines += ["", f"({result['dropped']} records dropped: raise JITVM_TRACE_WORKGROUPS)"]
    return "\n".join(lines) + "\n"


def specs(args) -> dict:
    """The suite `args.suite` names (the exported models import bench.exported lazily)."""
    if args.suite == "exported":
        from bench.exported import exported_suite

        return exported_suite()
    return suite(args.resolution)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.thread_trace", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", default=["resnet50"], help="model names or prefixes")
    p.add_argument("--resolution", type=int, default=64)
    p.add_argument("--suite", choices=("kernels", "exported"), default="kernels",
                   help="exported: the PyTorch models of bench/exported (needs torch)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--rounds", type=int, default=20, help="calls per thread count, alternating")
    p.add_argument("--out", type=Path, help="also write the report here (markdown)")
    args = p.parse_args(argv)
    from jitvm.runtime.exec import trace

    os.environ.setdefault(trace.ENV, "1")  # before the first native dispatch builds the worker code
    from jitvm.runtime.exec import nativecode

    if nativecode.workgroup_trace() is None:
        print("the worker code was built before tracing was requested", file=sys.stderr)
        return 1
    text = [f"# Thread trace ({args.threads} threads vs 1, {args.rounds} alternating calls each, medians)", "",
            f"`python -m bench.thread_trace {' '.join(argv if argv is not None else sys.argv[1:])}`", ""]
    for spec in select(specs(args), args.models):
        part = report(spec, args.threads, trace_model(spec, args.threads, args.rounds))
        print(part, flush=True)
        text.append(part)
    if args.out:
        args.out.write_text("\n".join(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
