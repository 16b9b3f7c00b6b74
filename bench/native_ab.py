"""jitvm's JIT on a model's VMVX build against IREE's llvm-cpu build of it, one process.

Issue 22's targets: one thread, jitvm no slower than IREE llvm-cpu on local-sync; all
threads, no slower than llvm-cpu on local-task. On a shared machine wall time counts the
neighbours, the CPU time of a one-thread call much less: the one-thread ways are timed in
CPU time (time.process_time), the threaded ways in wall time (a pool's CPU time would add
every thread's). All four load in one process and run in alternating rounds (reversed
every other round); medians. The JIT compiles at the first call with the full pipeline
(tier "full"). Its output is checked bit for bit against IREE's VMVX interpreter when
`--check` is given (slow for the big CNNs: their interpreter calls take 25-110 s).

    python -m bench.native_ab --suite exported --models efficientnet_lite0 resnet50_zoo --rounds 7
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from bench.build import compile_model
from bench.exported import exported_suite
from bench.models import suite
from bench.run import select


def medians(fns: dict, clocks: dict, inputs, rounds: int) -> dict[str, float]:
    """Median seconds per call of each way on its clock, alternating rounds."""
    for fn in fns.values():
        fn(*inputs)
    ways = list(fns)
    times: dict[str, list[float]] = {w: [] for w in ways}
    for r in range(rounds):
        for way in (ways if r % 2 else ways[::-1]):
            clock = clocks[way]
            start = clock()
            fns[way](*inputs)
            times[way].append(clock() - start)
    return {w: float(np.median(t)) for w, t in times.items()}


def _flat(result) -> np.ndarray:
    results = result if isinstance(result, (tuple, list)) else [result]
    return np.concatenate([np.asarray(r).reshape(-1).view(np.uint8) for r in results])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.native_ab", description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", choices=("kernels", "exported"), default="exported")
    p.add_argument("--models", nargs="+", required=True)
    p.add_argument("--resolution", type=int, default=64, help="the kernel suite's resnet50-style input size")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="local-task's and jitvm's thread count")
    p.add_argument("--check", action="store_true", help="compare the JIT's output with IREE's VMVX interpreter")
    args = p.parse_args(argv)
    import iree.runtime as ireert

    import jitvm

    specs = exported_suite() if args.suite == "exported" else suite(args.resolution)
    t = args.threads
    print(f"load average {os.getloadavg()[0]:.2f}; ms per call, medians of {args.rounds} alternating rounds; "
          f"1 thread: CPU time, {t} threads: wall time")
    print(f"| model | llvm-cpu local-sync | jitvm 1 thr | ratio | llvm-cpu local-task ({t} thr) | jitvm {t} thr "
          f"| ratio | load |")
    print("|---|---|---|---|---|---|---|---|")
    for spec in select(specs, args.models):
        name = spec.name
        inputs = spec.make_inputs()
        vmvx = str(compile_model(spec, "vmvx", log=lambda *a: None))
        native = str(compile_model(spec, "llvm-cpu", log=lambda *a: None))
        fns = {"sync": getattr(ireert.load_vm_flatbuffer_file(native, driver="local-sync"), spec.function),
               "jit1": jitvm.load(vmvx, threads=1, tier="full").function(spec.function),
               "task": getattr(ireert.load_vm_flatbuffer_file(native, driver="local-task"), spec.function),
               "jitn": jitvm.load(vmvx, threads=t, tier="full").function(spec.function)}
        ways = {k: (lambda fn: lambda *a: _flat(fn(*a)))(fn) for k, fn in fns.items()}
        if args.check:
            interp = getattr(ireert.load_vm_flatbuffer_file(vmvx, driver="local-sync"), spec.function)
            want = _flat(interp(*inputs))
            for k in ("jit1", "jitn"):
                if not np.array_equal(want, ways[k](*inputs)):
                    print(f"{name}: the JIT's output ({k}) differs from IREE's interpreter", file=sys.stderr)
                    return 1
        clocks = {"sync": time.process_time, "jit1": time.process_time, "task": time.perf_counter,
                  "jitn": time.perf_counter}
        m = {k: v * 1e3 for k, v in medians(ways, clocks, inputs, args.rounds).items()}
        print(f"| {name} | {m['sync']:.1f} | {m['jit1']:.1f} | {m['jit1'] / m['sync']:.2f}x | {m['task']:.1f} | "
              f"{m['jitn']:.1f} | {m['jitn'] / m['task']:.2f}x | {os.getloadavg()[0]:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
