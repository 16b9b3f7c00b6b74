"""The vmvx microkernels called through their exports, against plain numpy references.

End-to-end agreement with IREE is in test_hal_corpus (ukernel_* programs); these pin down
strides and offsets, f32 details (FTZ, rsqrt's two roundings, fused vs unfused mmt4d
accumulation), integer wraparound, pack/unpack layouts, and the checks on every operand.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from jitvm import Trap
from jitvm.runtime.native import layout
from jitvm.runtime.modules import VmvxModule
from jitvm.runtime.modules.vmvx import mmt4d as mm
from jitvm.runtime.modules.vmvx.fma import fma_f32
from jitvm.runtime.vm.objects import VmBuffer


@pytest.fixture(scope="module")
def vmvx():
    return VmvxModule()


def call(mod, name, *args):
    out = mod.lookup(name).call(list(args))
    return out[0] if len(out) == 1 else tuple(out) if out else None


def buf(a: np.ndarray, mutable=True) -> VmBuffer:
    access = layout.BUFFER_ORIGIN_HOST | (layout.BUFFER_MUTABLE if mutable else 0)
    return VmBuffer.from_bytes(np.ascontiguousarray(a).tobytes(), access=access)


def read(b: VmBuffer, dtype) -> np.ndarray:
    return np.frombuffer(b.tobytes(), dtype=dtype).copy()


RNG = np.random.default_rng(7)


def test_exports_match_iree_vmvx_module(vmvx):
    names = set(vmvx.export_names())
    assert len(names) == 32
    assert {"add.2d.f32", "mmt4d", "pack", "unpack", "query_tile_sizes.2d", "fill.2d.x32", "copy.2d.x64"} <= names
    assert vmvx.lookup("mmt4d").cconv.text == "0rIIrIIrIIIIIiiii_v"


@pytest.mark.parametrize("name,ref", [
    ("add.2d.f32", lambda a, b: a + b), ("sub.2d.f32", lambda a, b: a - b),
    ("mul.2d.f32", lambda a, b: a * b), ("div.2d.f32", lambda a, b: a / b),
])
def test_binary_f32_strided(vmvx, name, ref):
    a = RNG.standard_normal((6, 10)).astype(np.float32)
    b = RNG.standard_normal((6, 10)).astype(np.float32) + 3
    out = buf(np.zeros(64, np.float32))
    # lhs: every other column starting at element 1; rhs: transposed view; out at offset 4 with row stride 8
    la, rb = buf(a), buf(np.ascontiguousarray(b.T))
    call(vmvx, name, la, 1, 10, 2, rb, 0, 1, 6, out, 4, 8, 1, 6, 4)
    got = read(out, np.float32)[4:4 + 48].reshape(6, 8)[:, :4]
    want = ref(a[:, 1:9:2], b[:, :4])
    assert got.tobytes() == want.astype(np.float32).tobytes()


def test_integer_ops_wrap_and_shift_amounts_mask(vmvx):
    a = np.array([[0x7FFFFFFF, -8, 5, -1]], np.int32)
    b = np.array([[1, 3, 33, 31]], np.int32)
    out = buf(np.zeros(4, np.int32))
    expect = {
        "add.2d.i32": [-0x80000000, -5, 38, 30], "mul.2d.i32": [0x7FFFFFFF, -24, 165, -31],
        "shl.2d.i32": [-2, -64, 10, -0x80000000], "shrs.2d.i32": [0x3FFFFFFF, -1, 2, -1],
        "shru.2d.i32": [0x3FFFFFFF, 0x1FFFFFFF, 2, 1], "divs.2d.i32": [0x7FFFFFFF, -2, 0, 0],
    }
    for name, want in expect.items():
        call(vmvx, name, buf(a), 0, 4, 1, buf(b), 0, 4, 1, out, 0, 4, 1, 1, 4)
        assert read(out, np.int32).tolist() == want, name
    with pytest.raises(Trap, match="integer division by zero"):
        call(vmvx, "divs.2d.i32", buf(a), 0, 4, 1, buf(np.zeros((1, 4), np.int32)), 0, 4, 1, out, 0, 4, 1, 1, 4)


def test_unary_f32_semantics(vmvx):
    x = np.array([[4.0, 2.0, -1.5, 0.0, 1e-40, 3.0e38, -0.0, 10.0]], np.float32)
    out = buf(np.zeros(8, np.float32))
    run = lambda name: (call(vmvx, name, buf(x), 0, 8, 1, out, 0, 8, 1, 1, 8), read(out, np.float32))[1]  # noqa
    assert run("abs.2d.f32").tolist() == np.abs(np.where(np.abs(x) < 1.2e-38, 0, x)).ravel().tolist()
    rs = run("rsqrt.2d.f32")
    assert rs[0] == np.float32(0.5) and rs[1] == np.float32(1) / np.sqrt(np.float32(2))  # two roundings
    assert np.isinf(rs[4]) and rs[4] > 0  # 1e-40 is flushed to +0 first (FTZ/DAZ like IREE)
    assert run("neg.2d.f32")[4] == 0 and np.signbit(run("neg.2d.f32")[4])
    assert run("ceil.2d.f32")[2] == -1.0 and run("floor.2d.f32")[2] == -2.0
    e = run("exp.2d.f32")
    assert e[1] == np.float32(np.exp(2.0)) and np.isinf(e[5])
    assert run("log.2d.f32")[0] == np.float32(np.log(4.0))


def test_ctlz_fill_and_copies(vmvx):
    x = np.array([[0, 1, 0x80000000, 0xFFFF]], np.uint32)
    out = buf(np.zeros(4, np.uint32))
    call(vmvx, "ctlz.2d.i32", buf(x), 0, 4, 1, out, 0, 4, 1, 1, 4)
    assert read(out, np.uint32).tolist() == [32, 31, 0, 16]
    grid = buf(np.zeros(12, np.int32))
    call(vmvx, "fill.2d.x32", -3, grid, 1, 4, 2, 3)
    assert read(grid, np.int32).tolist() == [0, -3, -3, -3, 0, -3, -3, -3, 0, 0, 0, 0]
    for width, dtype in (("x8", np.int8), ("x16", np.int16), ("x32", np.int32), ("x64", np.int64)):
        src = np.arange(12, dtype=dtype).reshape(3, 4)
        dst = buf(np.zeros(12, dtype))
        call(vmvx, f"copy.2d.{width}", buf(src), 0, 1, 4, dst, 0, 3, 1, 4, 3)  # a transpose
        assert read(dst, dtype).reshape(4, 3).tolist() == src.T.tolist()


def test_operands_are_checked(vmvx):
    a = buf(np.zeros(8, np.float32))
    ro = buf(np.zeros(8, np.float32), mutable=False)
    with pytest.raises(Trap, match=r"vmvx.add.2d.f32 rhs: access out of bounds \(byte offset=0, span=36"):
        call(vmvx, "add.2d.f32", a, 0, 4, 1, a, 0, 5, 1, a, 0, 4, 1, 2, 4)
    with pytest.raises(Trap, match="vmvx.add.2d.f32 out: buffer is read-only"):
        call(vmvx, "add.2d.f32", a, 0, 4, 1, a, 0, 4, 1, ro, 0, 4, 1, 2, 4)
    with pytest.raises(Trap, match="expected !vm.buffer, got null"):
        call(vmvx, "abs.2d.f32", None, 0, 4, 1, a, 0, 4, 1, 2, 4)
    with pytest.raises(Trap, match="buffer overflow for vmvx.abs.2d.f32 in"):
        call(vmvx, "abs.2d.f32", a, 0, -4, 1, a, 0, 4, 1, 2, 4)


def test_fma_is_correctly_rounded_where_double_rounding_would_not_be():
    a = np.float32(1 + 2 ** -23)
    b = np.float32(2 ** -24 * (1 - 2 ** -23))
    c = np.float32(1 + 2 ** -23)
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    got = fma_f32(np.array([a]), np.array([b]), np.array([c]))[0]
    naive = np.float32(np.float64(a) * np.float64(b) + np.float64(c))
    assert got == np.float32(1 + 2 ** -23) and naive != got  # the naive route double-rounds
    assert abs(Fraction(float(got)) - exact) < abs(Fraction(float(naive)) - exact)


def _mmt4d_inputs(M, N, K, M0, N0, K0, dtype):
    if dtype == np.int8:
        lhs = RNG.integers(-128, 128, (M, K, M0, K0)).astype(np.int8)
        rhs = RNG.integers(-128, 128, (N, K, N0, K0)).astype(np.int8)
    else:
        lhs = RNG.standard_normal((M, K, M0, K0)).astype(np.float32)
        rhs = RNG.standard_normal((N, K, N0, K0)).astype(np.float32)
    return lhs, rhs


def test_mmt4d_i8_accumulates_exactly(vmvx):
    M, N, K, M0, N0, K0 = 2, 3, 5, 8, 8, 2
    lhs, rhs = _mmt4d_inputs(M, N, K, M0, N0, K0, np.int8)
    init = RNG.integers(-1000, 1000, (M, N, M0, N0)).astype(np.int32)
    out = buf(init)
    call(vmvx, "mmt4d", buf(lhs), 0, K * M0 * K0, buf(rhs), 0, K * N0 * K0, out, 0, N * M0 * N0, M, N, K, M0, N0,
         K0, mm.S8S8S32 | mm.ACCUMULATE)
    want = init + np.einsum("ikac,jkbc->ijab", lhs.astype(np.int32), rhs.astype(np.int32))
    assert np.array_equal(read(out, np.int32).reshape(M, N, M0, N0), want)


@pytest.mark.parametrize("tiles,fused", [((8, 8, 1), True), ((8, 8, 4), False), ((4, 4, 1), False)])
def test_mmt4d_f32_accumulation_order_and_fusion(vmvx, tiles, fused):
    M0, N0, K0 = tiles
    M, N, K = 2, 2, 7
    lhs, rhs = _mmt4d_inputs(M, N, K, M0, N0, K0, np.float32)
    out = buf(np.zeros((M, N, M0, N0), np.float32))
    call(vmvx, "mmt4d", buf(lhs), 0, K * M0 * K0, buf(rhs), 0, K * N0 * K0, out, 0, N * M0 * N0, M, N, K, M0, N0,
         K0, mm.F32F32F32)
    def reference(fuse):
        acc = np.zeros((M, N, M0, N0), np.float32)
        for k in range(K):  # sequential over k then k0, one rounding (fused) or two per step
            for k0 in range(K0):
                x, y = lhs[:, k, :, k0][:, None, :, None], rhs[:, k, :, k0][None, :, None, :]
                acc = fma_f32(x, y, acc) if fuse else (acc + x * y).astype(np.float32)
        return acc.tobytes()

    got = read(out, np.float32).tobytes()
    assert got == reference(fused)
    assert got != reference(not fused)  # the inputs are rich enough to tell the two apart


def test_query_tile_sizes_like_an_avx2_cpu(vmvx):
    lhs, rhs, res = 1, 2, 3
    assert call(vmvx, "query_tile_sizes.2d", 10, 10, 0x0100 | lhs) == (8, 1)
    assert call(vmvx, "query_tile_sizes.2d", 10, 10, 0x0100 | res) == (8, 8)
    assert call(vmvx, "query_tile_sizes.2d", 10, 10, 0x0200 | rhs) == (8, 2)


@pytest.mark.parametrize("flags", [0x01, 0x01 | 0x100, 0x01 | 0x200, 0x01 | 0x300])
def test_pack_unpack_roundtrip_with_padding(vmvx, flags):
    src = RNG.standard_normal((5, 7)).astype(np.float32)
    T0, T1 = 4, 3  # tiles over input rows/cols
    outer = (2, 3)
    s0, s1 = (outer[1], outer[0]) if flags & 0x200 else outer
    s2, s3 = (T1, T0) if flags & 0x100 else (T0, T1)
    packed = buf(np.zeros(s0 * s1 * s2 * s3, np.float32))
    pad = int(np.float32(-9.0).view(np.uint32))
    call(vmvx, "pack", buf(src), 0, 7, 1, packed, 0, s1 * s2 * s3, s2 * s3, 5, 7, s0, s1, s2, s3, pad, flags)
    full = np.full((8, 9), -9.0, np.float32)
    full[:5, :7] = src
    tiled = full.reshape(2, T0, 3, T1).transpose(0, 2, 1, 3)
    if flags & 0x200:
        tiled = tiled.swapaxes(0, 1)
    if flags & 0x100:
        tiled = tiled.swapaxes(2, 3)
    assert np.array_equal(read(packed, np.float32).reshape(s0, s1, s2, s3), tiled)
    back = buf(np.zeros(35, np.float32))
    call(vmvx, "unpack", packed, 0, s1 * s2 * s3, s2 * s3, back, 0, 7, 1, s0, s1, s2, s3, 5, 7, flags)
    assert np.array_equal(read(back, np.float32).reshape(5, 7), src)


def test_unhandled_flags_are_errors(vmvx):
    a = buf(np.zeros(16, np.float32))
    with pytest.raises(Trap, match="vmvx.mmt4d: unhandled flags"):
        call(vmvx, "mmt4d", a, 0, 1, a, 0, 1, a, 0, 1, 1, 1, 1, 1, 1, 1, 0x05)
    with pytest.raises(Trap, match="vmvx.unpack: unhandled flags"):
        call(vmvx, "unpack", a, 0, 4, 4, a, 0, 4, 1, 1, 1, 2, 2, 2, 2, 0x02)
