"""The JIT's loop optimisations one step at a time, each against IREE's interpreter in one run.

    python -m bench.lowering_steps                       # matmul128 and the 3x3 conv
    python -m bench.lowering_steps --models resnet50 --resolution 32 --repeats 5

Steps (each includes the ones before it):
  checked     every op lowered with its own checks (bounds, alignment, null, read-only)
  versioned   loop nests guarded once on entry, the fast copy free of per-access checks
  jammed      the parallel loop around a reduction unrolled and jammed (up to 64 copies)
  vectorised  fast-copy indices rebuilt from their affine form, SLP vectorisation on
  blocked     register blocking: the jammed loop's parent jammed too (4 x 16 copies)

All run one thread (JITVM_THREADS=1 is set before jitvm is imported), on the same inputs,
in the same process, alternating, medians of the timed repetitions after a warm-up call;
results must be bit-identical to IREE's. The JIT's disk cache is not used (each step is
compiled here; compile times are printed too).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ["JITVM_THREADS"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from bench import build  # noqa: E402
from bench.models import suite  # noqa: E402

STEPS = {
    "checked": {"version_loops": False, "jam_loops": False, "affine_indices": False, "slp": False},
    "versioned": {"jam_loops": False, "affine_indices": False, "slp": False},
    "jammed": {"jam_outer": False, "affine_indices": False, "slp": False},
    "vectorised": {"jam_outer": False},
    "blocked": {},
}


def _iree(path: Path, function: str):
    import iree.runtime as rt

    config = rt.Config("local-sync")
    ctx = rt.SystemContext(config=config)
    ctx.add_vm_module(rt.VmModule.mmap(config.vm_instance, str(path)))
    fn = getattr(ctx.modules.module, function)
    return lambda *args: fn(*args), (config, ctx)


def _jitvm(path: Path, function: str, steps: dict):
    import jitvm
    from jitvm.lower.backend import JitBackend

    t = time.perf_counter()
    module = jitvm.load(str(path), backend=JitBackend(use_cache=False, progress=False, loop_steps=steps))
    return module[function], time.perf_counter() - t


def _outputs(result) -> list[np.ndarray]:
    items = result if isinstance(result, tuple) else (result,)
    return [np.asarray(x.to_host() if hasattr(x, "to_host") else x) for x in items]


def measure(spec, repeats: int) -> None:
    path = build.compile_model(spec, "vmvx", log=lambda *a: None)
    inputs = spec.make_inputs()
    runners = {}
    iree_fn, keep = _iree(path, spec.function)
    runners["IREE interpreter"] = iree_fn
    compile_times = {}
    for name, steps in STEPS.items():
        runners[name], compile_times[name] = _jitvm(path, spec.function, steps)
    reference = _outputs(runners["IREE interpreter"](*inputs))
    for name, fn in runners.items():  # warm-up, and the results check
        got = _outputs(fn(*inputs))
        same = all(a.dtype == b.dtype and a.tobytes() == b.tobytes() for a, b in zip(got, reference))
        if not same:
            raise SystemExit(f"{spec.name}: {name} differs from IREE's interpreter")
    times = {name: [] for name in runners}
    for _ in range(repeats):
        for name, fn in runners.items():
            t = time.perf_counter()
            fn(*inputs)
            times[name].append(time.perf_counter() - t)
    base = float(np.median(times["IREE interpreter"]))
    print(f"\n{spec.name} (one thread, median of {repeats}; bit-identical to IREE's interpreter)")
    print(f"| step | time | vs IREE interpreter | compile |")
    print("|---|---|---|---|")
    for name in runners:
        t = float(np.median(times[name]))
        ct = f"{compile_times[name]:.2f} s" if name in compile_times else ""
        print(f"| {name} | {t * 1e3:.3f} ms | {base / t:.1f}x | {ct} |")
    del keep


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=["matmul128", "conv3x3_56x56x64_64_bias_relu"])
    ap.add_argument("--resolution", type=int, default=32, help="resnet50-style input size")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    specs = suite(args.resolution)
    for name in args.models:
        matches = [s for n, s in specs.items() if n == name or n.startswith(name)]
        if not matches:
            raise SystemExit(f"no model {name!r}; have {', '.join(specs)}")
        measure(matches[0], args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
