"""Flat loops over delinearised indices run chunk by chunk (lower.loops.delinearise).

The kernels walk a d0 x d1 x d2 tile as one loop and recover the indices with IREE's
floordiv/floormod sequences (sdiv/srem, compares, selects), as VMVX code does. The JIT must
give the interpreter's results, bytes and traps alike, with chunking on and off, including
where the chunk head's facts fail and single iterations of the original code run: negative
indices, zero and negative divisors, values next to the ends of i64, stores out of range.
"""

from __future__ import annotations

import random
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
from jitvm.lower.loops.delinearise import ChunkPlan
from jitvm.lower.loops.versioning import NestVersioning
from jitvm.runtime.vm.objects import VmBuffer
from jitvm.verify import verify_module

# IREE's floordiv(x, n) into %q and floormod(x, n) into %r (registers as below).
_FLOOR = """
  %i60:61 = vm.div.i64.s {x}, {n}
  %i62:63 = vm.mul.i64 %i60:61, {n}
  %i64 = vm.cmp.ne.i64 {x}, %i62:63
  %i65 = vm.cmp.lt.i64.s {x}, %i14:15
  %i66 = vm.cmp.lt.i64.s {n}, %i14:15
  %i66 = vm.cmp.ne.i32 %i65, %i66
  %i66 = vm.and.i32 %i64, %i66
  %i62:63 = vm.add.i64 %i60:61, %i18:19
  {q} = vm.select.i64 %i66 ? %i62:63 : %i60:61
  %i60:61 = vm.rem.i64.s {x}, {n}
  %i64 = vm.cmp.lt.i64.s %i60:61, %i14:15
  %i62:63 = vm.add.i64 %i60:61, {n}
  {r} = vm.select.i64 %i64 ? %i62:63 : %i60:61"""

# @k(out, in, d0, d1, d2, start, bound, limit, off): for i in [start, bound): c, h, w =
# delinearise(i) over d1 x d2 tiles; out[off + (c*(d1+1) + h)*(d2+1) + w] =
# w < limit ? in[off + (w*d1 + h)*d0 + c] : 0 (a transposing read, the output padded by one
# row and column, padding fused as a select on a delinearised index).
KERNEL = """
vm.module @delin version 0
vm.export @k
vm.func @k(%r0: !vm.buffer, %r1: !vm.buffer, %i0: i32, %i1: i32, %i2: i32, %i3: i32, %i4: i32, %i5: i32, %i6: i32) -> () {{
^bb0:
  %i8:9 = vm.ext.i32.i64.s %i0
  %i10:11 = vm.ext.i32.i64.s %i1
  %i12:13 = vm.ext.i32.i64.s %i2
  %i14:15 = vm.const.i64.zero
  %i16:17 = vm.const.i64 1
  %i18:19 = vm.const.i64 -1
  %i20:21 = vm.ext.i32.i64.s %i3
  %i22:23 = vm.ext.i32.i64.s %i4
  %i24:25 = vm.ext.i32.i64.s %i5
  %i26:27 = vm.ext.i32.i64.s %i6
  %i28:29 = vm.add.i64 %i10:11, %i16:17
  %i30:31 = vm.add.i64 %i12:13, %i16:17
  %i7 = vm.const.f32.zero
  vm.br ^bb1(%i20->%i32, %i21->%i33)
^bb1:
  %i34 = vm.cmp.lt.i64.s %i32:33, %i22:23
  vm.cond_br %i34, ^bb2(), ^bb3()
^bb2:
  %i36:37 = vm.mul.i64 %i12:13, %i10:11
{floor_c}
{floor_rest}
  %i38:39 = vm.div.i64.s %i38:39, %i12:13
{floor_w}
  %i44:45 = vm.fma.i64 %i42:43, %i10:11, %i38:39
  %i44:45 = vm.fma.i64 %i44:45, %i8:9, %i40:41
  %i44:45 = vm.add.i64 %i44:45, %i26:27
  %i46 = vm.buffer.load.f32 %r1, %i44:45
  %i47 = vm.cmp.lt.i64.s %i42:43, %i24:25
  %i46 = vm.select.f32 %i47 ? %i46 : %i7
  %i44:45 = vm.fma.i64 %i40:41, %i28:29, %i38:39
  %i44:45 = vm.fma.i64 %i44:45, %i30:31, %i42:43
  %i44:45 = vm.add.i64 %i44:45, %i26:27
  vm.buffer.store.f32 %i46, %r0, %i44:45
  %i32:33 = vm.add.i64 %i32:33, %i16:17
  vm.br ^bb1()
^bb3:
  vm.return
}}
""".format(floor_c=_FLOOR.format(x="%i32:33", n="%i36:37", q="%i40:41", r="%i38:39"),
           floor_rest="", floor_w=_FLOOR.format(x="%i32:33", n="%i12:13", q="%i48:49", r="%i42:43"))

