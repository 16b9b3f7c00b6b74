"""How far each suite model's one-thread call can go below IREE's: its kernels plus input copies.

Issue 21 asks small models to run 1.5x faster under jitvm than under iree.runtime local-sync.
Both run the same kernels (IREE's machine code, llvm-cpu build) and both copy every numpy
input into a new device buffer, so no call can take less than those two. Per model, in one
process, batches alternating, in the calling thread's CPU time (all these ways run on it,
so a loaded machine's scheduling drops out): IREE's call, jitvm's, and jitvm's layers
(bench.host_layers): the kernels (the replayed dispatches) and the native marshalling (the
inputs' checks, allocations and copies, the results' hand-over). Their sum is the floor;
floor / IREE above 2/3 means 1.5x is out of reach whatever the host code does.

    python -m bench.kernel_share                     # every suite model, resnet50-style at 64x64
    python -m bench.kernel_share --models softmax32x512 dwconv3x3_56x56x64_bias_relu
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from bench import host_layers
from bench.alternate import alternating_medians
from bench.build import compile_model
from bench.models import suite
from bench.run import select


def main(argv: list[str] | None = None) -> int:
    import iree.runtime as ireert

    import jitvm

    p = argparse.ArgumentParser(prog="python -m bench.kernel_share", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", default=None, help="suite model names (default: all)")
    p.add_argument("--resolution", type=int, default=64, help="resnet50-style input size")
    p.add_argument("--budget", type=float, default=10.0, help="seconds of CPU time per model and measurement")
    args = p.parse_args(argv)
    chosen = select(suite(args.resolution), args.models)
    print(f"load average {os.getloadavg()[0]:.2f} at the start; one thread, CPU time of the calling thread, "
          "medians, us a call")
    print("| model | IREE local-sync | jitvm | ratio | kernels | input copies, checks, hand-over | floor "
          "| floor / IREE | jitvm host code and HAL | load |")
    print("|---" * 10 + "|")
    for spec in chosen:
        vmfb = str(compile_model(spec, "llvm-cpu", log=lambda *a: None))
        inputs = spec.make_inputs()
        iree = getattr(ireert.load_vm_flatbuffer_file(vmfb, driver="local-sync"), spec.function)
        fn = jitvm.load(vmfb, threads=1).function(spec.function)
        want, got = np.asarray(iree(*inputs)), np.asarray(fn(*inputs))
        if want.dtype != got.dtype or not np.array_equal(want.view(np.uint8), got.view(np.uint8)):
            print(f"{spec.name}: jitvm's result differs from IREE's", file=sys.stderr)
            return 1
        start = time.thread_time()
        np.asarray(iree(*inputs))
        per_call = time.thread_time() - start
        batch = max(1, int(0.005 / max(per_call, 1e-7)))
        rounds = max(5, min(300, int(args.budget / (2 * per_call * batch))))
        calls = {"iree": lambda *a: np.asarray(iree(*a)), "jitvm": lambda *a: np.asarray(fn(*a))}
        m = alternating_medians(calls, inputs, rounds, batch, warm_up=3, clock=time.thread_time)
        x = host_layers.layers(fn, inputs, rounds, batch, clock=time.thread_time, warm_up=3)
        kernels = x["dispatches"] - x["replays"] * x["floor"]
        copies = x["native"] - x["vm"]
        host = x["vm"] - (1 + x["results"]) * x["floor"] - x["dispatches"] + x["replays"] * x["floor"]
        floor = kernels + copies
        us = [v * 1e6 for v in (m["iree"], m["jitvm"])]
        print(f"| {spec.name} | {us[0]:.1f} | {us[1]:.1f} | {us[1] / us[0]:.2f} | {kernels * 1e6:.1f} "
              f"| {copies * 1e6:.1f} | {floor * 1e6:.1f} | {floor / m['iree']:.2f} | {host * 1e6:.1f} "
              f"| {os.getloadavg()[0]:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
