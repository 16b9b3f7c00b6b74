"""Where a model's time goes: every distinct dispatch timed alone and inside the model.

    python -m bench.dispatches --model resnet50 --resolution 64

iree-compile writes each executable as a standalone benchmark module (a function running
the dispatch N times on zero-filled buffers); the program after dispatch formation says
how often each executable runs per model call. IREE's VMVX interpreter (local-sync) and
jitvm's JIT (JITVM_THREADS=1, its optimising tier) time every executable alone, each engine
in its own process; the JIT's command buffer of one dispatch is replayed natively and timed
in CPU time (timing the calls would count jitvm's recording of the command buffer, done
from Python: ~0.1 ms a dispatch, more than a layer norm's or a transpose's dispatch). A second JIT process runs the whole model with a timer around its dispatch
runner: the time each executable really takes per model call, and what is left for host
code. llvm-cpu has no column: iree-compile 3.13 recompiles its own llvm-cpu benchmark
dumps into code several times slower than inside the model (3x3 convs: 2.2 ms alone,
while the whole model takes 11.5 ms), so those numbers would mislead. Writes
DISPATCHES-<model>.md, sorted by the JIT's in-model time, with the VMVX disassembly of
the dispatch that costs the JIT most (what the lowering should work on next).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

from bench.build import TARGETS, compile_file, compile_model, dump
from bench.exported import exported_suite
from bench.models import suite

BENCH = Path(__file__).resolve().parent
ENGINES = {  # key: (engine, driver, extra environment); all run the VMVX executables
    "interp": ("iree", "local-sync", {}),
    "jit": ("jitvm", "", {"JITVM_THREADS": "1"}),
}
_EXE = re.compile(r"module_([\w$]+?_dispatch_\d+)_")


def dispatch_counts(spec, target: str) -> tuple[Counter, dict[str, str]]:
    """Dispatches per model call of each executable, and each executable's entry name."""
    text = (dump(spec, target, "stream") / "stream.mlir").read_text()
    found = re.findall(r"stream\.cmd\.dispatch @([\w$]+)::@([\w$]+)", text)
    return Counter(exe for exe, _ in found), dict(found)


def benchmark_modules(spec, target: str = "vmvx", log=print) -> dict[str, Path]:
    """Each executable's standalone benchmark, compiled for `target`, by executable name."""
    out = {}
    for source in sorted(dump(spec, target, "benchmarks").glob("*.mlir")):
        m = _EXE.match(source.name)
        if not m:
            continue
        try:
            out[m.group(1)] = compile_file(source, TARGETS[target], f"{spec.name}-{m.group(1)}-{target}", log)
        except RuntimeError as e:  # iree-compile 3.13 cannot recompile some of its own dumps (seen: llvm-cpu)
            reason = next((line for line in str(e).splitlines() if "error:" in line), str(e))
            log(f"skipped {m.group(1)} ({target}): {reason.split('error:', 1)[-1].strip()[:160]}")
    return out


