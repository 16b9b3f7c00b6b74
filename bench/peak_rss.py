"""Peak RSS of a load and a few calls, jitvm against IREE, with and without jitvm's memory
release at quiet points (runtime.native.memory; issue 22 item 5).

    python -m bench.peak_rss                               # the bundled CNN and resnet50_64
    python -m bench.peak_rss --models resnet50_64 --rounds 3
    python -m bench.peak_rss --models minilm_l6 efficientnet_lite0   # exported (bench extra: torch)

Each configuration runs in a fresh process (bench/measure.py; its peak is Linux's VmHWM):
IREE on local-task with the module's own target (vmvx for the CNN, llvm-cpu and vmvx for
suite models), jitvm's cold load (an empty JITVM_CACHE_DIR) and cached load (the same
directory again), each with JITVM_RELEASE_MEMORY=1 and =0, alternated over `--rounds`.
Figures are medians over rounds, in MB (10^6 bytes). `tree` is the peak of the process and
its children together (jitvm's compile workers), sampled every 10 ms from outside: the sum
of their resident sets, and of their proportional sets (PSS: pages the processes share,
libLLVM's code above all, counted once), which is nearer what a container is charged.
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
import threading
import time
from pathlib import Path

import numpy as np

from bench.build import compile_model
from bench.exported import exported_suite
from bench.models import suite
from bench.run import _exception_text

ROOT = Path(__file__).resolve().parent.parent
CNN = ROOT / "jitvm" / "examples" / "cnn.vmfb"
SAMPLE_SECONDS = 0.01


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants alive now."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def _resident(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of `pid` in bytes, (0, 0) once it has gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            fields = {k: int(v.split()[0]) * 1024 for k, _, v in (line.partition(":") for line in f) if k in ("Rss", "Pss")}
        return fields.get("Rss", 0), fields.get("Pss", 0)
    except (OSError, ValueError):
        return 0, 0


def run_sampled(job: dict, env_extra: dict, timeout: float, cwd: Path = ROOT) -> dict:
    """bench.measure's result of `job` (run in `cwd`'s tree), with the peak RSS and PSS of its
    process tree (tree_peak_rss_bytes, tree_peak_pss_bytes) and the most processes seen at once."""
    proc = subprocess.Popen([sys.executable, "-m", "bench.measure", json.dumps(job)], cwd=cwd,
                            env={**os.environ, **env_extra}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out: dict = {}
    reader = threading.Thread(target=lambda: out.update(zip(("stdout", "stderr"), proc.communicate())))
    reader.start()
    peak_rss = peak_pss = most = 0
    start = time.perf_counter()
    while proc.poll() is None and time.perf_counter() - start < timeout:
        pids = _tree(proc.pid)
        sizes = [_resident(p) for p in pids]
        peak_rss, peak_pss = max(peak_rss, sum(r for r, _ in sizes)), max(peak_pss, sum(p for _, p in sizes))
        most = max(most, len(pids))
        time.sleep(SAMPLE_SECONDS)
    if proc.poll() is None:
        proc.kill()
        reader.join()
        return {"error": f"timed out after {timeout:.0f} s"}
    reader.join()
    lines = out.get("stdout", "").strip().splitlines()
    if proc.returncode or not lines:
        return {"error": f"exit {proc.returncode}: {_exception_text(out.get('stderr', ''))}"}
    return {**json.loads(lines[-1]), "tree_peak_rss_bytes": peak_rss, "tree_peak_pss_bytes": peak_pss,
            "tree_processes": most}


def _modules(name: str, resolution: int) -> tuple[dict[str, str], str, list[np.ndarray]]:
    """{target: vmfb}, the function and its inputs of model `name`."""
    if name == "cnn":
        x = np.random.default_rng(0).standard_normal((1, 28, 28, 1)).astype(np.float32)
        return {"vmvx": str(CNN)}, "predict", [x]
    specs = suite(resolution)
    spec = specs[name] if name in specs else exported_suite()[name]
    return ({t: str(compile_model(spec, t, log=lambda s: None)) for t in ("vmvx", "llvm-cpu")}, spec.function,
            spec.make_inputs(0))


def _configs(targets: dict[str, str]) -> list[tuple[str, dict, dict]]:
    """(label, job fields, environment) in run order; the cold jitvm load first."""
    out = []
    for target in targets:
        out.append((f"iree {target} local-task", {"engine": "iree", "driver": "local-task", "target": target}, {}))
    for release in ("1", "0"):
        for state in ("cold", "cached"):
            out.append((f"jitvm {next(iter(targets))} {state} release={release}",
                        {"engine": "jitvm", "target": next(iter(targets)), "state": state},
                        {"JITVM_RELEASE_MEMORY": release}))
    return out


def measure_model(name: str, rounds: int, resolution: int, work: Path) -> dict[str, list[dict]]:
    targets, function, inputs = _modules(name, resolution)
    np.savez(work / "inputs.npz", *inputs)
    samples: dict[str, list[dict]] = {}
    for _ in range(rounds):
        for label, fields, env in _configs(targets):
            cache = work / f"cache-{env.get('JITVM_RELEASE_MEMORY', '-')}"
            if fields.get("state") == "cold":
                shutil.rmtree(cache, ignore_errors=True)
            job = {"engine": fields["engine"], "driver": fields.get("driver", ""), "vmfb": targets[fields["target"]],
                   "function": function, "inputs": str(work / "inputs.npz"), "outputs": str(work / "out.npz"),
                   "repeats": 3, "min_time": 0.05, "budget": 2.0, "threads": 0}
            r = run_sampled(job, {"JITVM_CACHE_DIR": str(cache), **env}, 1800)
            samples.setdefault(label, []).append(r)
    return samples


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", default=["cnn", "resnet50_64"], help="cnn, suite or exported-suite model names")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--resolution", type=int, default=64)
    args = p.parse_args(argv)
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    for name in args.models:
        with tempfile.TemporaryDirectory() as tmp:
            samples = measure_model(name, args.rounds, args.resolution, Path(tmp))
        print(f"{name}")
        for label, runs in samples.items():
            errors = [r["error"] for r in runs if "error" in r]
            if errors:
                print(f"  {label:34} ERROR {errors[0]}")
                continue
            peak, tree, pss = (statistics.median(r[k] for r in runs) / 1e6 for k in
                               ("peak_rss_bytes", "tree_peak_rss_bytes", "tree_peak_pss_bytes"))
            load = statistics.median(r["load_s"] for r in runs)
            print(f"  {label:34} peak RSS {peak:7.1f} MB   tree RSS {tree:7.1f} PSS {pss:7.1f} MB   "
                  f"({max(r['tree_processes'] for r in runs)} processes)   load {load:6.3f} s   (n={len(runs)})")
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
