"""JIT on all threads vs one thread, per suite model, in one process.

Both modules are loaded side by side and timed in alternating rounds (the machine's state
drifts; alternation keeps the ratio honest), medians over the rounds, warm-up excluded.
Models are built (cached) as the suite builds them. After each model, the same sitting's
ideal speed-up (bench.ideal: a native kernel with nothing shared between threads, measured
after every round, median) says what the machine gave parallel code just then; the last
column is the model's share of it.

    python -m bench.thread_scaling                 # the suite, resnet50-style at 64x64
    python -m bench.thread_scaling --models matmul512 resnet50 --rounds 9
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from bench.build import compile_model
from bench.models import suite
from bench.run import select


def time_call(fn, inputs, seconds: float) -> float:
    n, start = 0, time.perf_counter()
    while True:
        fn(*inputs)
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return elapsed / n


def specs(args) -> dict:
    """The suite `args.suite` names (the exported models import bench.exported lazily)."""
    if args.suite == "exported":
        from bench.exported import exported_suite

        return exported_suite()
    return suite(args.resolution)


def main(argv: list[str] | None = None) -> int:
    import jitvm

    p = argparse.ArgumentParser(prog="python -m bench.thread_scaling", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", help="model names or prefixes (default: all)")
    p.add_argument("--resolution", type=int, default=64)
    p.add_argument("--suite", choices=("kernels", "exported"), default="kernels",
                   help="exported: the PyTorch models of bench/exported (needs torch)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--min-time", type=float, default=0.25, help="seconds per timed repetition")
    args = p.parse_args(argv)
    from bench.ideal import ideal_speedup
    from bench.machine import parallel_capacity

    # Shared machines lend their cores unevenly: what two busy processes got against one.
    print(f"parallel capacity at start: {parallel_capacity():.2f} of {os.cpu_count()} cores\n")
    print(f"| model | JIT 1 thread ms | JIT {args.threads} threads ms | speed-up | ideal kernel | of ideal |")
    print("|---|---|---|---|---|---|")
    for spec in select(specs(args), args.models):
        vmfb = compile_model(spec, "vmvx", log=lambda *a: None)
        inputs = spec.make_inputs()
        fns = {t: jitvm.load(str(vmfb), threads=t).function(spec.function) for t in (1, args.threads)}
        for fn in fns.values():
            for _ in range(3):
                fn(*inputs)
        times: dict[int, list[float]] = {t: [] for t in fns}
        ideals = []
        for _ in range(args.rounds):
            for t, fn in fns.items():
                times[t].append(time_call(fn, inputs, args.min_time))
            ideals.append(ideal_speedup(args.threads))
        one, many = (float(np.median(times[t])) for t in (1, args.threads))
        ideal = float(np.median(ideals))
        print(f"| {spec.name} | {one * 1e3:.3f} | {many * 1e3:.3f} | {one / many:.2f}x | {ideal:.2f}x | "
              f"{one / many / ideal:.0%} |", flush=True)
    print(f"\nparallel capacity at the end: {parallel_capacity():.2f} of {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
