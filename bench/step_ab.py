"""One loop step of the JIT on and off, against IREE's llvm-cpu, one thread, one process.

What a lowering change does to whole models, measured the way bench.native_ab measures the
targets: IREE's llvm-cpu build on local-sync, and the JIT on the VMVX build with every loop
step and with `--step` switched off (JitBackend's loop_steps; lower.steps.LOOP_STEPS
names them), all on one thread, timed in CPU time in alternating rounds (medians). The two
JIT ways must give the same bits (with `--check`, also IREE's VMVX interpreter's).

    python -m bench.step_ab --models qmatmul_int8 qmatmul_int4 --step row_lanes --rounds 9
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
from bench.native_ab import _flat, medians
from bench.run import select


def main(argv: list[str] | None = None) -> int:
    from jitvm.lower.steps import LOOP_STEPS

    p = argparse.ArgumentParser(prog="python -m bench.step_ab", description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", choices=("kernels", "exported"), default="exported")
    p.add_argument("--models", nargs="+", required=True)
    p.add_argument("--step", required=True, choices=LOOP_STEPS, help="the loop step switched off in the second way")
    p.add_argument("--resolution", type=int, default=64, help="the kernel suite's resnet50-style input size")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--check", action="store_true", help="compare with IREE's VMVX interpreter too")
    args = p.parse_args(argv)
    import iree.runtime as ireert

    import jitvm
    from jitvm.lower.backend import JitBackend

    specs = exported_suite() if args.suite == "exported" else suite(args.resolution)
    off = f"without {args.step}"
    print(f"load average {os.getloadavg()[0]:.2f}; ms per call, one thread, CPU time, medians of {args.rounds} "
          f"alternating rounds")
    print(f"| model | llvm-cpu local-sync | jitvm | jitvm {off} | on / off | jitvm / llvm-cpu | load |")
    print("|---|---|---|---|---|---|---|")
    for spec in select(specs, args.models):
        inputs = spec.make_inputs()
        vmfb = str(compile_model(spec, "vmvx", log=lambda *a: None))
        native = str(compile_model(spec, "llvm-cpu", log=lambda *a: None))

        def jit(steps):
            backend = JitBackend(use_cache=False, progress=False, threads=1, loop_steps=steps)
            return jitvm.load(vmfb, backend=backend).function(spec.function)

        fns = {"sync": getattr(ireert.load_vm_flatbuffer_file(native, driver="local-sync"), spec.function),
               "on": jit({}), "off": jit({args.step: False})}
        ways = {k: (lambda fn: lambda *a: _flat(fn(*a)))(fn) for k, fn in fns.items()}
        want = ways["off"](*inputs)
        if args.check:
            want = _flat(getattr(ireert.load_vm_flatbuffer_file(vmfb, driver="local-sync"), spec.function)(*inputs))
        for k in ("on", "off"):
            if not np.array_equal(want, ways[k](*inputs)):
                print(f"{spec.name}: the JIT's output ({k}) differs", file=sys.stderr)
                return 1
        m = {k: v * 1e3 for k, v in medians(ways, dict.fromkeys(ways, time.process_time), inputs, args.rounds).items()}
        print(f"| {spec.name} | {m['sync']:.2f} | {m['on']:.2f} | {m['off']:.2f} | {m['on'] / m['off']:.2f}x | "
              f"{m['on'] / m['sync']:.2f}x | {os.getloadavg()[0]:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
