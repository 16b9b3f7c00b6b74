"""Raw register values <-> the Python values of the runtime's call API.

Interpreted functions pass values raw, as register bits: i32/f32 as an unsigned 32-bit
pattern, i64/f64 as an unsigned 64-bit pattern, refs as object addresses that carry one
owned reference. Python callers and Python-implemented imports use int, float, Ref/None.
"""

from __future__ import annotations

import operator

from ..errors import ArgumentError
from ..runtime.objects import Ref
from . import floats

M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF


def to_python(code: str, raw: int):
    """A raw value as a Python value; a ref's owned reference moves into the new Ref."""
    if code == "i":
        return raw - (1 << 32) if raw & 0x80000000 else raw
    if code == "I":
        return raw - (1 << 64) if raw >> 63 else raw
    if code == "f":
        return floats.bits_f32(raw)
    if code == "F":
        return floats.bits_f64(raw)
    return Ref.wrap(raw, retain_it=False) if raw else None


_KIND = {"i": "i32", "I": "i64", "f": "f32", "F": "f64", "r": "ref"}


def to_raw(code: str, value, what: str) -> int:
    """A Python value as a raw value WITHOUT taking a reference (see `retain_refs`).

    Raises ArgumentError naming `what` for a value of the wrong kind.
    """
    try:
        if code == "i":
            return operator.index(value) & M32
        if code == "I":
            return operator.index(value) & M64
        if code == "f":
            return floats.f32_bits(float(value))
        if code == "F":
            return floats.f64_bits(float(value))
    except (TypeError, ValueError):
        raise ArgumentError(f"{what} must be an {_KIND[code]} (got {type(value).__name__} {value!r})") from None
    if value is None:
        return 0
    if isinstance(value, Ref) and value.addr:
        return value.addr
    raise ArgumentError(f"{what} must be a ref or None (got {type(value).__name__})")
