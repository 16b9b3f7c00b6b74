"""What each quick tier costs per kernel on this host: the data behind lower.lazy.FIRST_TIERS.

For each model and tier, a fresh process loads the model with an empty code store, starts
every looped kernel on that tier (lazy.first_tier forced), lowers and compiles the units
one after another in the process (CPU seconds of each: lowering, LLVM), all before the first
call (not pipelined with it, as lazy.CompileAhead does), and runs that call on one thread with the workgroup trace on (runtime.exec.trace: each kernel's run
time). Then, per tier, compile time is fitted as a kernel's plus a flat loop's
(least squares; lower.work.flat_loops) and run time per buffer element access (the work
estimate's accesses; summed over all kernels), and the table lazy.first_tier uses now is
scored: compile + run summed over the kernels at its choice, against the best tier per
kernel. Compare the fitted table with lazy.FIRST_TIERS after a host or LLVM change.

    python -m bench.tier_costs                                   # ResNet-50-style 64 and 224, EfficientNet-Lite0
    python -m bench.tier_costs --models resnet64 --tiers baseline jammed
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from jitvm.lower import lazy

CHILD = r"""
import collections, ctypes, gc, json, os, sys, time
from bench.start_time import _specs
import jitvm
from jitvm.lower import lazy, unit_build, work
from jitvm.lower.llvm import compiler
from jitvm.runtime.exec.nativecode import workgroup_trace

model, tier = sys.argv[1], sys.argv[2]
lazy.first_tier = lambda accesses, flat_loops=0: tier
lowering, llvm_s, order = {}, [], []
lower = unit_build.UnitBuilder.lower
def timed_lower(self, unit, options):
    start = time.thread_time()
    out = lower(self, unit, options)
    lowering[unit.index] = time.thread_time() - start
    order.append(unit.index)
    return out
def one_by_one(jobs, count, target, in_workers=False, arrived=None):
    objects = []
    for i, (text, options) in enumerate(jobs):
        start = time.thread_time()
        objects.append(compiler.build_object(text, target, *options))
        llvm_s.append(time.thread_time() - start)
        if arrived:
            arrived(i, objects[-1])
    return objects
unit_build.UnitBuilder.lower = timed_lower
compiler.build_jobs = one_by_one
# the whole batch compiled before the sequence runs: a dispatch waiting in its stub for its
# kernel would count the wait as run time in the trace
compile_now = lazy.LazyExecutable._compile
lazy.LazyExecutable._compile = lambda self, units, workgroups=None, ahead=False: compile_now(self, units, workgroups)
vmfb, function, inputs = _specs()[model]
m = jitvm.load(vmfb())
m.function(function)(*inputs())
records = workgroup_trace().take()
ex = max((o for o in gc.get_objects() if isinstance(o, lazy.LazyExecutable)), key=lambda e: len(e.entries))
ordinal_of = {address: o for o, address in ex.entries.items()}
ordinal_of.update((ctypes.cast(f, ctypes.c_void_p).value, o) for o, f in ex._code.items())
run = collections.Counter()
for r in records[records["kind"] == 0]:  # split-loop chunks run inside their workgroup's record
    run[ordinal_of.get(int(r["function"]), -1)] += (int(r["end_ns"]) - int(r["start_ns"])) / 1e9
llvm_of = dict(zip(order, llvm_s))
rows = []
for u in ex.units:
    if u.tier is None or not ex.builder._loops(u):
        continue
    functions = [ex.loaded.verified.functions[o] for o in u.ordinals]
    rows.append({"unit": u.index, "tier": u.tier,
                 "accesses": sum(ex._per_call.get(f.ordinal, 0) * work.accesses_per_workgroup(f) for f in functions),
                 "flat_loops": sum(work.flat_loops(f) for f in functions),
                 "compile": lowering.get(u.index, 0.0) + llvm_of.get(u.index, 0.0),
                 "run": sum(run[o] for o in u.ordinals)})
print(json.dumps(rows))
"""


def measure(model: str, tier: str) -> dict[int, dict]:
    """unit index -> its row, for `model` with every looped kernel on `tier`."""
    with tempfile.TemporaryDirectory(prefix="jitvm-tier-costs-") as store:
        env = {**os.environ, "JITVM_CACHE_DIR": store, "JITVM_TIER": "auto", "JITVM_DETACHED_TIER_UP": "0",
               "JITVM_THREADS": "1", "JITVM_TRACE_WORKGROUPS": "1", "JITVM_COMPILE_HERE": "1"}
        r = subprocess.run([sys.executable, "-c", CHILD, model, tier], env=env, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"{model} at {tier} failed: {r.stderr.strip().splitlines()[-1:]}")
    rows = json.loads(r.stdout.strip().splitlines()[-1])
    return {row["unit"]: row for row in rows if row["accesses"]}


def fit(rows: list[dict]) -> tuple[float, float, float]:
    """(a kernel's compile s, a flat loop's, run s per access) over `rows`."""
    x = np.array([[1.0, row["flat_loops"]] for row in rows])
    (per_kernel, per_flat_loop), *_ = np.linalg.lstsq(x, np.array([row["compile"] for row in rows]), rcond=None)
    per_access = sum(row["run"] for row in rows) / sum(row["accesses"] for row in rows)
    return per_kernel, max(per_flat_loop, 0.0), per_access


def score(costs: dict[str, dict[int, dict]], table: dict) -> tuple[float, float]:
    """Compile + run summed over a model's kernels at `table`'s choice, and at the best tier each."""
    chosen = best = 0.0
    for unit, row in next(iter(costs.values())).items():
        total = {t: costs[t][unit]["compile"] + costs[t][unit]["run"] for t in costs if unit in costs[t]}
        pick = min(table, key=lambda t: table[t][0] + row["flat_loops"] * table[t][1] + row["accesses"] * table[t][2])
        chosen += total.get(pick, float("nan"))
        best += min(total.values())
    return chosen, best


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tier_costs", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", default=["resnet64", "resnet224", "efficientnet_lite0"])
    p.add_argument("--tiers", nargs="*", default=list(lazy.FIRST_TIERS), help="quick tiers (lazy.FIRST_TIERS)")
    args = p.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} (1 min); one thread; CPU seconds")
    costs = {m: {t: measure(m, t) for t in args.tiers} for m in args.models}
    print("| tier | compile: a kernel | + a flat loop | run: per access | lazy.FIRST_TIERS now |")
    print("|---|---|---|---|---|")
    for t in args.tiers:
        k, f, a = fit([row for m in costs for row in costs[m][t].values()])
        print(f"| {t} | {k:.3f} s | {f:.3f} s | {a * 1e9:.3f} ns | {lazy.FIRST_TIERS.get(t)} |")
    print("| model | kernels | compile + run at lazy.first_tier's choice | at the best tier per kernel |")
    print("|---|---|---|---|")
    table = {t: v for t, v in lazy.FIRST_TIERS.items() if t in args.tiers}
    for m in args.models:
        chosen, best = score(costs[m], table)
        print(f"| {m} | {len(next(iter(costs[m].values())))} | {chosen:.2f} s | {best:.2f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
