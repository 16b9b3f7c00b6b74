"""Peak RSS of a load and a few calls, jitvm against IREE, with and without jitvm's memory
release at quiet points (runtime.native.memory; issue 22 item 5).

    python -m bench.peak_rss                               # the bundled CNN and resnet50_64
    python -m bench.peak_rss --models resnet50_64 --rounds 3
    python -m bench.peak_rss --models minilm_l6 efficientnet_lite0   # exported (bench extra: torch)

Each configuration runs in a fresh process (bench/measure.py; its peak is Linux's VmHWM):
IREE on local-task with the module's own target (vmvx for the CNN, llvm-cpu and vmvx for
suite models), jitvm's cold load (an empty JITVM_CACHE_DIR) and cached load (the same
directory again), each with JITVM_RELEASE_MEMORY=1 and =0, alternated over `--rounds`.
Figures are medians over rounds, in MB (10^6 bytes).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from bench.build import compile_model
from bench.exported import exported_suite
from bench.models import suite
from bench.run import run_job

CNN = Path(__file__).resolve().parent.parent / "jitvm" / "examples" / "cnn.vmfb"


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
            r = run_job(job, {"JITVM_CACHE_DIR": str(cache), **env}, 1800)
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
            peak = statistics.median(r["peak_rss_bytes"] for r in runs) / 1e6
            load = statistics.median(r["load_s"] for r in runs)
            print(f"  {label:34} peak RSS {peak:7.1f} MB   load {load:6.3f} s   (n={len(runs)})")
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
