"""Verification time against decoding time, for every corpus module and a growing synthetic one.

    python bench/verify_time.py [--repeat 7] [--no-scaling]

Decoding is the floor: verify_module decodes every function and then walks the instructions
twice (blocks, then operands), so its time should stay a small constant multiple of the
decoding time on every module, and grow linearly with the size of a function. The first
table is per corpus module (main module and VMVX executables), the second times one function
of N straight-line blocks assembled with iree-as-module for growing N.
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jitvm.frontend.decode import decode_function  # noqa: E402
from jitvm.frontend.module import load_module  # noqa: E402
from jitvm.fuzz.corpus import Corpus, require_tool  # noqa: E402
from jitvm.verify import verify_module  # noqa: E402

CORPUS = Corpus(Path(__file__).resolve().parent.parent / "tests" / "corpus")  # the tests' corpus


def best_of(repeat: int, fn) -> float:
    """Best wall time of `repeat` runs with the cyclic GC paused, as timeit does: otherwise
    collections triggered by the decoder's allocations make big functions look superlinear."""
    best = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeat):
            t = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t)
    finally:
        gc.enable()
    return best


def measure(module, repeat: int) -> dict:
    functions = [module.function_bytes(i) for i in range(len(module.functions))]
    count = sum(len(decode_function(code)) for code in functions)
    decode = best_of(repeat, lambda: [decode_function(code) for code in functions])
    verify = best_of(repeat, lambda: verify_module(module))
    return {"functions": len(functions), "bytes": sum(len(c) for c in functions), "instructions": count,
            "decode": decode, "verify": verify}


def row(label: str, r: dict) -> str:
    n = max(r["instructions"], 1)
    return (f"{label:58} {r['functions']:5} {r['bytes']:8} {r['instructions']:7} {r['decode'] * 1e3:9.2f} "
            f"{r['verify'] * 1e3:9.2f} {r['verify'] / r['decode']:7.2f} {r['verify'] / n * 1e6:8.2f}")


HEADER = (f"{'module':58} {'funcs':>5} {'bytes':>8} {'instrs':>7} {'decode ms':>9} {'verify ms':>9} "
          f"{'ratio':>7} {'us/ins':>8}")


def corpus_table(repeat: int) -> list[str]:
    lines = [HEADER]
    totals = {"functions": 0, "bytes": 0, "instructions": 0, "decode": 0.0, "verify": 0.0}
    for cm in CORPUS.build():
        for path in (cm.vmfb, *cm.executables):
            label = cm.name if path == cm.vmfb else f"{cm.name} [{path.name[:30]}]"
            r = measure(load_module(path), repeat)
            for k in totals:
                totals[k] += r[k]
            lines.append(row(label, r))
    lines.append(row("total", totals))
    return lines


def synthetic(blocks: int) -> str:
    """One function: `blocks` blocks of three adds and a branch to the next, then a return."""
    body = []
    for b in range(blocks):
        body += [f"^bb{b}:", "  %i2 = vm.add.i32 %i0, %i1", "  %i3 = vm.add.i32 %i2, %i1",
                 "  %i4 = vm.add.i32 %i3, %i2", f"  vm.br ^bb{b + 1}(%i4->%i0)"]
    body += [f"^bb{blocks}:", "  vm.return %i0"]
    return "\n".join(["vm.module @scale version 0", "vm.export @f",
                      "vm.func @f(%i0 : i32, %i1 : i32) -> (i32) {", *body, "}", ""])


def scaling_table(repeat: int, sizes=(100, 1000, 10000, 30000)) -> list[str]:  # block_count is an int16
    lines = [HEADER]
    with tempfile.TemporaryDirectory() as d:
        for n in sizes:
            src, out = Path(d) / f"s{n}.vmasm", Path(d) / f"s{n}.vmfb"
            src.write_text(synthetic(n))
            subprocess.run([require_tool("iree-as-module"), f"--output={out}", str(src)], check=True,
                           capture_output=True)
            lines.append(row(f"synthetic: {n} blocks in one function", measure(load_module(out), repeat)))
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=7, help="best of this many runs")
    p.add_argument("--no-scaling", action="store_true", help="skip the synthetic growing module")
    args = p.parse_args(argv)
    print("\n".join(corpus_table(args.repeat)))
    if not args.no_scaling:
        print()
        print("\n".join(scaling_table(max(3, args.repeat // 2))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
