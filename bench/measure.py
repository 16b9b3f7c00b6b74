"""One benchmark configuration, run in its own process.

Why a process each: IREE's task executor and jitvm's dispatch threads live as long as the
process, and a fresh process is the only honest way to time a cold JIT load. The parent passes a JSON
job; this prints one JSON line of timings and saves the outputs for the correctness check.

Job keys: engine ("iree" | "jitvm"), driver (IREE's, e.g. "local-sync"), vmfb, function,
inputs (.npz, arrays arr_0..), outputs (.npz to write), repeats, min_time (seconds per
repetition), budget (seconds of timed calls; fewer repetitions, at least 3, when a call
is slow), threads (IREE local-task workers, jitvm's dispatch threads).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time

import numpy as np

from jitvm.cli.benchmark import measure


def _load_iree(job: dict):
    import iree.runtime as ireert

    if job.get("threads"):
        ireert.flags.parse_flags(f"--task_topology_group_count={job['threads']}")
    module = ireert.load_vm_flatbuffer_file(job["vmfb"], driver=job["driver"])
    fn = getattr(module, job["function"])
    return fn, {"driver": job["driver"], "threads": job.get("threads") if job["driver"] != "local-sync" else 1}


def _load_jitvm(job: dict):
    import jitvm

    module = jitvm.load(job["vmfb"], threads=job.get("threads") or None)
    return module.function(job["function"]), {"backend": module.backend, "threads": job.get("threads")}


def _as_list(result) -> list[np.ndarray]:
    results = result if isinstance(result, tuple) else (result,)
    return [np.asarray(r) for r in results]


def run(job: dict) -> dict:
    inputs = list(np.load(job["inputs"]).values())
    start = time.perf_counter()
    fn, info = (_load_iree if job["engine"] == "iree" else _load_jitvm)(job)
    loaded = time.perf_counter()

    def call():
        return _as_list(fn(*inputs))  # np.asarray: results are on the host when timing stops

    outputs = call()
    first = time.perf_counter() - loaded
    repeats = max(1, min(job["repeats"], max(3, int(job.get("budget", 1e9) / max(first, 1e-9)))))
    runs = measure(call, repeats, job["min_time"])
    np.savez(job["outputs"], *outputs)
    if job["engine"] == "jitvm":
        from jitvm.lower.backend import STATS

        info["stats"] = dict(STATS)
    return {**info, "load_s": loaded - start, "first_call_s": first, "iterations": runs[0].iterations,
            "per_call_s": [r.real / r.iterations for r in runs], "cpu_per_call_s": [r.cpu / r.iterations for r in runs],
            "pid": os.getpid(), "peak_rss_bytes": _peak_rss_bytes()}


def _peak_rss_bytes() -> int:
    """This program's high-water resident set: Linux's VmHWM (ru_maxrss would keep the
    high-water mark of the parent that forked this process, carried across exec)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)


if __name__ == "__main__":
    print(json.dumps(run(json.loads(sys.argv[1]))), flush=True)
