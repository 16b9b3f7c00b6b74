"""What only an arm64 host can show (skipped elsewhere; bench/aarch64.sh runs it emulated).

The JIT compiles for the CPU the kernel reports (hwcaps), the HAL answers `hal.cpu` as IREE's
runtime does on the same CPU, dispatches run with FPCR.FZ, and the thread pool (futex
syscall 98 on arm64) runs any thread count with the same results.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jitvm.runtime.native import hwcaps

pytestmark = pytest.mark.skipif(not hwcaps.is_arm64_linux(), reason="arm64 Linux only")


def _iree_cpuinfo() -> dict[str, int]:
    import iree.runtime

    tool = Path(iree.runtime.__file__).resolve().parent.parent / "_runtime_libs" / "iree-cpuinfo"
    if not tool.is_file():
        pytest.skip(f"no iree-cpuinfo at {tool}")
    words = subprocess.run([str(tool)], capture_output=True, text=True, check=True).stdout.split()
    return {name: int(v) for name, v in zip(words[::2], words[1::2])}


def test_compile_target_is_the_kernels_view():
    from jitvm.runtime.native import target

    t = target.host()
    assert t.arch == "aarch64"
    features = dict((f[1:], f[0] == "+") for f in t.features.split(","))
    assert features == hwcaps.host_features()
    assert features["fp-armv8"] and features["neon"]


def test_hal_cpu_answers_as_iree():
    from jitvm.runtime.modules.hal import library

    iree = _iree_cpuinfo()
    ours = {name: library.cpu_feature_value(name) for arch, _, _, name in library.CPU_FEATURE_BITS
            if arch == "aarch64"}
    assert ours == iree


def test_dispatches_run_with_fpcr_fz():
    from jitvm.runtime.exec import fpu

    assert fpu.flush_bits() == 1 << 24
    before = fpu.state()
    with fpu.denormals_flushed():
        assert fpu.state() & (1 << 24)
        tiny = np.array([1e-20], np.float32)
        assert (tiny * tiny)[0] == 0.0  # numpy's multiply runs on this thread, flushed
    assert fpu.state() == before and not before & (1 << 24)
    tiny = np.array([1e-20], np.float32)
    assert (tiny * tiny)[0] != 0.0


def test_pool_uses_arm64_futexes():
    from jitvm.runtime.exec import nativecode

    assert nativecode.SYS_FUTEX["aarch64"] == 98
    assert "i64 98" in nativecode.ir_text("aarch64", False)
    assert nativecode.native().pooled


@pytest.mark.parametrize("name", ["mlir/workgroups", "mlir/matmul", "mlir/conv2d"])
def test_one_to_four_threads_agree(corpus_module, name):
    import jitvm
    from jitvm.fuzz.corpus import make_inputs
    from jitvm.lower.backend import JitBackend

    m = corpus_module(name)
    results = {}
    for n in (1, 2, 3, 4):
        module = jitvm.load(str(m.vmfb), backend=JitBackend(threads=n, progress=False))
        out = []
        for i, call in enumerate(m.calls):
            r = module[call.function](*make_inputs(m, i))
            r = r if isinstance(r, tuple) else (r,)
            out.append([np.asarray(x).tobytes() for x in r])
        results[n] = out
    assert results[1] == results[2] == results[3] == results[4]


def test_disable_features_refuses_f64_here(corpus_module):
    m = corpus_module("vmasm/float_f64")
    code = ("import jitvm, sys\n"
            "try:\n    jitvm.load(sys.argv[1])\nexcept jitvm.Error as e:\n    print(type(e).__name__, e)\n")
    env = dict(os.environ, JITVM_DISABLE_FEATURES="EXT_F64")
    r = subprocess.run([sys.executable, "-c", code, str(m.vmfb)], capture_output=True, text=True, env=env,
                       check=True)
    assert r.stdout.startswith("FeatureError") and "EXT_F64" in r.stdout, r.stdout + r.stderr
