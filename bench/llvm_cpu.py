"""Every suite model's llvm-cpu build under jitvm against IREE's runtime, one process, alternating.

Issue 21's speed target: per call, jitvm running an llvm-cpu module (its compiled host code,
IREE's kernels on its executor) is no slower than iree.runtime on local-sync with one thread
and on local-task with all cores. Separate processes (bench.run's columns) drift apart on a
shared machine; here the four ways load the same module in one process and run in
alternating batches (bench.alternate), every result compared bit for bit with local-sync's
first. Rounds are sized per model to a time budget.

    python -m bench.llvm_cpu                         # every suite model, resnet50-style at 64x64
    python -m bench.llvm_cpu --models matmul512 resnet50 --budget 20
    python -m bench.llvm_cpu --thread-time   # and the one-thread pair in the caller's CPU time

On a loaded machine wall-clock medians of one-thread calls measure the scheduler as much as
the call; `--thread-time` adds a second alternating pass over IREE local-sync and jitvm's one
thread, timed in CPU time of the calling thread (both run every call on it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from bench.alternate import alternating_medians
from bench.build import compile_model
from bench.models import suite
from bench.run import select


def _ways(vmfb: str, function: str, threads: int) -> dict:
    import iree.runtime as ireert

    import jitvm

    ways = {}
    for label, driver in (("IREE local-sync", "local-sync"), (f"IREE local-task ({threads} thr)", "local-task")):
        ways[label] = getattr(ireert.load_vm_flatbuffer_file(vmfb, driver=driver), function)
    for label, n in (("jitvm 1 thr", 1), (f"jitvm {threads} thr", threads)):
        ways[label] = jitvm.load(vmfb, threads=n).function(function)
    return {label: (lambda fn: lambda *a: np.asarray(fn(*a)))(fn) for label, fn in ways.items()}


def _differs(ways: dict, inputs) -> str | None:
    reference, *others = ways
    want = ways[reference](*inputs)
    for way in others:
        got = ways[way](*inputs)
        if got.dtype != want.dtype or not np.array_equal(got.view(np.uint8), want.view(np.uint8)):
            return f"{way}'s result differs from {reference}'s"
    return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.llvm_cpu", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", default=None, help="suite model names (default: all)")
    p.add_argument("--resolution", type=int, default=64, help="resnet50-style input size")
    p.add_argument("--budget", type=float, default=10.0, help="seconds of timed calls per model")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="local-task's and jitvm's thread count")
    p.add_argument("--thread-time", action="store_true",
                   help="also time the one-thread pair in the calling thread's CPU time (time.thread_time)")
    args = p.parse_args(argv)
    chosen = select(suite(args.resolution), args.models)
    t = args.threads
    print(f"load average {os.getloadavg()[0]:.2f} at the start; per call, medians, ms")
    cpu = " | local-sync CPU | jitvm 1 thr CPU | ratio" if args.thread_time else ""
    print(f"| model | IREE local-sync | jitvm 1 thr | ratio | IREE local-task ({t} thr) | jitvm {t} thr | ratio "
          f"{cpu} | rounds | load |")
    print("|---" * (9 + (3 if args.thread_time else 0)) + "|")
    for spec in chosen:
        vmfb = str(compile_model(spec, "llvm-cpu", log=lambda *a: None))
        inputs = spec.make_inputs()
        ways = _ways(vmfb, spec.function, t)
        problem = _differs(ways, inputs)
        if problem:
            print(f"{spec.name}: {problem}", file=sys.stderr)
            return 1
        start = time.perf_counter()
        for fn in ways.values():
            fn(*inputs)
        per_round = time.perf_counter() - start
        batch = max(1, int(0.02 / per_round))  # batches of >= 20 ms
        rounds = max(5, min(400, int(args.budget / (per_round * batch))))
        m = alternating_medians(ways, inputs, rounds, batch, warm_up=3)
        sync, task, jit1, jitn = (m[k] * 1e3 for k in ways)
        cpu = ""
        if args.thread_time:
            one = {k: ways[k] for k in ("IREE local-sync", "jitvm 1 thr")}
            c = alternating_medians(one, inputs, rounds, batch, warm_up=3, clock=time.thread_time)
            csync, cjit = (c[k] * 1e3 for k in one)
            cpu = f" | {csync:.3f} | {cjit:.3f} | {cjit / csync:.2f}"
        print(f"| {spec.name} | {sync:.3f} | {jit1:.3f} | {jit1 / sync:.2f} | {task:.3f} | {jitn:.3f} "
              f"| {jitn / task:.2f}{cpu} | {rounds}x{batch} | {os.getloadavg()[0]:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