# @acc(out, in, W, C, H): for i in [0, H*W): h, w = delinearise(i) by W; for c in [0, C):
# out[c*S + h*W + w] += in[c*H*W + h*W + w], S a constant. Columns w are chunked and jammed
# over the channel loop; with S < W different (c, w) pairs share elements, so the jam must
# keep its copies S apart (or the additions' order, and the bits, change).
ACCUMULATE = """
vm.module @acc version 0
vm.export @acc
vm.func @acc(%r0: !vm.buffer, %r1: !vm.buffer, %i0: i32, %i1: i32, %i2: i32) -> () {{
^bb0:
  %i4:5 = vm.ext.i32.i64.s %i0
  %i6:7 = vm.ext.i32.i64.s %i1
  %i8:9 = vm.const.i64 {stride}
  %i10:11 = vm.ext.i32.i64.s %i2
  %i12:13 = vm.mul.i64 %i10:11, %i4:5
  %i14:15 = vm.const.i64.zero
  %i16:17 = vm.const.i64 1
  %i18:19 = vm.const.i64 -1
  vm.br ^bb1(%i14->%i20, %i15->%i21)
^bb1:
  %i22 = vm.cmp.lt.i64.s %i20:21, %i12:13
  vm.cond_br %i22, ^bb2(), ^bb6()
^bb2:
{floor}
  %i28:29 = vm.fma.i64 %i24:25, %i4:5, %i26:27
  vm.br ^bb3(%i14->%i30, %i15->%i31)
^bb3:
  %i32 = vm.cmp.lt.i64.s %i30:31, %i6:7
  vm.cond_br %i32, ^bb4(), ^bb5()
^bb4:
  %i34:35 = vm.fma.i64 %i30:31, %i8:9, %i28:29
  %i36:37 = vm.fma.i64 %i30:31, %i12:13, %i28:29
  %i38 = vm.buffer.load.f32 %r1, %i36:37
  %i39 = vm.buffer.load.f32 %r0, %i34:35
  %i39 = vm.add.f32 %i39, %i38
  vm.buffer.store.f32 %i39, %r0, %i34:35
  %i30:31 = vm.add.i64 %i30:31, %i16:17
  vm.br ^bb3()
^bb5:
  %i20:21 = vm.add.i64 %i20:21, %i16:17
  vm.br ^bb1()
^bb6:
  vm.return
}}
"""


def _accumulate(stride: int) -> str:
    return ACCUMULATE.format(stride=stride, floor=_FLOOR.format(x="%i20:21", n="%i4:5", q="%i24:25", r="%i26:27"))


@pytest.mark.parametrize("stride,factor", [(4, 4), (1000, 64)])
def test_jammed_columns_keep_their_elements_apart(backends, stride, factor):
    (plan,) = _plans(_accumulate(stride))
    vf = verify_module(load_module(assemble(_accumulate(stride), "<acc>"))).functions[0]
    assert jam.plan(vf, plan.chunk).factor == factor
    vmfb = assemble(_accumulate(stride), "<acc>")
    rng = np.random.default_rng(stride)
    width, channels, height = 37, 5, 3
    data = (rng.standard_normal(channels * height * width) * 10.0 ** rng.integers(-3, 4, channels * height * width))
    start = rng.standard_normal(stride * channels + height * width + 64).astype(np.float32)
    got = {}
    for name, be in backends.items():
        inst = instantiate(vmfb, be)[1]
        dst, src = VmBuffer.from_bytes(start.tobytes()), VmBuffer.from_bytes(data.astype(np.float32).tobytes())
        inst.lookup("acc").call([dst, src, width, channels, height])
        got[name] = dst.tobytes()
    assert got["chunked"] == got["interp"] == got["unchunked"]


