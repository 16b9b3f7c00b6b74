"""What native command-buffer replay saves: the same model with replay and without, in one process.

Two JIT backends load each model; the second one's runner hides `prepare`, so its command
buffers run dispatch by dispatch from Python (hal.command_buffer) as before replay existed.
Calls alternate between the two (bench.alternate); medians, warm-up excluded, per thread count.

    python -m bench.replay_effect                          # ResNet-50-style 64x64 and a few kernels
    python -m bench.replay_effect --models resnet50 --rounds 60
"""

from __future__ import annotations

import argparse
import os
import sys

from bench.alternate import alternating_medians
from bench.build import compile_model
from bench.models import suite
from bench.run import select

DEFAULT_MODELS = ["softmax1x1000", "matmul128", "mlp", "conv3x3_56x56x64_64_bias_relu", "resnet50"]


def main(argv: list[str] | None = None) -> int:
    import jitvm
    from jitvm.lower.backend import JitBackend

    p = argparse.ArgumentParser(prog="python -m bench.replay_effect", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", default=DEFAULT_MODELS, help="model names or prefixes")
    p.add_argument("--resolution", type=int, default=64)
    p.add_argument("--threads", type=int, nargs="*", default=sorted({1, os.cpu_count() or 1}))
    p.add_argument("--rounds", type=int, default=40, help="calls per way, alternating")
    args = p.parse_args(argv)
    print("| model | threads | dispatches from Python ms | replayed ms | saved ms | speed-up |")
    print("|---|---|---|---|---|---|")
    for spec in select(suite(args.resolution), args.models):
        vmfb = str(compile_model(spec, "vmvx", log=lambda *a: None))
        inputs = spec.make_inputs()
        for threads in args.threads:
            fns = {}
            for way in ("python", "replay"):
                backend = JitBackend(threads=threads, progress=False)
                if way == "python":
                    backend.dispatch_runner().prepare = None  # no native replay: hal.prepared declines
                fns[way] = jitvm.load(vmfb, backend=backend).function(spec.function)
            medians = alternating_medians(fns, inputs, args.rounds)
            python, replay = medians["python"], medians["replay"]
            print(f"| {spec.name} | {threads} | {python * 1e3:.3f} | {replay * 1e3:.3f} | "
                  f"{(python - replay) * 1e3:.3f} | {python / replay:.3f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
