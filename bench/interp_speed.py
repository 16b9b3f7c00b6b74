"""Reference-interpreter speed on a VMVX dispatch: instructions per second, calls per second.

Runs one entry point of a corpus VMVX executable (default: the 33x17x9 f32 matmul
dispatch of tests/corpus/mlir/matmul.mlir) directly, with the VMVX calling convention
(local memory, constants, a list of binding buffers, workgroup id/size/count), checks the
result against numpy, and reports instructions executed per second (counted by an
instrumented build of the same module) and the time per dispatch call.

    python bench/interp_speed.py [--calls N] [--entry SUBSTRING]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jitvm.fallback_interp import InterpreterBackend  # noqa: E402
from jitvm.frontend.module import load_module  # noqa: E402
from jitvm.fuzz.corpus import Corpus  # noqa: E402
from jitvm.runtime.vm.bytecode import LoadedModule  # noqa: E402
from jitvm.runtime.vm.context import Context  # noqa: E402
from jitvm.runtime.vm.objects import VmBuffer, VmList  # noqa: E402
from jitvm.verify import verify_module  # noqa: E402

CORPUS = Corpus(Path(__file__).resolve().parent.parent / "tests" / "corpus")  # the tests' corpus

SHAPES = {"33x9x17": (33, 17, 9), "4x5x8": (4, 8, 5), "16x16x16": (16, 16, 16)}


def instance_for(path: Path, backend):
    from jitvm.runtime.modules import VmvxModule

    context = Context()
    context.add(VmvxModule())
    return context, context.add(LoadedModule(verify_module(load_module(str(path))), backend))


def run(entry_filter: str, calls: int) -> dict:
    cm = CORPUS.build(names=["mlir/matmul"])[0]
    exe = cm.executables[0]
    rng = np.random.default_rng(0)
    results = {}
    for label, backend in (("count", InterpreterBackend(count_instructions=True)), ("time", InterpreterBackend())):
        _ctx, inst = instance_for(exe, backend)
        name = next(n for n in inst.export_names() if entry_filter in n)
        m, k, n = next(v for s, v in SHAPES.items() if s in name)
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        bindings = VmList.allocate("!vm.buffer")
        for arr in (a, b, np.zeros((m, n), np.float32)):
            bindings.append(VmBuffer.from_bytes(arr.tobytes()))
        args = [VmBuffer.allocate(0), VmBuffer.allocate(0), bindings, 0, 0, 0, 1, 1, 1, 1, 1, 1]
        fn = inst.lookup(name)
        fn.call(args)  # warm up (binds the instance)
        out = bindings.get(2).numpy(np.float32).reshape(m, n)
        assert np.allclose(out, a @ b, rtol=1e-4, atol=1e-4), "dispatch result differs from numpy"
        executable = inst.loaded.executable
        if label == "count":
            before = executable.instructions_executed()
            fn.call(args)
            results["instructions_per_call"] = executable.instructions_executed() - before
        else:  # best of 5 batches: the machine may be busy with other work
            best = float("inf")
            for _ in range(5):
                t0 = time.perf_counter()
                for _ in range(calls):
                    fn.call(args)
                best = min(best, (time.perf_counter() - t0) / calls)
            results["seconds_per_call"] = best
        results["entry"] = name
    results["instructions_per_second"] = results["instructions_per_call"] / results["seconds_per_call"]
    return results


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--entry", default="33x9x17")
    ns = p.parse_args(argv)
    r = run(ns.entry, ns.calls)
    print(f"{r['entry']}: {r['instructions_per_call']} instructions/call, "
          f"{r['seconds_per_call'] * 1e3:.2f} ms/call, {r['instructions_per_second'] / 1e6:.2f} M instructions/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
