"""How long a user waits: `import jitvm`, then load and first result, in fresh processes.

Each measurement is a new Python process (nothing of the JIT survives in memory), timed from
its first line: `import jitvm`, `jitvm.load`, the first call with its result on the host.
Four ways per model: an empty code store (cold: everything compiles, the runtime's own
native code too), a store holding only the runtime's code (new model: jitvm ran before,
this model never), the store a cold load left (warm), and a bundle `jitvm compile` wrote
(`compiled=`, an empty store beside it: nothing may compile). The processes load with
--tier (default auto, what jitvm.load does; full waits for optimised code). What a process
left to tier up when it ended is compiled by a detached worker (lower.handoff), as for a
user; each run waits for it before the next starts (not timed; the last column says how
long it took; --no-detached turns it off, as JITVM_DETACHED_TIER_UP=0 does). Medians over
--repeats processes; the load average is printed, since compilation time grows with it.
Children write and use .pyc files as an installed jitvm does (jitvm's sources are compiled
first, PYTHONDONTWRITEBYTECODE removed from their environment); --dont-write-bytecode sets
it instead, so every process compiles jitvm's Python sources again (0.4-0.5 s here).

    python -m bench.start_time                     # tiny, the bundled CNN, ResNet-50-style 64
    python -m bench.start_time --models resnet224 minilm_l6 efficientnet_lite0 --ways cold
    python -m bench.start_time --models cnn --repeats 5 --tier full
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.build import compile_model
from bench.host_overhead import models as small_models
from bench.models import resnet50
from jitvm.lower import handoff

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
t_np, c_np = time.perf_counter(), time.process_time()
import jitvm
t1, c1 = time.perf_counter(), time.process_time()
job = json.loads(sys.argv[1])
m = jitvm.load(job["vmfb"], compiled=job.get("compiled"))
t2, c2 = time.perf_counter(), time.process_time()
inputs = list(np.load(job["inputs"]).values())
out = m.function(job["function"])(*inputs)
out = [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]
t3, c3 = time.perf_counter(), time.process_time()
from jitvm.lower.backend import STATS
from jitvm.runtime.native import engine
print(json.dumps({"import_s": t1 - t_np, "load_s": t2 - t1, "first_call_s": t3 - t2, "first_result_s": t3 - t_np,
                  "load_cpu_s": c2 - c1, "first_result_cpu_s": c3 - c_np,
                  "compiled_modules": STATS["compiled_modules"], "runtime_compiled": engine.STATS["runtime_compiled"]}))
"""


WAYS = ("cold", "new model", "warm", "bundle")


def _specs() -> dict[str, tuple[str, str, object]]:
    """name -> (vmfb, function, inputs maker); the models are built (or taken from bench's
    build cache) only when chosen."""
    from bench import exported

    def built(spec):
        return (lambda: str(compile_model(spec(), "vmvx", log=lambda *a: None)), spec().function,
                lambda: spec().make_inputs(0))

    cnn = Path(__file__).resolve().parents[1] / "jitvm" / "examples" / "cnn.vmfb"
    return {
        "tiny": built(lambda: small_models()["mm_relu_4x8x16"]),
        "cnn": (lambda: str(cnn), "predict", lambda: [np.zeros((1, 28, 28, 1), np.float32)]),
        "resnet64": built(lambda: resnet50(64)),
        "resnet224": built(lambda: resnet50(224)),
        "minilm_l6": built(exported.encoder),
        "efficientnet_lite0": built(exported.efficientnet_lite0),
    }


