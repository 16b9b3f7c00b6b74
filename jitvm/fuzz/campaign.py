"""A long fuzzing campaign outside pytest: `python -m jitvm.fuzz.campaign [options]`.

Programs come from seeded `RandomChooser`s (seed, seed + 1, ...), so any program is
regenerated from its seed and kind alone; a mismatching one is written to --save (module
text and calls) for minimising by hand. Prints programs, calls, traps and mismatches per
kind.

    python -m jitvm.fuzz.campaign --kind all --programs 2000 --seed 0 --save /tmp/fuzz
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

from jitvm.fallback_interp import InterpreterBackend
from jitvm.lower.backend import JitBackend

from .generators.emit import RandomChooser
from .generators.program import KINDS, generate
from .oracles.differential import run_program


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", default="all", choices=("all",) + KINDS)
    ap.add_argument("--programs", type=int, default=200, help="programs per kind")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save", type=Path, default=None, help="directory for mismatching programs")
    args = ap.parse_args(argv)
    backends = {"interp": InterpreterBackend(), "jit": JitBackend(use_cache=False, progress=False)}
    kinds = KINDS if args.kind == "all" else (args.kind,)
    total = Counter()
    for kind in kinds:
        stats = Counter()
        start = time.perf_counter()
        for seed in range(args.seed, args.seed + args.programs):
            program = generate(RandomChooser(f"{kind}/{seed}"), kind)
            try:
                report = run_program(program, backends)
            except Exception as e:  # noqa: BLE001 - a crash of the harness or a backend is a finding too
                stats["errors"] += 1
                print(f"ERROR {kind} seed {seed}: {type(e).__name__}: {e}", flush=True)
                continue
            stats["programs"] += 1
            stats["calls"] += report.calls
            stats["traps"] += report.traps
            if report.problems:
                stats["mismatching programs"] += 1
                print(f"MISMATCH {kind} seed {seed}:\n  " + "\n  ".join(report.problems[:3]), flush=True)
                if args.save:
                    args.save.mkdir(parents=True, exist_ok=True)
                    (args.save / f"{kind}-{seed}.txt").write_text(
                        "// " + "\n// ".join("\n".join(report.problems).splitlines()) + "\n" + program.listing())
        stats["seconds"] = round(time.perf_counter() - start)
        print(f"{kind}: " + ", ".join(f"{k} {v}" for k, v in stats.items()), flush=True)
        total.update(stats)
    print("total: " + ", ".join(f"{k} {v}" for k, v in total.items()))
    return 1 if total["mismatching programs"] else 0


if __name__ == "__main__":
    sys.exit(main())
