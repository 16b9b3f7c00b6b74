"""Call times after tier-up against today's compile-everything JIT, in one process.

Each model is loaded twice: with the JIT that compiles every function at load with the full
pipeline (what jitvm.load did before lazy compilation), and with tier="auto" (baseline
first, then the background tier-up, waited for here). Calls alternate (bench.alternate),
warm-up excluded, medians; outputs must match bit for bit. Also printed: the first call of
the tier="auto" load (baseline code) and how long the tier-up took.

    python -m bench.tier_ab                      # the bundled CNN and ResNet-50-style 64
    python -m bench.tier_ab --models cnn --rounds 40
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

import jitvm
from bench.alternate import alternating_medians
from bench.start_time import _specs
from jitvm.api import _jit_backend
from jitvm.lower import lazy


def _bits(out) -> list[bytes]:
    return [np.asarray(o).tobytes() for o in (out if isinstance(out, tuple) else (out,))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tier_ab", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", default=["cnn", "resnet64"], help="tiny, cnn, resnet64")
    p.add_argument("--rounds", type=int, default=20)
    args = p.parse_args(argv)
    os.environ["JITVM_CACHE_DIR"] = tempfile.mkdtemp(prefix="jitvm-tier-ab-")  # every tier compiled here and now
    specs = _specs()
    print(f"load average {os.getloadavg()[0]:.2f} (1 min); medians of {args.rounds} alternating calls")
    print("| model | compile at load (today) | tier auto after tier-up | ratio | auto: first call | tier-up wait |")
    print("|---|---|---|---|---|---|")
    for name in args.models:
        vmfb_fn, function, inputs_fn = specs[name]
        path, inputs = vmfb_fn(), inputs_fn()
        today = jitvm.load(path, backend=_jit_backend()).function(function)
        auto = jitvm.load(path, tier="auto").function(function)
        start = time.perf_counter()
        first = auto(*inputs)
        first_s = time.perf_counter() - start
        auto(*inputs)  # called again: hot
        start = time.perf_counter()
        lazy.wait_for_tier_up()
        waited = time.perf_counter() - start
        if _bits(first) != _bits(today(*inputs)) or _bits(auto(*inputs)) != _bits(today(*inputs)):
            raise SystemExit(f"{name}: tier auto and today's JIT differ")
        medians = alternating_medians({"today": today, "auto": auto}, inputs, args.rounds)
        print(f"| {name} | {medians['today'] * 1e3:.3f} ms | {medians['auto'] * 1e3:.3f} ms | "
              f"{medians['auto'] / medians['today']:.3f} | {first_s * 1e3:.0f} ms | {waited:.1f} s |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
