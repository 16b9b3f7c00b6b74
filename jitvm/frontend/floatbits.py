"""f32 immediates as Python floats without losing a signalling NaN.

A Python float is a double. C's float <-> double conversions (what `struct`'s "<f" does)
quiet a signalling NaN, but the VM moves f32 constants as bits, and IREE returns an sNaN
constant unchanged. These conversions are exact for every f32, NaN payloads and the
quiet bit included: the 23 payload bits sit in the top of the double's 52.
"""

from __future__ import annotations

import math
import struct

_F = struct.Struct("<f")
_I = struct.Struct("<I")
_D = struct.Struct("<d")
_Q = struct.Struct("<Q")
_PAYLOAD_SHIFT = 52 - 23


def f32_from_bits(bits: int) -> float:
    """The double holding the f32 with these 32 bits (exact; NaNs keep payload and kind)."""
    bits &= 0xFFFFFFFF
    if bits & 0x7F800000 == 0x7F800000 and bits & 0x007FFFFF:
        sign = (bits >> 31) << 63
        return _D.unpack(_Q.pack(sign | (0x7FF << 52) | ((bits & 0x007FFFFF) << _PAYLOAD_SHIFT)))[0]
    return _F.unpack(_I.pack(bits))[0]


def f32_to_bits(value: float) -> int:
    """The 32 bits of `value` as an f32: rounded to nearest (OverflowError beyond the f32
    range), NaNs narrowed by keeping the top payload bits, as f32_from_bits widened them."""
    if math.isnan(value):
        bits = _Q.unpack(_D.pack(value))[0]
        payload = (bits >> _PAYLOAD_SHIFT) & 0x007FFFFF
        if not payload:  # a double NaN whose payload lives only in the low bits
            payload = 0x00400000
        return ((bits >> 63) << 31) | 0x7F800000 | payload
    return _I.unpack(_F.pack(value))[0]


def round_to_f32(value: float) -> float:
    """`value` rounded to the nearest f32 (NaNs kept as they are)."""
    return f32_from_bits(f32_to_bits(value))
