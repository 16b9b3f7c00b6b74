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


def _overlapping_rows(stride: int) -> str:
    """The matmul with its output rows `stride` elements apart (fewer than the 32 columns:
    row i's last columns are row i+1's first; the rows' order decides those elements)."""
    src = matmul_vmasm(8, 32, K)
    src = src.replace("  %i10:11 = vm.const.i64.zero\n", f"  %i10:11 = vm.const.i64.zero\n  %i40:41 = vm.const.i64 {stride}\n", 1)
    return src.replace("%i18:19 = vm.fma.i64 %i14:15, %i6:7, %i16:17", "%i18:19 = vm.fma.i64 %i14:15, %i40:41, %i16:17")


@pytest.mark.parametrize("stride, blocked", [(16, False), (31, False), (32, True), (40, True)])
def test_rows_that_share_elements_are_not_blocked(stride, blocked):
    """Register blocking runs 4 rows' first 16 columns before any row's next 16: rows closer
    than the row's whole width share elements, and their additions would change order (the
    interpreter's bits differ); a stride of at least the width keeps every element one row's."""
    vf = verify_module(load_module(assemble(_overlapping_rows(stride), "<rows>"))).functions[0]
    (nest,) = find_nests(vf)
    assert (jam.plan(vf, nest).outer is not None) is blocked
    vmfb = assemble(_overlapping_rows(stride), "<rows>")
    m, n = 8, 32
    rng = np.random.default_rng(stride)
    a = (rng.standard_normal(m * K) * 10.0 ** rng.integers(-4, 5, m * K)).astype(np.float32)
    b = (rng.standard_normal(K * n) * 10.0 ** rng.integers(-4, 5, K * n)).astype(np.float32)
    start = rng.standard_normal(stride * m + n).astype(np.float32)
    got = {}
    for name, be in (("jit", JitBackend(use_cache=False, progress=False, threads=1)), ("interp", InterpreterBackend())):
        from jitvm.runtime.vm.objects import VmBuffer

        dst = VmBuffer.from_bytes(start.tobytes())
        instantiate(vmfb, be)[1].lookup("mm").call([dst, VmBuffer.from_bytes(a.tobytes()),
                                                    VmBuffer.from_bytes(b.tobytes()), m, n, K])
        got[name] = dst.tobytes()
    assert got["jit"] == got["interp"]


# @conv(out, in, w, C, K): out[c*PLANE + h*W + w] += in[k*H*W + h*W + w] * wt[c*K + k]: a 1x1
# NCHW convolution's nest (channels, rows, columns, reduction), rows W = 14 columns wide.
NCHW = """
vm.module @nchw version 0
vm.export @conv
vm.func @conv(%r0: !vm.buffer, %r1: !vm.buffer, %r2: !vm.buffer, %i0: i32, %i1: i32) -> () {{
^bb0:
  %i4:5 = vm.ext.i32.i64.s %i0
  %i6:7 = vm.ext.i32.i64.s %i1
  %i8:9 = vm.const.i64 {rows}
  %i10:11 = vm.const.i64 14
  %i12:13 = vm.const.i64 {plane}
  %i14:15 = vm.const.i64 {image}
  %i16:17 = vm.const.i64.zero
  %i18:19 = vm.const.i64 1
  vm.br ^bb1(%i16->%i20, %i17->%i21)
^bb1:
  %i3 = vm.cmp.lt.i64.s %i20:21, %i4:5
  vm.cond_br %i3, ^bb2(), ^bb11()
^bb2:
  %i22:23 = vm.mul.i64 %i20:21, %i12:13
  %i24:25 = vm.mul.i64 %i20:21, %i6:7
  vm.br ^bb3(%i16->%i26, %i17->%i27)
^bb3:
  %i3 = vm.cmp.lt.i64.s %i26:27, %i8:9
  vm.cond_br %i3, ^bb4(), ^bb10()
^bb4:
  %i28:29 = vm.fma.i64 %i26:27, %i10:11, %i22:23
  %i30:31 = vm.mul.i64 %i26:27, %i10:11
  vm.br ^bb5(%i16->%i32, %i17->%i33)
^bb5:
  %i3 = vm.cmp.lt.i64.s %i32:33, %i10:11
  vm.cond_br %i3, ^bb6(), ^bb9()
^bb6:
  %i34:35 = vm.add.i64 %i28:29, %i32:33
  %i36:37 = vm.add.i64 %i30:31, %i32:33
  vm.br ^bb7(%i16->%i38, %i17->%i39)
^bb7:
  %i3 = vm.cmp.lt.i64.s %i38:39, %i6:7
  vm.cond_br %i3, ^bb8(), ^bb12()
^bb8:
  %i40:41 = vm.fma.i64 %i38:39, %i14:15, %i36:37
  %i42 = vm.buffer.load.f32 %r1, %i40:41
  %i44:45 = vm.add.i64 %i24:25, %i38:39
  %i43 = vm.buffer.load.f32 %r2, %i44:45
  %i46 = vm.buffer.load.f32 %r0, %i34:35
  %i46 = vm.fma.f32 %i42, %i43, %i46
  vm.buffer.store.f32 %i46, %r0, %i34:35
  %i38:39 = vm.add.i64 %i38:39, %i18:19
  vm.br ^bb7()
^bb12:
  %i32:33 = vm.add.i64 %i32:33, %i18:19
  vm.br ^bb5()
^bb9:
  %i26:27 = vm.add.i64 %i26:27, %i18:19
  vm.br ^bb3()
^bb10:
  %i20:21 = vm.add.i64 %i20:21, %i18:19
  vm.br ^bb1()
^bb11:
  vm.return
}}
"""
ROWS = 3


