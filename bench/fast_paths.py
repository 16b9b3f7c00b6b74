"""What the HAL's native fast paths save per call: the same model with and without, one process.

Two JIT instances load each model, one with `jitvm.runtime.modules.hal.fastpath` disabled
while its imports are bound (as `JITVM_HAL_FAST_PATHS=0` does), so its host code calls the
Python implementations of hal.buffer_view.assert, hal.buffer_view.buffer, hal.buffer.assert
and hal.device.allocator. Calls alternate between the two in batches (bench.alternate);
medians, warm-up excluded.

    python -m bench.fast_paths                          # the small models, where host code dominates
    python -m bench.fast_paths --models matmul128 --rounds 200
"""

from __future__ import annotations

import argparse
import sys

from bench.alternate import alternating_medians
from bench.build import compile_model
from bench.models import suite
from bench.run import select

DEFAULT_MODELS = ["softmax1x1000", "matmul128", "dwconv", "mlp", "conv3x3_56x56x64_64"]


def main(argv: list[str] | None = None) -> int:
    import jitvm
    from jitvm.runtime.modules.hal import fastpath

    p = argparse.ArgumentParser(prog="python -m bench.fast_paths", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", default=DEFAULT_MODELS, help="model names or prefixes")
    p.add_argument("--resolution", type=int, default=64)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=60, help="batches per way, alternating")
    p.add_argument("--batch", type=int, default=10, help="calls per batch")
    args = p.parse_args(argv)
    print("| model | Python queries us | fast paths us | saved us | speed-up |")
    print("|---|---|---|---|---|")
    for spec in select(suite(args.resolution), args.models):
        vmfb = str(compile_model(spec, "vmvx", log=lambda *a: None))
        inputs = spec.make_inputs()
        fns = {}
        for way, enabled in (("python", False), ("fast", True)):
            fastpath.enabled = enabled
            try:
                fns[way] = jitvm.load(vmfb, threads=args.threads).function(spec.function)
            finally:
                fastpath.enabled = True
        medians = alternating_medians(fns, inputs, args.rounds, args.batch, warm_up=5)
        python, fast = medians["python"], medians["fast"]
        print(f"| {spec.name} | {python * 1e6:.1f} | {fast * 1e6:.1f} | {(python - fast) * 1e6:.1f} | "
              f"{python / fast:.3f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