def _worker(job: dict) -> dict:
    """Times each module's benchmark function; per-dispatch seconds by executable."""
    from jitvm.cli.benchmark import measure

    results = {}
    for name, path in job["modules"].items():
        if job["engine"] == "iree":
            import iree.runtime as ireert

            module = ireert.load_vm_flatbuffer_file(path, driver=job["driver"])
            fn = getattr(module, next(n for n in module.vm_module.function_names if not n.startswith("__")))
        else:
            import jitvm

            module = jitvm.load(path, tier="full")  # timed as optimised, not as the baseline tier
            fn = module.function(module.exports[0])
            fn(1)  # warm-up (and compiled)
            replayed = _replayed_dispatch_time(fn, job)
            if replayed is not None:
                results[name] = replayed
                continue
        fn(1)  # warm-up
        one = measure(lambda: fn(1), 1, 0.01)[0]
        batch = max(1, min(1000, int(job["min_time"] / max(one.real / one.iterations, 1e-9))))
        runs = measure(lambda: fn(batch), job["repeats"], iterations=1)  # one call: `batch` dispatches
        results[name] = sorted(r.real / batch for r in runs)[len(runs) // 2]
    return results


def _replayed_dispatch_time(fn, job: dict) -> float | None:
    """The JIT's seconds per dispatch of a benchmark module, its one-dispatch command buffer
    replayed natively `batch` times inside one call (median of the repeats, in CPU time: one
    thread, so the neighbours on a shared machine count little), or None when the call
    replays no single sequence. Timing fn(batch) instead counts the command buffer's
    recording, which jitvm does from Python: ~0.1 ms a dispatch, more than a layer norm's
    or a transpose's dispatch itself (MiniLM's took 13-20 us replayed, 75-90 us recorded)."""
    import time

    from jitvm.runtime.exec.runner import NativeDispatchRunner

    original = NativeDispatchRunner.run_sequence
    seen: list[float] = []

    def timed(self, seq, bases):  # runs within the call, while its buffers are alive
        original(self, seq, bases)
        start = time.perf_counter()
        original(self, seq, bases)
        one = time.perf_counter() - start
        batch = max(1, min(10000, int(job["min_time"] / max(one, 1e-9))))
        for _ in range(job["repeats"]):
            start = time.process_time()
            for _ in range(batch):
                original(self, seq, bases)
            seen.append((time.process_time() - start) / batch)

    NativeDispatchRunner.run_sequence = timed
    try:
        fn(1)
    finally:
        NativeDispatchRunner.run_sequence = original
    if len(seen) != job["repeats"]:  # no sequence, or several: time the calls instead
        return None
    return sorted(seen)[len(seen) // 2]


def _profile_worker(job: dict) -> dict:
    """The whole model on the JIT, timing each dispatch the runner executes (seconds per call)."""
    import time

    import numpy as np

    import jitvm
    from jitvm.runtime.exec.runner import NativeDispatchRunner

    spent: Counter = Counter()
    original = NativeDispatchRunner.run

    def timed(self, dispatch):  # CPU time (the model runs on one thread), as the executables alone
        start = time.process_time()
        try:
            return original(self, dispatch)
        finally:
            spent[dispatch.entry.name.split(".", 1)[-1]] += time.process_time() - start  # drop "module."

    NativeDispatchRunner.run = timed
    module = jitvm.load(job["vmfb"], tier="full")
    fn = module.function(job["function"])
    inputs = list(np.load(job["inputs"]).values())
    fn(*inputs)  # warm-up
    spent.clear()
    start = time.process_time()
    for _ in range(job["calls"]):
        fn(*inputs)
    total = time.process_time() - start
    return {"total": total / job["calls"], "dispatches": {k: v / job["calls"] for k, v in spent.items()}}


def _subprocess(mode: str, job: dict, env: dict) -> dict:
    done = subprocess.run([sys.executable, "-m", "bench.dispatches", mode, json.dumps(job)],
                          cwd=BENCH.parent, env={**os.environ, **env}, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{mode} {job.get('engine', '')} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def time_engine(key: str, modules: dict[str, Path], repeats: int, min_time: float) -> dict[str, float]:
    engine, driver, env = ENGINES[key]
    job = {"engine": engine, "driver": driver, "modules": {k: str(v) for k, v in modules.items()},
           "repeats": repeats, "min_time": min_time}
    return _subprocess("--worker", job, env)


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.3g}"


def markdown(spec, counts: Counter, entries: dict, times: dict, profile: dict, disasm: str, command: str) -> str:
    jit, interp = times["jit"], times["interp"]
    in_model = {e: profile["dispatches"].get(entries[e], 0.0) for e in counts}
    replayed = not any(in_model.values())  # a replayed command buffer never calls the runner from Python
    if replayed:
        in_model = {e: counts[e] * jit.get(e, 0.0) for e in counts}
    dispatch_total = sum(in_model.values()) or 1e-12
    rows = sorted(counts, key=lambda e: -in_model[e])
    out = [f"# Where {spec.name}'s time goes, dispatch by dispatch", "",
           "Alone: each distinct executable run by itself on one thread (median per dispatch: the JIT's in CPU "
           "time, its one-dispatch command buffer replayed natively; the interpreter's in wall time, batched calls). "
           "In model: the JIT's CPU time in that executable's dispatches per model call (all of them, one thread), "
           "timed around jitvm's dispatch runner. JIT x: interpreter time / JIT time, both alone.", "",
           *(["The model's command buffers replay natively, past the runner's timer: the in-model column is "
              "each executable's alone time times its dispatches per call.", ""] if replayed else []),
           "```", command, "```", "",
           "| executable | dispatches per call | interp alone ms | JIT alone ms | JIT x | JIT in model ms | share |",
           "|---|---|---|---|---|---|---|"]
    for e in rows:
        j, i = jit.get(e), interp.get(e)
        ratio = f"{i / j:.1f}" if i and j else "-"
        out.append(f"| {entries[e]} | {counts[e]} | {_ms(i)} | {_ms(j)} | {ratio} | {_ms(in_model[e])} | "
                   f"{in_model[e] / dispatch_total:.1%} |")
    alone_interp = sum(counts[e] * interp.get(e, 0) for e in counts)
    alone_jit = sum(counts[e] * jit.get(e, 0) for e in counts)
    interp_sum = (f"interp {alone_interp * 1e3:.1f} ms and JIT {alone_jit * 1e3:.1f} ms "
                  f"({alone_interp / alone_jit:.1f}x)") if interp else f"JIT {alone_jit * 1e3:.1f} ms"
    out += ["", f"Per model call: dispatches alone sum to {interp_sum}. In the model, the JIT call took "
            f"{profile['total'] * 1e3:.1f} ms, {dispatch_total * 1e3:.1f} ms of it in dispatches; the rest "
            f"({(profile['total'] - dispatch_total) * 1e3:.1f} ms) is host code, HAL calls and argument marshalling.", ""]
    if disasm:
        out += [f"## VMVX bytecode of {entries[rows[0]]} (the JIT's largest share)", "", "```", disasm.rstrip(), "```", ""]
    return "\n".join(out)


def disassembly(spec, entry: str) -> str:
    binaries = sorted(dump(spec, "vmvx", "binaries").glob("*.vmfb"))
    for path in binaries:
        done = subprocess.run([sys.executable, "-m", "jitvm", "dump", str(path), f"--function={entry}"],
                              cwd=BENCH.parent, capture_output=True, text=True)
        if done.returncode == 0:
            return done.stdout
    return ""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="python -m bench.dispatches", description=__doc__.split("\n\n")[0])
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--profile", help=argparse.SUPPRESS)
    p.add_argument("--calls", type=int, default=5, help="model calls behind the in-model profile (default 5)")
    p.add_argument("--model", default="resnet50", help="a suite model name or prefix (default resnet50)")
    p.add_argument("--resolution", type=int, default=64, help="resnet50-style input size (default 64)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--min-time", type=float, default=0.05, help="seconds per timed call (dispatches are batched)")
    p.add_argument("--suite", choices=("kernels", "exported"), default="kernels",
                   help="the suite --model names: our own MLIR (default) or the PyTorch/ONNX exports")
    p.add_argument("--engines", default=",".join(ENGINES),
                   help="engines timing the executables alone, comma-separated (default interp,jit; "
                        "jit alone skips the interpreter's slow runs)")
    p.add_argument("--out", type=Path, default=BENCH / "results")
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(_worker(json.loads(args.worker))))
        return 0
    if args.profile:
        print(json.dumps(_profile_worker(json.loads(args.profile))))
        return 0
    specs = suite(args.resolution) if args.suite == "kernels" else exported_suite()
    spec = next((s for k, s in specs.items() if k == args.model), None) or \
        next(s for k, s in specs.items() if k.startswith(args.model))
    counts, entries = dispatch_counts(spec, "vmvx")
    modules = benchmark_modules(spec, "vmvx")
    times = {key: {} for key in ENGINES}
    chosen = args.engines.split(",")
    if set(chosen) - set(ENGINES):
        p.error(f"unknown engines {sorted(set(chosen) - set(ENGINES))} (have: {', '.join(ENGINES)})")
    for key in chosen:
        print(f"timing {len(modules)} executables alone: {key}", flush=True)
        times[key] = time_engine(key, modules, args.repeats, args.min_time)
    print("timing the JIT's dispatches inside the model", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(Path(tmp) / "inputs.npz", *spec.make_inputs())
        profile = _subprocess("--profile", {"vmfb": str(compile_model(spec, "vmvx")), "function": spec.function,
                                            "inputs": str(Path(tmp) / "inputs.npz"), "calls": args.calls},
                              ENGINES["jit"][2])
    top = max(counts, key=lambda e: profile["dispatches"].get(entries[e], 0.0) or counts[e] * times["jit"].get(e, 0.0))
    text = markdown(spec, counts, entries, times, profile, disassembly(spec, entries[top]),
                    "python -m bench.dispatches " + " ".join(argv))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"DISPATCHES-{spec.name}.md"
    path.write_text(text)
    print(text.split("## VMVX")[0])
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