def _nchw(plane: int) -> str:
    return NCHW.format(rows=ROWS, plane=plane, image=ROWS * 14)


@pytest.mark.parametrize("strides, injective", [
    ([(196, None), (14, 14), (1, 14)], True), ([(42, 8), (14, 3), (1, 14)], True),
    ([(30, None), (14, 3), (1, 14)], False), ([(14, 3), (1, 14), (1, 3)], False), ([(5, None), (1, None)], False),
])
def test_injective_strides(strides, injective):
    assert jam._injective(strides) is injective


@pytest.mark.parametrize("plane, through", [(ROWS * 14, True), (ROWS * 14 + 5, True), (20, False)])
def test_a_row_is_blocked_over_the_channels_around_its_image(plane, through):
    """Q is the channel loop, two levels up (jam._prefer_through): each input row serves 4
    channels. Planes closer than an image (20 < 3 x 14) would share elements across
    channels: not blocked then (3 rows are too few to block the rows instead)."""
    vf = verify_module(load_module(assemble(_nchw(plane), "<nchw>"))).functions[0]
    (nest,) = find_nests(vf)
    plan = jam.plan(vf, nest)
    assert plan.loop.id == 2 and plan.factor == 14
    outer = plan.outer and (plan.outer.loop.id, plan.outer.factor, plan.outer.inner)
    assert outer == ((0, jam.OUTER_FACTOR, 14) if through else None)


@pytest.mark.parametrize("plane", [ROWS * 14, 20])
@pytest.mark.parametrize("channels", [1, 3, 4, 5, 8, 9])
@pytest.mark.parametrize("overlap", [False, True], ids=["apart", "output is the input"])
def test_channel_blocking_agrees_with_the_interpreter(plane, channels, overlap):
    from jitvm.runtime.vm.objects import VmBuffer

    vmfb = assemble(_nchw(plane), "<nchw>")
    rng = np.random.default_rng(channels * plane)
    image = ROWS * 14
    x = rng.standard_normal(K * image).astype(np.float32)
    wt = rng.standard_normal(channels * K).astype(np.float32)
    start = rng.standard_normal(max(plane * (channels - 1) + image, K * image)).astype(np.float32)
    got = {}
    for name, be in (("jit", JitBackend(use_cache=False, progress=False, threads=1)), ("interp", InterpreterBackend())):
        dst = VmBuffer.from_bytes(start.tobytes())
        src = dst if overlap else VmBuffer.from_bytes(x.tobytes())
        instantiate(vmfb, be)[1].lookup("conv").call([dst, src, VmBuffer.from_bytes(wt.tobytes()), channels, K])
        got[name] = dst.tobytes()
    assert got["jit"] == got["interp"]