def _environment(dont_write_bytecode: bool) -> dict[str, str]:
    """The children's environment: .pyc files written and used (an installed jitvm's are
    compiled at install), or none (PYTHONDONTWRITEBYTECODE, every process compiles)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if dont_write_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        package = Path(__file__).resolve().parents[1] / "jitvm"
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], env=env, check=True)
    return env


def _run(job: dict, cache_dir: Path) -> dict:
    env = {**job["env"], "JITVM_CACHE_DIR": str(cache_dir), "JITVM_TIER": job["tier"],
           handoff.ENV: "1" if job["detached"] else "0"}
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps({k: v for k, v in job.items() if k != "env"})], env=env, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"child failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    start = time.perf_counter()
    handoff.wait(directory=cache_dir / handoff.JOBS)
    out["detached_s"] = time.perf_counter() - start
    return out


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.start_time", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", default=None,
                   help="tiny, cnn, resnet64, resnet224, minilm_l6, efficientnet_lite0 (default: the first three)")
    p.add_argument("--ways", nargs="*", choices=WAYS, default=list(WAYS), help="which ways to measure (default: all)")
    p.add_argument("--repeats", type=int, default=3, help="fresh processes per way")
    p.add_argument("--tier", choices=("auto", "baseline", "full"), default="auto", help="jitvm.load's tier")
    p.add_argument("--no-detached", action="store_true", help="no tier-up outlives a process")
    p.add_argument("--dont-write-bytecode", action="store_true",
                   help="children run with PYTHONDONTWRITEBYTECODE: no .pyc, every process compiles jitvm's sources")
    args = p.parse_args(argv)
    specs = _specs()
    chosen = args.models or ["tiny", "cnn", "resnet64"]
    env = _environment(args.dont_write_bytecode)
    print(f"load average {os.getloadavg()[0]:.2f} (1 min); medians of {args.repeats} fresh processes; tier {args.tier}")
    if args.dont_write_bytecode:
        print("note: PYTHONDONTWRITEBYTECODE is set, so every process compiles jitvm's Python sources again "
              "(0.4-0.5 s here); an installed jitvm has them compiled")
    print("| model | way | import jitvm | load (CPU) | first call | first result (CPU) | modules compiled | detached tier-up |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="jitvm-start-") as tmp:
        work = Path(tmp)
        for name in chosen:
            vmfb_fn, function, inputs_fn = specs[name]
            job = {"vmfb": vmfb_fn(), "function": function, "inputs": str(work / f"{name}.npz"), "tier": args.tier,
                   "detached": not args.no_detached, "env": env}
            np.savez(job["inputs"], *inputs_fn())
            ways: dict[str, list[dict]] = {way: [] for way in args.ways}
            for k in range(args.repeats if {"cold", "new model", "warm"} & set(args.ways) else 0):
                store = work / f"{name}-store-{k}"
                cold = _run(job, store)  # the warm and new-model ways start from its store
                ways.get("cold", []).append(cold)
                if "new model" in ways:
                    runtime_only = work / f"{name}-runtime-{k}"
                    for entry in store.glob("*/rt*"):  # the runtime's own code (runtime.native.engine)
                        shutil.copytree(entry, runtime_only / entry.parent.name / entry.name)
                    ways["new model"].append(_run(job, runtime_only))
                    shutil.rmtree(runtime_only, ignore_errors=True)
                if "warm" in ways:
                    ways["warm"].append(_run(job, store))
                shutil.rmtree(store, ignore_errors=True)
            if "bundle" in ways:
                bundle = work / f"{name}.jvc"
                build_store = work / f"{name}-bundle-store"
                r = subprocess.run([sys.executable, "-m", "jitvm", "compile", job["vmfb"], "-o", str(bundle)],
                                   env={**env, "JITVM_CACHE_DIR": str(build_store)}, capture_output=True, text=True)
                if r.returncode:
                    raise SystemExit(f"jitvm compile failed: {r.stderr.strip()}")
                for k in range(args.repeats):
                    ways["bundle"].append(_run({**job, "compiled": str(bundle)}, work / f"{name}-empty-{k}"))
            for way, runs in ways.items():
                compiled = max(r["compiled_modules"] + r["runtime_compiled"] for r in runs)
                print(f"| {name} | {way} | {_median(runs, 'import_s') * 1e3:.0f} ms | {_median(runs, 'load_s') * 1e3:.0f} ms"
                      f" ({_median(runs, 'load_cpu_s') * 1e3:.0f} ms) | {_median(runs, 'first_call_s') * 1e3:.0f} ms"
                      f" | {_median(runs, 'first_result_s'):.2f} s ({_median(runs, 'first_result_cpu_s'):.2f} s)"
                      f" | {compiled} | {_median(runs, 'detached_s'):.1f} s |", flush=True)
            print(f"load average {os.getloadavg()[0]:.2f} (1 min) after {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