# @s(hi, lo, n, a, b, d): the wrapping i64 sum over i in [start, start + n), start = hi * 2^32 +
# lo (unsigned), of chains whose dividends move by 3 (3i + a) and by -1 (b - i) per
# iteration, signed and unsigned divisions by d, an equality and an order compare feeding
# selects (one through an and of an order compare and an inequality, both flipping within
# a chunk): no memory, values anywhere in i64 (its ends included).
SUMS = """
vm.module @sums version 0
vm.export @s
vm.func @s(%i0: i32, %i1: i32, %i2: i32, %i3: i32, %i4: i32, %i5: i32) -> (i64) {
^bb0:
  %i6:7 = vm.ext.i32.i64.s %i0
  %i50 = vm.const.i32 32
  %i6:7 = vm.shl.i64 %i6:7, %i50
  %i8:9 = vm.ext.i32.i64.u %i1
  %i6:7 = vm.add.i64 %i6:7, %i8:9
  %i8:9 = vm.ext.i32.i64.s %i2
  %i8:9 = vm.add.i64 %i6:7, %i8:9
  %i10:11 = vm.ext.i32.i64.s %i3
  %i12:13 = vm.ext.i32.i64.s %i4
  %i14:15 = vm.ext.i32.i64.s %i5
  %i16:17 = vm.const.i64 1
  %i18:19 = vm.const.i64 3
  %i20:21 = vm.const.i64 1000003
  %i22:23 = vm.const.i64.zero
  vm.br ^bb1(%i6->%i24, %i7->%i25)
^bb1:
  %i26 = vm.cmp.lt.i64.s %i24:25, %i8:9
  vm.cond_br %i26, ^bb2(), ^bb3()
^bb2:
  %i28:29 = vm.fma.i64 %i24:25, %i18:19, %i10:11
  %i30:31 = vm.div.i64.s %i28:29, %i14:15
  %i32:33 = vm.rem.i64.s %i28:29, %i14:15
  %i34:35 = vm.sub.i64 %i12:13, %i24:25
  %i36:37 = vm.div.i64.u %i34:35, %i14:15
  %i38:39 = vm.rem.i64.u %i34:35, %i14:15
  %i40 = vm.cmp.eq.i64 %i38:39, %i30:31
  %i41 = vm.cmp.lt.i64.s %i32:33, %i36:37
  %i42:43 = vm.select.i64 %i40 ? %i30:31 : %i36:37
  %i44:45 = vm.select.i64 %i41 ? %i32:33 : %i28:29
  %i52 = vm.cmp.lt.i64.s %i24:25, %i12:13
  %i53 = vm.cmp.ne.i64 %i24:25, %i14:15
  %i54 = vm.and.i32 %i52, %i53
  %i56:57 = vm.select.i64 %i54 ? %i30:31 : %i36:37
  %i46:47 = vm.fma.i64 %i56:57, %i20:21, %i32:33
  %i46:47 = vm.fma.i64 %i46:47, %i20:21, %i30:31
  %i46:47 = vm.fma.i64 %i46:47, %i20:21, %i36:37
  %i46:47 = vm.fma.i64 %i46:47, %i20:21, %i38:39
  %i46:47 = vm.fma.i64 %i46:47, %i20:21, %i42:43
  %i46:47 = vm.fma.i64 %i46:47, %i20:21, %i44:45
  %i22:23 = vm.add.i64 %i22:23, %i46:47
  %i24:25 = vm.add.i64 %i24:25, %i16:17
  vm.br ^bb1()
^bb3:
  vm.return %i22:23
}
"""


def _plans(source: str) -> list:
    vf = verify_module(load_module(assemble(source, "<delin>"))).functions[0]
    return [n for n in NestVersioning().nests(vf).values() if isinstance(n, ChunkPlan)]


def test_the_flat_loops_are_chunked():
    """Both kernels' loops qualify (the tests below must exercise the chunked lowering)."""
    (kernel,) = _plans(KERNEL)
    assert len(kernel.overridden) >= 8 and len(kernel.chunk.accesses) == 2
    (sums,) = _plans(SUMS)
    assert len(sums.overridden) == 7


@pytest.fixture(scope="module")
def backends():
    return {"chunked": JitBackend(use_cache=False, progress=False, threads=1),
            "unchunked": JitBackend(use_cache=False, progress=False, threads=1, loop_steps={"chunk_loops": False}),
            "interp": InterpreterBackend()}


@pytest.fixture(scope="module")
def kernels(backends):
    vmfb = assemble(KERNEL, "<delin>")
    return {name: instantiate(vmfb, be)[1] for name, be in backends.items()}


