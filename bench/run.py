"""The benchmark suite: build (cached), run every configuration, check, tabulate, chart.

    python -m bench.run                       # the suite, resnet50-style at 64x64
    python -m bench.run --quick               # a smoke run: fewer models and repetitions
    python -m bench.run --models resnet50 --resolution 224 --out bench/results/resnet50_224

Per model, each configuration runs in a fresh process (bench/measure.py): IREE's VMVX
interpreter on local-sync (the reference every ratio divides) and local-task, jitvm's JIT
on one thread and on all cores, IREE's llvm-cpu code on local-sync and local-task (the
native ceiling), and the same llvm-cpu module under jitvm ("jitvm host + IREE llvm-cpu
kernels": jitvm compiles the host code and runs IREE's kernels on its executor) on one
thread and on all. The all-cores JIT process starts with an empty JITVM_CACHE_DIR (its load is
the cold, compiling load); the one-thread process reuses that cache (the cached load).
Every output is checked against local-sync's; the llvm-cpu module's outputs under jitvm
must equal IREE's llvm-cpu local-sync outputs bit for bit (the same machine code ran). `--rounds` alternates the configurations
several times and pools their samples, so slow drifts in machine load hit all alike.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench import compare, machine, report
from bench.build import CACHE, compile_model
from bench.models import ModelSpec, suite

BENCH = Path(__file__).resolve().parent
THREADS = os.cpu_count() or 1
QUICK_MODELS = ("matmul128", "conv3x3_56x56x64_64_bias_relu", "softmax1x1000", "mlp", "resnet50")


@dataclass(frozen=True)
class Config:
    key: str
    label: str
    engine: str  # "iree" or "jitvm"
    target: str  # iree-compile target of the module it runs
    driver: str = ""
    threads: int = 0
    rtol: float = compare.SAME_BYTECODE_RTOL


COLUMNS = [  # table order
    Config("interp-sync", "IREE interp local-sync", "iree", "vmvx", "local-sync"),
    Config("interp-task", f"IREE interp local-task ({THREADS} thr)", "iree", "vmvx", "local-task", threads=THREADS),
    Config("jit-1", "jitvm JIT 1 thr", "jitvm", "vmvx", threads=1),
    Config("jit-all", f"jitvm JIT {THREADS} thr", "jitvm", "vmvx", threads=THREADS),
    Config("llvm-sync", "IREE llvm-cpu local-sync", "iree", "llvm-cpu", "local-sync", rtol=compare.NATIVE_RTOL),
    Config("llvm-cpu", f"IREE llvm-cpu local-task ({THREADS} thr)", "iree", "llvm-cpu", "local-task",
           threads=THREADS, rtol=compare.NATIVE_RTOL),
    Config("jit-llvm-1", "jitvm host + IREE llvm-cpu kernels 1 thr", "jitvm", "llvm-cpu", threads=1,
           rtol=compare.NATIVE_RTOL),
    Config("jit-llvm-all", f"jitvm host + IREE llvm-cpu kernels {THREADS} thr", "jitvm", "llvm-cpu",
           threads=THREADS, rtol=compare.NATIVE_RTOL),
]
# jit-all first: the cold load
RUN_ORDER = ["interp-sync", "interp-task", "jit-all", "jit-1", "llvm-sync", "llvm-cpu", "jit-llvm-1", "jit-llvm-all"]
SAME_BITS = {"jit-llvm-1": "llvm-sync", "jit-llvm-all": "llvm-sync"}  # config -> the one it must equal exactly


def select(specs: dict[str, ModelSpec], names: list[str] | None) -> list[ModelSpec]:
    """Models by exact name or name prefix (`matmul` selects all three matmuls)."""
    if not names:
        return list(specs.values())
    chosen = []
    for n in names:
        hits = [s for k, s in specs.items() if k == n] or [s for k, s in specs.items() if k.startswith(n)]
        if not hits:
            raise SystemExit(f"unknown model {n!r}; available: {', '.join(specs)}")
        chosen += [h for h in hits if h not in chosen]
    return chosen


def run_job(job: dict, env_extra: dict, timeout: float) -> dict:
    env = {**os.environ, **env_extra}
    try:
        done = subprocess.run([sys.executable, "-m", "bench.measure", json.dumps(job)], cwd=BENCH.parent, env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        return {"error": f"exit {done.returncode}: {_exception_text(done.stderr)}"}
    return json.loads(lines[-1])


def _exception_text(stderr: str, limit: int = 600) -> str:
    """The exception a worker died of: from its `Type: message` line to the end (messages span lines)."""
    lines = stderr.strip().splitlines() or ["no output"]
    starts = [i for i, line in enumerate(lines) if re.match(r"^[\w.]+(Error|Exception|Trap)\b.*:", line)]
    text = " / ".join(line.strip() for line in lines[starts[-1] if starts else -1:])
    return text if len(text) <= limit else text[:limit] + " ..."


def run_model(spec: ModelSpec, args, work: Path) -> dict:
    configs = {c.key: c for c in COLUMNS}
    modules = {t: compile_model(spec, t, log=lambda s: print("  " + s, flush=True)) for t in ("vmvx", "llvm-cpu")}
    work.mkdir(parents=True, exist_ok=True)
    np.savez(work / "inputs.npz", *spec.make_inputs(args.seed))
    jit_cache = work / "jitvm-cache"
    shutil.rmtree(jit_cache, ignore_errors=True)
    results: dict[str, dict] = {}
    for rnd in range(args.rounds):
        for key in RUN_ORDER:
            c = configs[key]
            job = {"engine": c.engine, "driver": c.driver, "vmfb": str(modules[c.target]), "function": spec.function,
                   "inputs": str(work / "inputs.npz"), "outputs": str(work / f"{key}-{rnd}.npz"),
                   "repeats": args.repeats, "min_time": args.min_time, "budget": args.budget, "threads": c.threads}
            r = run_job(job, {"JITVM_CACHE_DIR": str(jit_cache)}, args.timeout)
            if rnd == 0:
                results[key] = r
            elif "per_call_s" in r and "per_call_s" in results.get(key, {}):
                for samples in ("per_call_s", "cpu_per_call_s"):
                    results[key][samples] += r[samples]
            print(f"  {key:12} " + (f"ERROR {r['error']}" if "error" in r else
                                    f"{np.median(r['per_call_s']) * 1e3:10.3f} ms  (load {r['load_s']:.2f} s, "
                                    f"{len(r['per_call_s'])} x {r['iterations']})"), flush=True)
    _check(spec, configs, results, work)
    shutil.rmtree(jit_cache, ignore_errors=True)
    cold, warm = results.get("jit-all", {}), results.get("jit-1", {})
    jit_load = {k: v for k, v in (("cold_s", cold.get("load_s")), ("warm_s", warm.get("load_s")),
                                  ("first_call_s", warm.get("first_call_s")), ("stats", cold.get("stats"))) if v is not None}
    return {"name": spec.name, "flops": spec.flops, "configs": results, "jit_load": jit_load}


def _check(spec: ModelSpec, configs: dict, results: dict, work: Path) -> None:
    ref_file = work / "interp-sync-0.npz"
    if "error" in results.get("interp-sync", {"error": 1}) or not ref_file.exists():
        return
    reference = list(np.load(ref_file).values())
    for key, r in results.items():
        if key == "interp-sync" or "error" in r:
            continue
        c = configs[key]
        outputs = list(np.load(work / f"{key}-0.npz").values())
        verdict = compare.check(reference, outputs, exact=spec.exact and c.target == "vmvx", rtol=c.rtol)
        r["check"], r["ok"] = verdict.text(), verdict.ok
        twin = SAME_BITS.get(key)
        if twin is not None and "error" not in results.get(twin, {"error": 1}):
            same = compare.check(list(np.load(work / f"{twin}-0.npz").values()), outputs, exact=True, rtol=0.0)
            r["check"] += f"; {'bit-exact' if same.ok else 'DIFFERS from'} {configs[twin].label}"
            r["ok"] = verdict.ok and same.ok
        if not verdict.ok:
            print(f"\n  !!!!! {spec.name} {c.label}: {verdict.text()} !!!!!\n", flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", help="model names or prefixes (default: all; --quick: a few)")
    p.add_argument("--repeats", type=int, help="timed repetitions per configuration (default 5, --quick 3)")
    p.add_argument("--resolution", type=int, help="resnet50-style input size (default 64, --quick 32)")
    p.add_argument("--quick", action="store_true", help="a smoke run: few models, few repetitions, resnet50 at 32")
    p.add_argument("--rounds", type=int, default=1, help="alternate all configurations this many times (default 1)")
    p.add_argument("--min-time", type=float, help="seconds per repetition; fast calls are batched (default 0.2)")
    p.add_argument("--budget", type=float, default=60.0,
                   help="seconds of timed calls per configuration: slow ones get fewer repetitions (at least 3)")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds before a configuration is abandoned")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--out", type=Path, help="directory for RESULTS.md, speedups.png, results.json "
                                            "(default bench/results; --quick: bench/.cache/quick-results)")
    args = p.parse_args(argv)
    args.repeats = args.repeats or (3 if args.quick else 5)
    args.resolution = args.resolution or (32 if args.quick else 64)
    args.min_time = args.min_time or (0.05 if args.quick else 0.2)
    args.out = args.out or (CACHE / "quick-results" if args.quick else BENCH / "results")
    if args.quick and not args.models:
        args.models = list(QUICK_MODELS)
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    specs = suite(args.resolution)
    chosen = select(specs, args.models)
    facts = machine.facts()
    work = CACHE / "runs" / time.strftime("%Y%m%d-%H%M%S")
    models = []
    for spec in chosen:
        print(f"{spec.name}", flush=True)
        models.append(run_model(spec, args, work / spec.name))
    results = {"command": "python -m bench.run " + shlex.join(argv), "facts": facts,
               "columns": [{"key": c.key, "label": c.label} for c in COLUMNS], "models": models,
               "notes": [f"IREE local-task uses --task_topology_group_count={THREADS}; jitvm's dispatch threads "
                         "are set with jitvm.load(..., threads=N); inputs are numpy arrays passed on every call, outputs fetched to numpy "
                         "inside the timed call, for every configuration alike",
                         f"repetitions: --repeats {args.repeats}, --rounds {args.rounds}, at least "
                         f"{args.min_time} s per repetition (fast calls batched), at most {args.budget:.0f} s of "
                         "timed calls per configuration (slow ones get fewer repetitions, never under 3)"]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    (args.out / "RESULTS.md").write_text(report.markdown(results))
    charted = report.chart(results, args.out / "speedups.png")
    print(report.markdown(results))
    print(f"wrote {args.out / 'RESULTS.md'}" + (f", {args.out / 'speedups.png'}" if charted else
                                                 " (no chart: pip install jitvm[bench] for matplotlib)"))
    bad = [(m["name"], k) for m in models for k, r in m["configs"].items() if "error" in r or not r.get("ok", True)]
    if bad:
        print("\nMISMATCHES OR FAILURES: " + ", ".join(f"{n} ({k})" for n, k in bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
