"""SipHash-2-4, the hash `vm.buffer.hash` computes (128-bit key 00 01 02 ... 0f).

One implementation for both backends: the interpreter calls `siphash24` directly and
JIT-compiled code calls it through the native symbol `jv_siphash24`.
"""

from __future__ import annotations

import ctypes
import struct

_M = 0xFFFFFFFFFFFFFFFF
_K0, _K1 = struct.unpack("<QQ", bytes(range(16)))


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _M


def _round(v0, v1, v2, v3):
    v0 = (v0 + v1) & _M
    v1 = _rotl(v1, 13) ^ v0
    v0 = _rotl(v0, 32)
    v2 = (v2 + v3) & _M
    v3 = _rotl(v3, 16) ^ v2
    v0 = (v0 + v3) & _M
    v3 = _rotl(v3, 21) ^ v0
    v2 = (v2 + v1) & _M
    v1 = _rotl(v1, 17) ^ v2
    v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def siphash24(data: bytes, k0: int = _K0, k1: int = _K1) -> int:
    """The 64-bit SipHash-2-4 of `data`, as a signed i64 like the VM returns it."""
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573
    n = len(data)
    full = n - n % 8
    for (m,) in struct.iter_unpack("<Q", data[:full]):
        v3 ^= m
        v0, v1, v2, v3 = _round(*_round(v0, v1, v2, v3))
        v0 ^= m
    tail = data[full:] + bytes(7 - n % 8)
    b = ((n & 0xFF) << 56) | int.from_bytes(tail[:7], "little")
    v3 ^= b
    v0, v1, v2, v3 = _round(*_round(v0, v1, v2, v3))
    v0 ^= b
    v2 ^= 0xFF
    for _ in range(4):
        v0, v1, v2, v3 = _round(v0, v1, v2, v3)
    h = v0 ^ v1 ^ v2 ^ v3
    return h - (1 << 64) if h >> 63 else h


def _native_siphash24(ptr: int, length: int) -> int:
    return siphash24(ctypes.string_at(ptr, length) if length else b"")


# Name -> (ctypes prototype, implementation) of the callback (linked by runtime.vm.symbols).
CALLBACKS = {
    "jv_siphash24": (ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_uint64), _native_siphash24),
}