def _kernel(inst, d0, d1, d2, start, bound, limit, off, out_size=None, in_size=None):
    """The output buffer's bytes and the trap (status and message), if any."""
    out_size = out_size if out_size is not None else off + abs(d0) * (abs(d1) + 1) * (abs(d2) + 1)
    in_size = in_size if in_size is not None else off + abs(d0 * d1 * d2)
    data = np.arange(1, in_size + 1, dtype=np.float32)
    dst, src = VmBuffer.from_bytes(bytes(4 * out_size)), VmBuffer.from_bytes(data.tobytes())
    trap = None
    try:
        inst.lookup("k").call([dst, src, d0, d1, d2, start, bound, limit, off])
    except jitvm.Trap as e:
        trap = (e.status_name, e.message)
    return dst.tobytes(), trap


KERNEL_CASES = {  # (d0, d1, d2, start, bound, limit, off[, out size, in size])
    "rows of 37, padding at 30": (3, 5, 37, 0, 3 * 5 * 37, 30, 0),
    "rows of 64 and of 48": (2, 3, 64, 0, 2 * 3 * 64, 64, 0),
    "a bound inside a row": (3, 4, 21, 0, 3 * 4 * 21 - 10, 21, 0),
    "a start inside a row": (3, 4, 21, 17, 3 * 4 * 21, 5, 0),
    "rows of one": (4, 6, 1, 0, 24, 1, 0),
    "negative indices first": (3, 4, 21, -40, 3 * 4 * 21, 21, 400),
    "divisor zero": (3, 4, 0, 0, 10, 21, 0, 100, 100),
    "negative divisor": (3, 4, -5, 0, 30, 3, 300, 400, 400),
    "a store out of range": (3, 5, 37, 0, 3 * 5 * 37, 30, 0, 3 * 6 * 38 - 40),
    "a load out of range": (3, 5, 37, 0, 3 * 5 * 37, 37, 0, None, 3 * 5 * 37 - 3),
    "nothing to do": (3, 5, 37, 50, 10, 30, 0),
}


@pytest.mark.parametrize("case", KERNEL_CASES.values(), ids=KERNEL_CASES.keys())
def test_kernel_agrees_with_the_interpreter(kernels, case):
    got = {name: _kernel(inst, *case) for name, inst in kernels.items()}
    assert got["chunked"] == got["interp"]
    assert got["unchunked"] == got["interp"]


def test_traps_are_the_interpreters(kernels):
    """The trapping cases do trap (else the comparison above proves less than it says)."""
    for name in ("divisor zero", "a store out of range", "a load out of range"):
        _, trap = _kernel(kernels["interp"], *KERNEL_CASES[name])
        assert trap is not None, name


def _i32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def _sum_case(start: int, n: int, a: int, b: int, d: int) -> tuple:
    return (_i32(start >> 32), _i32(start), n, a, b, d)


MAX = (1 << 63) - 1


