"""Edge values for the fuzzer, as bit patterns: what call arguments and constants draw from.

Integers are signed Python ints of the bank's width. Floats are kept as raw bit patterns
(so NaN payloads, signalling NaNs and -0.0 survive) and turned into Python floats only
where the runtime wants one (call arguments: an f32 argument goes through a C double ->
float conversion, which quiets signalling NaNs; programs that want any f32 pattern build
it with `vm.const.i32` + `vm.bitcast.i32.f32`).
"""

from __future__ import annotations

import struct

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1

EDGE_I32 = [0, 1, -1, 2, -2, 3, 7, 8, 31, 32, 33, 63, 64, 127, 128, 255, 256, -128, -129, 0x7FFF, 0x8000,
            0xFFFF, 0x10000, I32_MIN, I32_MAX, I32_MIN + 1, I32_MAX - 1, 0x55555555, -0x55555556, 1 << 24,
            (1 << 24) + 1]
EDGE_I64 = [0, 1, -1, 2, -2, 7, 8, 31, 32, 63, 64, 65, I32_MIN, I32_MAX, 1 << 31, 1 << 32, (1 << 32) - 1,
            -(1 << 32), I64_MIN, I64_MAX, I64_MIN + 1, I64_MAX - 1, 1 << 53, (1 << 53) + 1, 1 << 62,
            0x5555555555555555, -0x5555555555555556]

# f32 bit patterns: zeros, ones, halves/ties, infinities, NaNs (quiet/signalling, both signs,
# payloads), denormals, extremes, integer-range edges.
EDGE_F32 = [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x3F000000, 0xBF000000, 0x3FC00000, 0x40200000,
            0xC0200000, 0x40600000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7FC00001, 0xFFC12345,
            0x7FFFFFFF, 0x7F800001, 0xFF800001, 0x7FA00000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000,
            0x80800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x4F000000, 0xCF000000, 0x4F800000, 0x5F000000, 0xDF000000,
            0x5F800000, 0x4B800001, 0x3EFFFFFF, 0x4B000000, 0x4B7FFFFF, 0x3F7FFFFF, 0x42F60000]
EDGE_F64 = [0x0000000000000000, 0x8000000000000000, 0x3FF0000000000000, 0xBFF0000000000000, 0x3FE0000000000000,
            0xBFE0000000000000, 0x3FF8000000000000, 0x4004000000000000, 0xC004000000000000, 0x7FF0000000000000,
            0xFFF0000000000000, 0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000000000001, 0xFFF8123456789ABC,
            0x7FFFFFFFFFFFFFFF, 0x7FF0000000000001, 0x7FF4000000000000, 0x0000000000000001, 0x8000000000000001,
            0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF, 0x41E0000000000000,
            0xC1E0000000000000, 0x41F0000000000000, 0x43E0000000000000, 0xC3E0000000000000, 0x43F0000000000000,
            0x4330000000000001, 0x3FDFFFFFFFFFFFFF, 0x47EFFFFFE0000000, 0x36A0000000000000, 0x3810000000000000,
            0x41DFFFFFFFC00000, 0x3FEFFFFFFFFFFFFF]

WIDTH = {"i32": 32, "i64": 64, "f32": 32, "f64": 64}
EDGES = {"i32": EDGE_I32, "i64": EDGE_I64, "f32": EDGE_F32, "f64": EDGE_F64}


def signed(bits: int, width: int) -> int:
    bits &= (1 << width) - 1
    return bits - (1 << width) if bits >> (width - 1) else bits


def f32_of_bits(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def f64_of_bits(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits & 0xFFFFFFFFFFFFFFFF))[0]


def bits_of_f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bits_of_f64(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def is_nan_bits(bank: str, bits: int) -> bool:
    if bank == "f32":
        return (bits & 0x7F800000) == 0x7F800000 and bits & 0x007FFFFF != 0
    return (bits & 0x7FF0000000000000) == 0x7FF0000000000000 and bits & 0x000FFFFFFFFFFFFF != 0


def float_text(bank: str, bits_: int) -> str | None:
    """The assembler spelling of a float constant with exactly these bits, if it has one
    (NaNs other than the default quiet ones do not: build those from integer bits)."""
    if bank == "f32":
        x = f32_of_bits(bits_)
        if is_nan_bits(bank, bits_):
            return None
        return repr(x)
    x = f64_of_bits(bits_)
    if is_nan_bits(bank, bits_):
        return None
    return repr(x)
