"""Facts about the machine and software a results table needs to be read correctly."""

from __future__ import annotations

import os
import platform
import multiprocessing
import subprocess
import time
from importlib import metadata
from pathlib import Path



def cpu_name() -> str:
    """Model name plus family/model and vector extensions (a VM's model name can be just "AMD EPYC")."""
    try:
        info = dict(line.split(":", 1) for line in Path("/proc/cpuinfo").read_text().split("\n\n")[0].splitlines()
                    if ":" in line)
    except OSError:
        return platform.processor() or platform.machine()
    info = {k.strip(): v.strip() for k, v in info.items()}
    flags = set(info.get("flags", "").split())
    vector = " ".join(f for f in ("avx2", "fma", "avx512f") if f in flags)
    return f"{info.get('model name', '?')}, family {info.get('cpu family', '?')} model {info.get('model', '?')}, {vector}"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _git(repo: Path, *args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _spin(n: int) -> float:
    start = time.perf_counter()
    x = 0
    for i in range(n):
        x += i
    return time.perf_counter() - start


def parallel_capacity(seconds: float = 0.2) -> float:
    """How many cores' worth of work N busy processes get done at once right now (N = cores).

    On a machine shared with other jobs this is well under the core count, and then no
    multi-threaded configuration (IREE's local-task included) can scale: the number puts
    the all-threads columns in context."""
    n_cpu = os.cpu_count() or 1
    n = max(1, int(2_000_000 * seconds / max(_spin(2_000_000), 1e-6)))
    with multiprocessing.get_context("fork").Pool(n_cpu) as pool:
        pool.map(_spin, [1000] * n_cpu)  # workers started before timing
        alone = pool.apply(_spin, (n,))
        start = time.perf_counter()
        pool.map(_spin, [n] * n_cpu, chunksize=1)
        together = time.perf_counter() - start
    return n_cpu * alone / together


def facts() -> dict[str, str]:
    import llvmlite.binding as llvm

    import jitvm

    tree = Path(jitvm.__file__).resolve().parent.parent  # the jitvm the worker processes import too
    dirty = _git(tree, "status", "--porcelain", "--untracked-files=no", "--", "jitvm")
    return {
        "CPU": f"{cpu_name()} ({platform.machine()})",
        "cores": str(os.cpu_count()),
        "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "parallel capacity at start": f"{parallel_capacity():.2f} of {os.cpu_count()} cores (busy-loop processes, "
                                      "one per core, against one alone)",
        "OS": platform.platform(),
        "Python": platform.python_version(),
        "numpy": _version("numpy"),
        "llvmlite / LLVM": f"{_version('llvmlite')} / {'.'.join(map(str, llvm.llvm_version_info))}",
        "iree-base-compiler / runtime": f"{_version('iree-base-compiler')} / {_version('iree-base-runtime')}",
        "jitvm": f"{_version('jitvm')}, {tree} at commit {_git(tree, 'rev-parse', '--short', 'HEAD')}"
                 + (" + uncommitted changes in jitvm/" if dirty and dirty != "unknown" else ""),
    }
