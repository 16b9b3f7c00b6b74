"""The ISA table against IREE 3.13: every op its iree-dump-module can decode is in the table,
and the 3.13 additions (vm.fpowi.f32/f64, emitted for x**n with an integer n) decode, dump
as iree-dump-module prints them and compute IREE's bits on both backends.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import jitvm
from jitvm.frontend import isa
from tests.dropin_support import build

# Words starting with "vm." in iree-dump-module that are not opcodes (module syntax, types).
NOT_OPS = {"vm.module", "vm.func", "vm.import", "vm.export", "vm.rodata", "vm.type", "vm.ref", "vm.list",
           "vm.buffer", "vm.opaque"}


def _iree_dump_module_binary() -> Path:
    libs = pytest.importorskip("iree._runtime_libs")
    path = Path(libs.__file__).parent / "iree-dump-module"
    if not path.exists():
        pytest.skip("iree-dump-module binary not found")
    return path


def test_the_table_has_every_op_iree_dump_module_decodes():
    names = set(re.findall(rb"\bvm\.[a-z0-9_.]*[a-z0-9]", _iree_dump_module_binary().read_bytes()))
    iree_ops = {n.decode() for n in names} - NOT_OPS
    ours = {op.mnemonic for op in isa.OPS.values()}
    assert sorted(iree_ops - ours) == []


FPOWI = """
func.func @p32(%x: f32, %n: i64) -> f32 {
  %r = math.fpowi %x, %n : f32, i64
  return %r : f32
}
func.func @p64(%x: f64, %n: i64) -> f64 {
  %r = math.fpowi %x, %n : f64, i64
  return %r : f64
}
func.func @t(%x: tensor<6xf32>, %n: tensor<6xi64>) -> tensor<6xf32> {
  %r = math.fpowi %x, %n : tensor<6xf32>, tensor<6xi64>
  return %r : tensor<6xf32>
}
"""
FLAGS = ("--iree-input-demote-f64-to-f32=false", "--iree-input-demote-i64-to-i32=false")


@pytest.fixture(scope="module")
def fpowi():
    return build("fpowi", FPOWI, *FLAGS)


def _cases():
    rng = np.random.default_rng(7)
    xs = [float(v) for v in rng.normal(size=60) * 4] + [0.0, -0.0, float("inf"), -float("inf"), float("nan"),
                                                        1e-42, -1.0, 1.0000001]
    ns = [int(v) % 80 - 40 for v in rng.integers(0, 1 << 30, len(xs))]
    ns[:6] = [-(1 << 63), (1 << 63) - 1, (1 << 40) + 1, -((1 << 40) + 1), 1 << 31, 1000000]
    return list(zip(xs, ns))


@pytest.mark.parametrize("backend", ["jit", "interp"])
def test_fpowi_gives_iree_bits(fpowi, backend):
    rt = pytest.importorskip("iree.runtime")
    theirs = rt.load_vm_flatbuffer_file(str(fpowi), driver="local-sync")
    ours = jitvm.load(str(fpowi), backend=backend)
    wrong = []
    for x, n in _cases():
        for name in ("p32", "p64"):
            want = np.float64(getattr(theirs, name)(x, n))
            got = np.float64(ours.function(name)(x, n))
            if want.tobytes() != got.tobytes():
                wrong.append((name, x, n, want, got))
    x = np.array([1.5, -2, 3, 0.5, -0.25, 7], np.float32)
    n = np.array([3, -2, (1 << 33) + 5, 0, -7, 11], np.int64)
    assert np.asarray(ours.t(x, n)).tobytes() == np.asarray(theirs.t(x, n)).tobytes()
    assert wrong == []


def test_fpowi_dumps_as_iree_dump_module_prints_it(fpowi):
    from tests.test_disasm_vs_iree import iree_function_bodies, our_function_bodies

    theirs = [body for body, _complete in iree_function_bodies(fpowi)]
    ours = our_function_bodies(fpowi)
    assert any("vm.fpowi.f32" in line for body in ours for line in body)
    assert ours == theirs