def _sum_cases():
    rng = random.Random(22)
    cases = [_sum_case(*c) for c in [
        (0, 200, 0, 100, 7), (-100, 200, 5, -3, 7), (0, 50, 0, 0, 1), (0, 50, 3, 9, -4),
        (0, 60, 0, 40, 0),  # divisor zero: traps in the first iteration
        (MAX - 60, 60, 0, 0, 9), (MAX - 60, 60, -(1 << 31), 5, 1 << 30),  # the top of i64 (3i + a wraps)
        (-MAX - 1, 60, 7, 5, 11), (-MAX - 1, 60, -5, -(1 << 31), (1 << 31) - 1),  # ... and the bottom
        (MAX // 3 - 30, 60, 0, 0, 13), (-(MAX // 3) - 30, 60, 0, 0, 13),  # 3i + a wraps inside the chunk
    ]]
    for _ in range(24):
        d = rng.choice([1, 2, 3, 7, 16, 64, 113, -3, rng.randrange(1, 1 << 31)])
        cases.append(_sum_case(rng.randrange(-300, 300), rng.randrange(0, 400), rng.randrange(-1000, 1000),
                               rng.randrange(-1000, 1000), d))
    return cases


def test_sums_agree_with_the_interpreter(backends):
    vmfb = assemble(SUMS, "<sums>")
    insts = {name: instantiate(vmfb, be)[1] for name, be in backends.items()}
    for case in _sum_cases():
        got = {}
        for name, inst in insts.items():
            try:
                got[name] = inst.lookup("s").call(list(case))
            except jitvm.Trap as e:
                got[name] = (e.status_name, e.message)
        assert got["chunked"] == got["interp"] == got["unchunked"], case


# An NCHW 1x1 convolution with bias, ReLU6 and the next layer's padding fused, as exported
# models have them (EfficientNet-Lite0's hottest dispatch at a small size).
CONV_PAD = """
func.func @main(%x: tensor<1x2x3x70xf32>, %w: tensor<3x2x1x1xf32>, %bias: tensor<3xf32>) -> tensor<1x3x4x71xf32> {
  %zero = arith.constant 0.0 : f32
  %six = arith.constant 6.0 : f32
  %init = tensor.empty() : tensor<1x3x3x70xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<1x3x3x70xf32>) -> tensor<1x3x3x70xf32>
  %conv = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x2x3x70xf32>, tensor<3x2x1x1xf32>) outs(%fill : tensor<1x3x3x70xf32>) -> tensor<1x3x3x70xf32>
  %act = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (c)>,
                                          affine_map<(n, c, h, w) -> (n, c, h, w)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%conv, %bias : tensor<1x3x3x70xf32>, tensor<3xf32>) outs(%init : tensor<1x3x3x70xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %m = arith.maximumf %s, %zero : f32
    %n = arith.minimumf %m, %six : f32
    linalg.yield %n : f32
  } -> tensor<1x3x3x70xf32>
  %pad = tensor.pad %act low[0, 0, 0, 0] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x3x3x70xf32> to tensor<1x3x4x71xf32>
  return %pad : tensor<1x3x4x71xf32>
}
"""


# A 3x3 depthwise NCHW convolution with bias and ReLU6: each chunk (output columns) holds
# the channel and window loops, and the columns are jammed although the accumulator's
# element moves with the channel: no two jammed copies touch the same element.
DEPTHWISE = """
func.func @main(%x: tensor<1x4x5x72xf32>, %w: tensor<4x3x3xf32>, %bias: tensor<4xf32>) -> tensor<1x4x3x70xf32> {
  %zero = arith.constant 0.0 : f32
  %six = arith.constant 6.0 : f32
  %init = tensor.empty() : tensor<1x4x3x70xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<1x4x3x70xf32>) -> tensor<1x4x3x70xf32>
  %conv = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x4x5x72xf32>, tensor<4x3x3xf32>) outs(%fill : tensor<1x4x3x70xf32>) -> tensor<1x4x3x70xf32>
  %act = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (c)>,
                                          affine_map<(n, c, h, w) -> (n, c, h, w)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%conv, %bias : tensor<1x4x3x70xf32>, tensor<4xf32>) outs(%init : tensor<1x4x3x70xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %m = arith.maximumf %s, %zero : f32
    %n = arith.minimumf %m, %six : f32
    linalg.yield %n : f32
  } -> tensor<1x4x3x70xf32>
  return %act : tensor<1x4x3x70xf32>
}
"""

PROGRAMS = {  # name -> (MLIR, input shapes, chunked loops, whether one chunk's nest is jammed)
    "1x1 conv + padding": (CONV_PAD, ((1, 2, 3, 70), (3, 2, 1, 1), (3,)), 3, True),
    "depthwise 3x3 conv": (DEPTHWISE, ((1, 4, 5, 72), (4, 3, 3), (4,)), 3, True),
}


@pytest.mark.skipif(shutil.which("iree-compile") is None, reason="needs iree-compile")
@pytest.mark.parametrize("program", PROGRAMS.values(), ids=PROGRAMS.keys())
def test_nchw_convolutions_are_bit_identical(tmp_path, backends, program):
    import iree.runtime as ireert

    text, shapes, chunked, jammed = program
    src, vmfb = tmp_path / "conv.mlir", tmp_path / "conv.vmfb"
    src.write_text(text)
    dumps = tmp_path / "bin"
    subprocess.run(["iree-compile", "--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=vmvx",
                    f"--iree-hal-dump-executable-binaries-to={dumps}", str(src), "-o", str(vmfb)], check=True)
    (dispatch,) = dumps.glob("*.vmfb")
    vf = verify_module(load_module(dispatch.read_bytes())).functions[0]
    plans = [n for n in NestVersioning().nests(vf).values() if isinstance(n, ChunkPlan)]
    assert len(plans) == chunked  # fill, convolution, bias + ReLU6 (+ padding)
    assert any(jam.plan(vf, p.chunk) is not None for p in plans) == jammed
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    want = np.asarray(ireert.load_vm_flatbuffer_file(str(vmfb), driver="local-sync").main(*args))
    for name, be in backends.items():
        got = np.asarray(jitvm.load(str(vmfb), be).function("main")(*args))
        assert got.tobytes() == want.tobytes(), name
