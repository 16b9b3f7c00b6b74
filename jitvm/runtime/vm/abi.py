"""The one native calling convention every function and import uses across backends.

    int32_t fn(void* ctx, uint64_t* args, uint64_t* results, Trap* trap)

Arguments and results are 8-byte slots in calling-convention order: i32/f32 in the low 4
bytes (zero-extended), i64/f64 in all 8, refs as object pointers. A variadic span takes one
slot holding its repeat count followed by the repeated tuples. Argument refs are borrowed
(the callee retains what it keeps); result refs are owned by the caller. A nonzero return
is an IREE status code and `trap` says why and where.

Python-level calls use plain values instead: int for i32/i64, float for f32/f64, Ref or
None for refs, and a list of tuples for each variadic span.
"""

from __future__ import annotations

import ctypes
import operator
import struct

from ...errors import ArgumentError
from ...frontend.cconv import CallingConvention, Span
from .objects import Ref

NATIVE_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                             ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p)

_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_Q = struct.Struct("<Q")
_q = struct.Struct("<q")


M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF


def f32_slot(x: float) -> int:
    """C's (float)x as its bits: a finite double beyond f32 rounds to infinity (struct refuses it)."""
    try:
        return _U32.unpack(_F32.pack(x))[0]
    except OverflowError:
        return 0x7F800000 | (0x80000000 if x < 0 else 0)


def f64_slot(x: float) -> int:
    return _Q.unpack(_F64.pack(x))[0]


def _i32(slot: int) -> int:
    v = slot & M32
    return v - ((v & 0x80000000) << 1)


def _i64(slot: int) -> int:
    slot &= M64
    return slot - ((slot & 0x8000000000000000) << 1)


def f32_from_slot(slot: int) -> float:
    return _F32.unpack(_U32.pack(slot & M32))[0]


def f64_from_slot(slot: int) -> float:
    return _F64.unpack(_Q.pack(slot & M64))[0]


# Value code -> (Python value -> slot, slot -> Python value); refs are handled by the callers.
_TO_SLOT = {"i": lambda v: int(v) & M32, "I": lambda v: int(v) & M64,
            "f": lambda v: f32_slot(float(v)), "F": lambda v: f64_slot(float(v))}
_FROM_SLOT = {"i": _i32, "I": _i64, "f": f32_from_slot, "F": f64_from_slot}


def to_slot(code: str, value) -> int:
    """A Python value as the u64 slot for value code `code`."""
    if code == "r":
        return 0 if value is None else value.addr
    return _TO_SLOT[code](value)


def from_slot(code: str, slot: int, owned: bool):
    """The Python value in a u64 slot; refs become Refs (taking over `owned` references)."""
    if code == "r":
        return Ref.wrap(slot, retain_it=not owned)
    return _FROM_SLOT[code](slot)


def slot_count(cconv: CallingConvention, args) -> int:
    n = 0
    for spec, value in zip(cconv.args, args):
        n += 1 + len(value) * len(spec.codes) if isinstance(spec, Span) else 1
    return n


def check_arity(name: str, cconv: CallingConvention, args) -> None:
    if len(args) != len(cconv.args):
        raise ArgumentError(f"{name} takes {len(cconv.args)} arguments ({cconv.text}), got {len(args)}")


_KIND = {"i": "i32", "I": "i64", "f": "f32", "F": "f64", "r": "ref"}


def argument_slot(code: str, value, what: str) -> int:
    """A caller's Python value as its slot, or ArgumentError naming `what` when it is of the
    wrong kind: integers (no floats) for i32/i64, real numbers for f32/f64, a Ref or None for
    refs. Both backends' calls take their arguments through here."""
    if code == "r":
        if value is None or isinstance(value, Ref) and value.addr:
            return to_slot(code, value)
        raise ArgumentError(f"{what} must be a ref or None (got {type(value).__name__})")
    try:
        return to_slot(code, operator.index(value) if code in "iI" else float(value))
    except (TypeError, ValueError):
        raise ArgumentError(f"{what} must be an {_KIND[code]} (got {type(value).__name__} {value!r})") from None


def pack_args(cconv: CallingConvention, args, name: str = "function") -> ctypes.Array:
    """Python values -> an argument slot array (refs borrowed from the Python values).

    Values are checked (`argument_slot`): a wrong kind raises ArgumentError naming the
    argument of `name`, never a bare TypeError or struct.error.
    """
    slots: list[int] = []
    for k, (spec, value) in enumerate(zip(cconv.args, args)):
        what = f"argument {k} of {name}"
        if isinstance(spec, Span):
            if not isinstance(value, (list, tuple)) or \
                    not all(isinstance(t, (list, tuple)) and len(t) == len(spec.codes) for t in value):
                raise ArgumentError(f"{what} must be a list of {len(spec.codes)}-tuples (variadic {spec})")
            slots.append(len(value))
            slots.extend(argument_slot(code, v, what) for tup in value for code, v in zip(spec.codes, tup))
        else:
            slots.append(argument_slot(spec, value, what))
    return (ctypes.c_uint64 * max(1, len(slots)))(*slots)


def unpack_args(cconv: CallingConvention, slots) -> list:
    """An argument slot array -> Python values (refs retained by the new Ref objects)."""
    values: list = []
    i = 0
    for spec in cconv.args:
        if isinstance(spec, Span):
            count = slots[i]
            i += 1
            span = []
            for _ in range(count):
                tup = []
                for code in spec.codes:
                    tup.append(from_slot(code, slots[i], owned=False))
                    i += 1
                span.append(tuple(tup))
            values.append(span)
        else:
            values.append(from_slot(spec, slots[i], owned=False))
            i += 1
    return values


_BORROWED = {**_FROM_SLOT, "r": Ref.wrap}


def args_unpacker(cconv: CallingConvention):
    """unpack_args specialised for one convention (imports are called through it per call)."""
    if any(isinstance(spec, Span) for spec in cconv.args):
        return lambda slots: unpack_args(cconv, slots)
    converters = tuple(enumerate(_BORROWED[code] for code in cconv.args))
    return lambda slots: [convert(slots[i]) for i, convert in converters]


def result_array(cconv: CallingConvention) -> ctypes.Array:
    return (ctypes.c_uint64 * max(1, len(cconv.results)))()


def unpack_results(cconv: CallingConvention, slots) -> list:
    """Result slots -> Python values, taking ownership of the returned refs."""
    return [from_slot(code, slots[i], owned=True) for i, code in enumerate(cconv.results)]


def pack_results(cconv: CallingConvention, values, slots) -> None:
    """Python results -> result slots; refs are handed over with a new reference each."""
    for i, (code, value) in enumerate(zip(cconv.results, values)):
        if code == "r" and value is not None:
            slots[i] = Ref(value.addr).detach()
        else:
            slots[i] = to_slot(code, value)
