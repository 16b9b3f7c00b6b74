"""Jammed loops with a known trip count that is no power of two (lower.loops.jam._even_groups).

NCHW convolutions, as models exported through ONNX reach VMVX, jam the output row: 7, 14,
28 or 56 columns. The jam covers such a row with equal groups (7, 14, 28, 56 columns at
once) instead of a power of two and a scalar remainder, and register blocking then takes
the rows around it (4 x 14, 4 x 7). A matmul-shaped nest with those column counts under the
JIT and the interpreter: results bit-identical for row counts that leave 0-3 rows to the
blocked loop's remainder, also when the output overlaps an input (the blocked copy must not
run), and traps alike when the output is too small; an NCHW 3x3 convolution compiled by
iree-compile agrees with IREE's runtime.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import jitvm
from jitvm.fallback_interp import InterpreterBackend
from jitvm.frontend.asm import assemble
from jitvm.frontend.module import load_module
from jitvm.fuzz.oracles.calls import instantiate
from jitvm.lower.backend import JitBackend
from jitvm.lower.loops import jam
from jitvm.lower.loops.analysis import find_nests
from jitvm.verify import verify_module
from tests.matmul_program import matmul_vmasm, run_matmul

K = 5  # reduction length


@pytest.mark.parametrize("trips, factor, group", [
    (7, 64, 7), (14, 64, 14), (56, 64, 56), (10, 64, 10), (112, 64, 56), (28, 16, 14), (56, 16, 14),
    (64, 64, 64), (2, 64, None), (49, 16, None), (97, 64, None), (1000, 64, None),
])
def test_even_groups_cover_the_trip_count(trips, factor, group):
    assert jam._even_groups(trips, factor) == group


def _plan(cols: int, rows: int | None):
    vf = verify_module(load_module(assemble(matmul_vmasm(rows, cols, K), "<even>"))).functions[0]
    (nest,) = find_nests(vf)
    return jam.plan(vf, nest)


@pytest.mark.parametrize("cols, factor, inner", [(7, 7, 7), (14, 14, 14), (28, 28, 14), (56, 56, 14)])
def test_a_row_of_columns_is_jammed_whole_and_blocked(cols, factor, inner):
    """Before: 4 + 3, 8 + 6, 16 + 12, 32 + 24 columns (jammed + scalar), never blocked."""
    for rows, remainder in ((None, True), (14, True), (8, False)):
        plan = _plan(cols, rows)
        assert plan is not None and plan.loop.id == 1 and plan.factor == factor, (cols, rows)
        assert plan.outer is not None and plan.outer.loop.id == 0, (cols, rows)
        assert (plan.outer.factor, plan.outer.inner) == (jam.OUTER_FACTOR, inner)
        assert plan.outer.jammed_remainder is remainder


def test_a_small_image_is_blocked_whole():
    """7 rows of 7 columns: all 49 copies at once (jam.OUTER_COPIES), no rows left over;
    7 rows of 14 columns would be 98 copies: 4 rows at once and a remainder."""
    plan = _plan(7, 7)
    assert (plan.outer.factor, plan.outer.inner, plan.outer.jammed_remainder) == (7, 7, False)
    plan = _plan(14, 7)
    assert (plan.outer.factor, plan.outer.inner, plan.outer.jammed_remainder) == (jam.OUTER_FACTOR, 14, True)
    assert _plan(16, 2).outer is None  # two rows: jam.SMALL_Q's case, taken only around a conv window


@pytest.fixture(scope="module", params=[(None, 7), (None, 14), (None, 28), (7, 7)],
                ids=lambda p: f"{p[0] or 'm'} rows of {p[1]} columns")
def instances(request):
    rows, cols = request.param
    vmfb = assemble(matmul_vmasm(rows, cols, K), "<even>")
    jit = JitBackend(use_cache=False, progress=False, threads=1)
    return rows, cols, {name: instantiate(vmfb, be)[1]
                        for name, be in (("jit", jit), ("interp", InterpreterBackend()))}


@pytest.mark.parametrize("m", [1, 3, 4, 5, 7, 9, 14])
@pytest.mark.parametrize("overlap", [False, True], ids=["apart", "output is the right-hand side"])
def test_even_groups_agree_with_the_interpreter(instances, m, overlap):
    rows, cols, backends = instances
    m = rows or m
    out = {name: run_matmul(inst, m, cols, K, 100 + m, out_rows=max(m, K), overlap=overlap)
           for name, inst in backends.items()}
    assert out["jit"] == out["interp"]


def test_an_output_too_small_traps_as_the_interpreter_does(instances):
    rows, cols, backends = instances
    got = {}
    for name, inst in backends.items():
        with pytest.raises(jitvm.Trap) as e:
            run_matmul(inst, rows or 9, cols, K, 7, out_rows=(rows or 9) - 1)
        got[name] = (e.value.status_name, e.value.message)
    assert got["jit"] == got["interp"]


# An NCHW 3x3 convolution with 14x14 outputs (ResNet-50's 256x14x14 stage at a small size).
CONV = """
func.func @main(%x: tensor<1x8x16x16xf32>, %w: tensor<8x8x3x3xf32>) -> tensor<1x8x14x14xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<1x8x14x14xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<1x8x14x14xf32>) -> tensor<1x8x14x14xf32>
  %conv = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>) outs(%fill : tensor<1x8x14x14xf32>) -> tensor<1x8x14x14xf32>
  return %conv : tensor<1x8x14x14xf32>
}
"""


@pytest.mark.skipif(shutil.which("iree-compile") is None, reason="needs iree-compile")
def test_an_nchw_convolution_is_blocked_and_bit_identical(tmp_path):
    import iree.runtime as ireert

    src, vmfb, dumps = tmp_path / "conv.mlir", tmp_path / "conv.vmfb", tmp_path / "bin"
    src.write_text(CONV)
    subprocess.run(["iree-compile", "--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=vmvx",
                    f"--iree-hal-dump-executable-binaries-to={dumps}", str(src), "-o", str(vmfb)], check=True)
    (dispatch,) = dumps.glob("*.vmfb")
    plans = [jam.plan(vf, nest) for vf in verify_module(load_module(dispatch.read_bytes())).functions
             for nest in find_nests(vf)]
    blocked = [(p.factor, p.outer.factor, p.outer.inner) for p in plans if p is not None and p.outer is not None]
    assert (14, jam.OUTER_FACTOR, 14) in blocked, blocked
    rng = np.random.default_rng(5)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((1, 8, 16, 16), (8, 8, 3, 3))]
    want = np.asarray(ireert.load_vm_flatbuffer_file(str(vmfb), driver="local-sync").main(*args))
    for be in (JitBackend(use_cache=False, progress=False, threads=1), InterpreterBackend()):
        got = np.asarray(jitvm.load(str(vmfb), be).function("main")(*args))
        assert got.tobytes() == want.tobytes(), be.name
