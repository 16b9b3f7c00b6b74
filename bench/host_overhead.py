"""What a small call costs: jitvm against IREE's own runtime, same process, calls alternating.

Host code dominates small calls: argument checks and marshalling, HAL objects made and
destroyed, fences, queue operations, the invocation itself. The calls here are the ones a
user of a small model makes: an add of two 4xf32, a 4x8 @ 8x16 + relu, softmax 1x1000 and
matmul 128, each compiled for VMVX and timed under iree.runtime (local-sync) and under
jitvm (JIT, one thread) in one process, batches alternating (bench.alternate), medians
over the rounds, warm-up excluded. With --llvm-cpu, IREE's native build of the same MLIR
runs beside them (local-sync). The jitvm.runtime column is the iree.runtime drop-in (its
FunctionInvoker and DeviceArray, local-sync), each result taken to numpy as IREE's is.

    python -m bench.host_overhead                         # 1,000 calls a way per model
    python -m bench.host_overhead --models add4 --rounds 400 --batch 5
    python -m bench.host_overhead --layers                # and where jitvm's microseconds go (bench.host_layers)
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from bench import host_layers
from bench.alternate import alternating_medians
from bench.build import compile_model
from bench.models import matmul, softmax
from bench.models.mlir import Function, Value
from bench.models.spec import ModelSpec
from bench.models import ops


def _add4() -> ModelSpec:
    def build() -> str:
        f = Function("add")
        a, b = f.arg((4,)), f.arg((4,))
        total = Value(f.fresh(), a.shape)
        f.lines.append(f"{total.name} = arith.addf {a.name}, {b.name} : {a.type}")
        f.ret(total)
        return f.text()
    return ModelSpec("add4", "add", (((4,), "float32"),) * 2, build, {"shape": (4,)})


def _mm_relu() -> ModelSpec:
    def build() -> str:
        f = Function("mm_relu")
        a, b = f.arg((4, 8)), f.arg((8, 16))
        f.ret(ops.relu(f, ops.matmul(f, a, b)))
        return f.text()
    return ModelSpec("mm_relu_4x8x16", "mm_relu", (((4, 8), "float32"), ((8, 16), "float32")), build, {})


def models() -> dict[str, ModelSpec]:
    specs = [_add4(), _mm_relu(), softmax(1, 1000), matmul(128)]
    return {s.name: s for s in specs}


def main(argv: list[str] | None = None) -> int:
    import iree.runtime as ireert

    import jitvm
    import jitvm.runtime as jitvm_runtime

    p = argparse.ArgumentParser(prog="python -m bench.host_overhead", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", default=None, help="model names (default: all)")
    p.add_argument("--rounds", type=int, default=200, help="batches per way, alternating")
    p.add_argument("--batch", type=int, default=5, help="calls per batch")
    p.add_argument("--llvm-cpu", action="store_true", help="also time IREE's llvm-cpu build (local-sync)")
    p.add_argument("--layers", action="store_true", help="also profile jitvm's call layer by layer")
    args = p.parse_args(argv)
    chosen = models()
    if args.models:
        chosen = {n: s for n, s in chosen.items() if n in args.models}
    print(f"load average {os.getloadavg()[0]:.2f}; {args.rounds} x {args.batch} calls a way, medians")
    cols = ["iree.runtime vmvx", "jitvm", "jitvm.runtime"] + (["iree.runtime llvm-cpu"] if args.llvm_cpu else [])
    print("| call | " + " | ".join(f"{c} us" for c in cols) + " | jitvm / iree vmvx |")
    print("|---" * (len(cols) + 2) + "|")
    profiles = []
    for spec in chosen.values():
        vmfb = str(compile_model(spec, "vmvx", log=lambda *a: None))
        inputs = spec.make_inputs()
        fns = {"iree.runtime vmvx": getattr(ireert.load_vm_flatbuffer_file(vmfb, driver="local-sync"), spec.function),
               "jitvm": jitvm.load(vmfb, threads=1).function(spec.function),
               "jitvm.runtime": getattr(jitvm_runtime.load_vm_flatbuffer_file(vmfb, driver="local-sync"),
                                        spec.function)}
        if args.llvm_cpu:
            native = str(compile_model(spec, "llvm-cpu", log=lambda *a: None))
            fns["iree.runtime llvm-cpu"] = getattr(ireert.load_vm_flatbuffer_file(native, driver="local-sync"),
                                                   spec.function)
        reference = np.asarray(fns["iree.runtime vmvx"](*inputs))
        for way in ("jitvm", "jitvm.runtime"):
            got = np.asarray(fns[way](*inputs))
            if not np.array_equal(reference.view(np.uint8), got.view(np.uint8)):
                print(f"{spec.name}: {way}'s result differs from IREE's", file=sys.stderr)
                return 1
        calls = {way: (lambda fn: lambda *a: np.asarray(fn(*a)))(fn) for way, fn in fns.items()}
        medians = alternating_medians(calls, inputs, args.rounds, args.batch, warm_up=20)
        row = " | ".join(f"{medians[c] * 1e6:.1f}" for c in cols)
        print(f"| {spec.name} | {row} | {medians['jitvm'] / medians['iree.runtime vmvx']:.2f} |", flush=True)
        if args.layers:
            profiles.append(host_layers.table(spec.name, host_layers.layers(fns["jitvm"], inputs, args.rounds,
                                                                            args.batch)))
    for profile in profiles:
        print(f"\n{profile}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
