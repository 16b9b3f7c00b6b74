"""Unroll-and-jam at its group boundaries (lower.loops.jam): a matmul-shaped nest whose jammed loop
runs 63, 64, 65, 127, 128 and 129 times, so groups of 64 (and 32, and the remainder loop)
all run, under the JIT and the interpreter; results must be bit-identical. The fuzzer's
kernels are too small to fill a group of 32 or 64. And the narrow jam of the jammed quick
tier (loop step narrow_jam: groups of jam.NARROW_FACTOR, the baseline's passes) the same way."""

from __future__ import annotations

import numpy as np
import pytest

from jitvm.fallback_interp import InterpreterBackend
from jitvm.frontend.asm import assemble
from jitvm.fuzz.oracles.calls import instantiate
from jitvm.lower.backend import JitBackend
from jitvm.runtime.vm.objects import VmBuffer
from tests.matmul_program import matmul_vmasm

MATMUL = matmul_vmasm()


@pytest.fixture(scope="module")
def instances():
    vmfb = assemble(MATMUL, "<jam>")
    jit = JitBackend(use_cache=False, progress=False, threads=1)
    narrow = JitBackend(use_cache=False, progress=False, threads=1, loop_steps={"narrow_jam": True})
    return {name: instantiate(vmfb, be)[1]
            for name, be in (("jit", jit), ("narrow", narrow), ("interp", InterpreterBackend()))}


def test_jam_plans_a_wide_group():
    from jitvm.frontend.module import load_module
    from jitvm.lower.loops import jam
    from jitvm.lower.loops.analysis import find_nests
    from jitvm.verify import verify_module

    vf = verify_module(load_module(assemble(MATMUL, "<jam>"))).functions[0]
    (nest,) = find_nests(vf)
    plan = jam.plan(vf, nest)
    assert plan is not None and plan.factor == jam.FACTOR and plan.loop.id == 1
    narrow = jam.plan(vf, nest, narrow=True)
    assert narrow is not None and narrow.factor == jam.NARROW_FACTOR < jam.FACTOR and narrow.loop.id == 1


@pytest.mark.parametrize("n", [63, 64, 65, 127, 128, 129])
def test_groups_of_the_jammed_loop_agree_with_the_interpreter(instances, n):
    m, k = 3, 5
    rng = np.random.default_rng(n)
    a = rng.standard_normal(m * k).astype(np.float32)
    b = rng.standard_normal(k * n).astype(np.float32)
    out = {}
    for name, inst in instances.items():
        dst = VmBuffer.from_bytes(np.arange(m * n, dtype=np.float32).tobytes())
        inst.lookup("mm").call([dst, VmBuffer.from_bytes(a.tobytes()), VmBuffer.from_bytes(b.tobytes()), m, n, k])
        out[name] = dst.tobytes()
    assert out["jit"] == out["interp"] == out["narrow"]
    ref = np.arange(m * n, dtype=np.float32).reshape(m, n)
    for kk in range(k):  # the same order of fused multiply-adds
        ref = np.float32(a.reshape(m, k)[:, kk:kk + 1]) * b.reshape(k, n)[kk] + ref
    assert np.allclose(np.frombuffer(out["jit"], np.float32).reshape(m, n), ref, rtol=1e-5, atol=1e-5)
