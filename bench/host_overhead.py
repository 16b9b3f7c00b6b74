"""What a small call costs: jitvm against IREE's own runtime, same process, calls alternating.

Host code dominates small calls: argument checks and marshalling, HAL objects made and
destroyed, fences, queue operations, the invocation itself. The calls here are the ones a
user of a small model makes: an add of two 4xf32, a 4x8 @ 8x16 + relu, softmax 1x1000 and
matmul 128, each compiled for VMVX and timed under iree.runtime (local-sync) and under
jitvm (JIT, one thread) in one process, batches alternating (bench.alternate), medians
over the rounds, warm-up excluded. With --llvm-cpu, IREE's native build of the same MLIR
runs beside them: under iree.runtime on local-sync and on local-task (all cores), and under
jitvm (its host code, IREE's kernels) on one thread and on all, every result compared bit for
bit with local-sync's. The jitvm.runtime column is the iree.runtime drop-in (its
FunctionInvoker and DeviceArray, local-sync), each result taken to numpy as IREE's is.

    python -m bench.host_overhead                         # 1,000 calls a way per model
    python -m bench.host_overhead --models add4 --rounds 400 --batch 5
    python -m bench.host_overhead --layers                # and where jitvm's microseconds go (bench.host_layers)
    python -m bench.host_overhead --llvm-cpu --layers --models softmax32x512 dwconv3x3_56x56x64_bias_relu
    python -m bench.host_overhead --llvm-cpu --ctypes-plan  # and the call before the native entry, alternating
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from bench import host_layers
from bench.alternate import alternating_medians
from bench.build import compile_model
from bench.models import depthwise, matmul, softmax
from bench.models.mlir import Function, Value
from bench.models.spec import ModelSpec
from bench.models import ops


LLVM_SYNC, LLVM_JIT1 = "iree.runtime llvm-cpu local-sync", "jitvm llvm-cpu (1 thr)"
LLVM_JIT1_CTYPES = "jitvm llvm-cpu (1 thr, ctypes plan)"


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
    """The default calls, then the small kernel-bound suite models (by name only: --models)."""
    specs = [_add4(), _mm_relu(), softmax(1, 1000), matmul(128)]
    return {s.name: s for s in specs}


def extra_models() -> dict[str, ModelSpec]:
    """Suite models (bench.models.suite) small enough to time here; chosen with --models."""
    specs = [softmax(32, 512), depthwise(56, 64)]
    return {s.name: s for s in specs}


def main(argv: list[str] | None = None) -> int:
    import iree.runtime as ireert

    import jitvm
    import jitvm.runtime as jitvm_runtime

    p = argparse.ArgumentParser(prog="python -m bench.host_overhead", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", default=None, help="model names (default: all)")
    p.add_argument("--rounds", type=int, default=200, help="batches per way, alternating")
    p.add_argument("--batch", type=int, default=5, help="calls per batch")
    p.add_argument("--llvm-cpu", action="store_true", help="also time IREE's llvm-cpu build (IREE and jitvm)")
    p.add_argument("--layers", action="store_true", help="also profile jitvm's call layer by layer")
    p.add_argument("--ctypes-plan", action="store_true",
                   help="with --llvm-cpu, also time jitvm's 1-thread call through the plan's ctypes call "
                        "(CallPlan.direct, the path before the native entry)")
    args = p.parse_args(argv)
    chosen = models()
    if args.models:
        chosen = {n: s for n, s in {**chosen, **extra_models()}.items() if n in args.models}
    print(f"load average {os.getloadavg()[0]:.2f}; {args.rounds} x {args.batch} calls a way, medians")
    threads = os.cpu_count() or 1
    native_cols = [LLVM_SYNC, LLVM_JIT1, f"iree.runtime llvm-cpu local-task ({threads} thr)",
                   f"jitvm llvm-cpu ({threads} thr)"]
    previous = args.llvm_cpu and args.ctypes_plan
    cols = ["iree.runtime vmvx", "jitvm", "jitvm.runtime"] + (native_cols if args.llvm_cpu else []) + \
        ([LLVM_JIT1_CTYPES] if previous else [])
    ratios = ["jitvm / iree vmvx"] + (["jitvm llvm-cpu 1 thr / local-sync", f"{threads} thr / local-task"]
                                      if args.llvm_cpu else []) + (["ctypes plan 1 thr / local-sync"] if previous else [])
    print("| call | " + " | ".join(f"{c} us" for c in cols) + " | " + " | ".join(ratios) + " |")
    print("|---" * (len(cols) + len(ratios) + 1) + "|")
    profiles = []
    for spec in chosen.values():
        inputs = spec.make_inputs()
        fns = {}
        if spec.name in models():  # a suite model's VMVX build takes IREE's interpreter seconds a call
            vmfb = str(compile_model(spec, "vmvx", log=lambda *a: None))
            fns = {"iree.runtime vmvx": getattr(ireert.load_vm_flatbuffer_file(vmfb, driver="local-sync"),
                                                spec.function),
                   "jitvm": jitvm.load(vmfb, threads=1).function(spec.function),
                   "jitvm.runtime": getattr(jitvm_runtime.load_vm_flatbuffer_file(vmfb, driver="local-sync"),
                                            spec.function)}
        elif not args.llvm_cpu:
            print(f"{spec.name}: a suite model, timed with --llvm-cpu only", file=sys.stderr)
            return 2
        if args.llvm_cpu:
            native = str(compile_model(spec, "llvm-cpu", log=lambda *a: None))
            for col, driver in zip(native_cols[::2], ("local-sync", "local-task")):
                fns[col] = getattr(ireert.load_vm_flatbuffer_file(native, driver=driver), spec.function)
            for col, n in zip(native_cols[1::2], (1, threads)):
                fns[col] = jitvm.load(native, threads=n).function(spec.function)
            if previous:
                fns[LLVM_JIT1_CTYPES] = jitvm.load(native, threads=1).function(spec.function)
                fns[LLVM_JIT1_CTYPES].native_entry = False  # set before the first call builds the plan
        same = {"iree.runtime vmvx": ("jitvm", "jitvm.runtime"),
                LLVM_SYNC: native_cols[1:] + ([LLVM_JIT1_CTYPES] if previous else []) if args.llvm_cpu else ()}
        for ref_way, ways in same.items():
            if ref_way not in fns:
                continue
            reference = np.asarray(fns[ref_way](*inputs))
            for way in ways:
                got = np.asarray(fns[way](*inputs))
                if not np.array_equal(reference.view(np.uint8), got.view(np.uint8)):
                    print(f"{spec.name}: {way}'s result differs from {ref_way}'s", file=sys.stderr)
                    return 1
        calls = {way: (lambda fn: lambda *a: np.asarray(fn(*a)))(fn) for way, fn in fns.items()}
        medians = alternating_medians(calls, inputs, args.rounds, args.batch, warm_up=20)
        row = " | ".join(f"{medians[c] * 1e6:.1f}" if c in medians else "-" for c in cols)
        quotients = [medians["jitvm"] / medians["iree.runtime vmvx"] if "jitvm" in medians else float("nan")]
        if args.llvm_cpu:
            quotients += [medians[native_cols[1]] / medians[native_cols[0]],
                          medians[native_cols[3]] / medians[native_cols[2]]]
        if previous:
            quotients.append(medians[LLVM_JIT1_CTYPES] / medians[native_cols[0]])
        print(f"| {spec.name} | {row} | " + " | ".join(f"{q:.2f}" for q in quotients) + " |", flush=True)
        if args.layers:
            way = LLVM_JIT1 if args.llvm_cpu else "jitvm"
            profiles.append(host_layers.table(f"{spec.name}, {way}", host_layers.layers(fns[way], inputs,
                                                                                       args.rounds, args.batch)))
    for profile in profiles:
        print(f"\n{profile}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
