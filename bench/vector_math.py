"""Loops of libm functions with and without their vector forms (runtime.native.vecmath).

Softmax 12x128x128 (attention's, two vm.exp.f32 per element as IREE lowers it) and GELU
128x1536 (erf), compiled for VMVX, run by the JIT on one thread with vector math on and off
(two backends in one process, alternating batches) and by IREE's runtime (local-sync) for
the ratio; every output is checked bit for bit against IREE's first.

    nice python -m bench.vector_math [--rounds 61] [--batch 1]

JITVM_VECTOR_MATH=0 turns the vector forms off for a whole process (both JIT columns then
call libm per element).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

SOFTMAX = """
func.func @softmax(%x: tensor<{shape}xf32>) -> tensor<{shape}xf32> {
  %init = tensor.empty() : tensor<{shape}xf32>
  %r = linalg.softmax dimension(2) ins(%x : tensor<{shape}xf32>) outs(%init : tensor<{shape}xf32>) -> tensor<{shape}xf32>
  return %r : tensor<{shape}xf32>
}
"""

GELU = """
func.func @gelu(%x: tensor<{shape}xf32>) -> tensor<{shape}xf32> {
  %init = tensor.empty() : tensor<{shape}xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<{shape}xf32>) outs(%init : tensor<{shape}xf32>) {
  ^bb0(%a: f32, %o: f32):
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %rsqrt2 = arith.constant 0.70710678118654752 : f32
    %s = arith.mulf %a, %rsqrt2 : f32
    %e = math.erf %s : f32
    %p = arith.addf %e, %one : f32
    %h = arith.mulf %a, %half : f32
    %y = arith.mulf %h, %p : f32
    linalg.yield %y : f32
  } -> tensor<{shape}xf32>
  return %r : tensor<{shape}xf32>
}
"""

PROGRAMS = {"softmax": (SOFTMAX, (12, 128, 128)), "gelu": (GELU, (128, 1536))}


def program_text(name: str, shape=None) -> str:
    """`name`'s MLIR at `shape` (default: the benchmark's)."""
    text, default = PROGRAMS[name]
    shape = shape or default
    return text.replace("{shape}", "x".join(map(str, shape))).replace("dimension(2)", f"dimension({len(shape) - 1})")


def compile_program(name: str, directory: Path | None = None, shape=None) -> Path:
    """`name`'s module for VMVX (cached under bench/.cache, or in `directory` when given)."""
    from bench.build import TARGETS, compile_file, _iree_compile
    text = program_text(name, shape)
    if directory is not None:
        src, out = directory / f"{name}.mlir", directory / f"{name}.vmfb"
        src.write_text(text)
        _iree_compile(src, TARGETS["vmvx"], out, name)
        return out
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / f"{name}.mlir"
        src.write_text(text)
        return compile_file(src, TARGETS["vmvx"], f"vector-math-{name}", log=lambda *_: None)


def inputs(name: str, seed: int = 0, shape=None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape or PROGRAMS[name][1]) * 3).astype(np.float32)


def jit_backend(vector_math: bool, threads: int = 1):
    from jitvm.lower.backend import JitBackend
    return JitBackend(threads=threads, progress=False, loop_steps={"vector_math": vector_math})


def loop_medians(rounds: int, size: int = 4096) -> None:
    """ns per element of the plain loops out[i] = f(x[i]) (vector_math.Maps), by kind: the
    AVX-512 forms (16 lanes) where the host has them."""
    from bench.alternate import alternating_medians
    from jitvm.lower.llvm.vector_math import Maps
    from jitvm.runtime.native import target as targets, vecmath
    maps = Maps(wide=targets.wide_vectors(targets.host()))
    rng = np.random.default_rng(0)
    samples = {"expf": -np.abs(rng.standard_normal(size)) * 3, "erff": rng.standard_normal(size) * 2.1,
               "logf": np.abs(rng.standard_normal(size)) * 3 + 1e-3}
    for name in vecmath.FUNCTIONS:
        x = samples.get(name, rng.standard_normal(size)).astype(np.float32)
        out = np.empty_like(x)
        fns = {kind: (lambda k: lambda: maps.run(k, name, x, out))(kind) for kind in maps.kinds}
        medians = alternating_medians(fns, (), rounds, batch=20, clock=time.process_time)  # one thread: CPU time
        print(f"loop {name} ({size} elements in cache): "
              + ", ".join(f"{k} {v / size * 1e9:.2f} ns/element" for k, v in medians.items()))


def main(argv=None) -> int:
    import iree.runtime as ireert
    import jitvm
    from bench.alternate import alternating_medians
    from jitvm.lower.llvm import vector_math

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=61)
    p.add_argument("--batch", type=int, default=1, help="calls per timed batch")
    p.add_argument("--programs", nargs="*", default=list(PROGRAMS))
    p.add_argument("--loops", action="store_true", help="also time the bare loops of each function")
    args = p.parse_args(argv)
    print(f"vector math available on this host: {vector_math.available()}; load {os.getloadavg()[0]:.2f}")
    if args.loops:
        loop_medians(args.rounds)
    scalar_be, vector_be = jit_backend(False), jit_backend(True)
    for name in args.programs:
        path = compile_program(name)
        x = inputs(name)
        cfg = ireert.Config("local-sync")
        ctx = ireert.SystemContext(config=cfg)
        ctx.add_vm_module(ireert.VmModule.copy_buffer(ctx.instance, path.read_bytes()))
        iree_fn = ctx.modules.module[name]
        want = np.asarray(iree_fn(x))
        fns = {"iree local-sync": lambda: iree_fn(x)}
        for label, be in (("jit scalar libm", scalar_be), ("jit vector math", vector_be)):
            fn = jitvm.load(str(path), backend=be, driver="local-sync")[name]
            got = np.asarray(fn(x))
            assert got.tobytes() == want.tobytes(), f"{name}: {label} differs from IREE"
            fns[label] = (lambda f: lambda: f(x))(fn)
        medians = alternating_medians(fns, (), args.rounds, batch=args.batch)
        base = medians["iree local-sync"]
        print(f"{name}: " + ", ".join(f"{k} {v * 1e3:.2f} ms ({v / base:.2f}x IREE vmvx)" for k, v in medians.items()))
    print(f"load after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
