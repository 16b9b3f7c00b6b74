"""The HAL's trap kinds: how its native code's failures read (IREE's messages).

Native code records a kind and integer arguments (and, for texts only it knows, an owned
message or a wrapped `inner` failure: an assert's message, a shape, a waited-on fence's
failure); these functions format them when Python raises the trap. Arguments arrive as
unsigned 64-bit values; a `signed` one is printed as the program's i64 or i32.
"""

from __future__ import annotations

from ...vm import traps
from ...vm.objects import type_name
from . import types as t

FIRST_CODE = 64  # the VM's kinds are below


def _i32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


_i64 = t.as_signed


def _type(tid: int) -> str:
    return f"!{type_name(tid)}"


def _got(tid: int) -> str:
    return "null" if tid == 0 else _type(tid)


def _off_end(a) -> str:
    return (f"attempted to access an address off the end of the valid buffer range "
            f"(offset={a[0]}, length={_i64(a[1])}, buffer byte_length={a[2]})")


def _outside(a) -> str:
    return (f"attempted to access an address outside of the valid buffer range "
            f"(offset={a[0]}, adjusted_length={a[1]}, end={a[0] + a[1] - 1}, buffer byte_length={a[2]})")


def _subspan(a) -> str:
    return f"; invalid subspan of an existing buffer (source_offset={_i64(a[0])}, length={_i64(a[1])})"


def _scalar(rank: int) -> str:
    return " (scalar)" if rank == 0 else ""


# name -> (status, format(args, message, inner)); codes follow in this order from FIRST_CODE.
_TABLE = {
    "REF_MISMATCH": ("INVALID_ARGUMENT", lambda a, m, i: (
        f"{m}{'' if a[2] == t.WHOLE_BUFFER else f' {a[2]}'}: expected {_type(a[0])}, got {_got(a[1])} "
        f"(ref type mismatch)")),
    "RANGE_OFF_END": ("OUT_OF_RANGE", lambda a, m, i: _off_end(a)),
    "RANGE_OUTSIDE": ("OUT_OF_RANGE", lambda a, m, i: _outside(a)),
    "SUBSPAN_OFF_END": ("OUT_OF_RANGE", lambda a, m, i: _off_end(a) + _subspan(a)),
    "SUBSPAN_OUTSIDE": ("OUT_OF_RANGE", lambda a, m, i: _outside(a) + _subspan(a)),
    "ACCESS_DENIED": ("PERMISSION_DENIED", lambda a, m, i: (
        f"buffer does not support the requested access type; buffer allows "
        f"{t.format_bits(a[0], t.ACCESS_BITS)}, operation requires {t.format_bits(a[1], t.ACCESS_BITS)}")),
    "BUFFER_TOO_SHORT": ("INVALID_ARGUMENT", lambda a, m, i: (
        f"{m} buffer byte length {a[0]} less than expected minimum {a[1]}")),
    "MEMORY_TYPE_MISMATCH": ("PERMISSION_DENIED", lambda a, m, i: (
        f"{m} buffer memory type is not compatible; buffer has {t.format_bits(a[0], t.MEMORY_TYPE_BITS)}, "
        f"operation requires {t.format_bits(a[1], t.MEMORY_TYPE_BITS)}")),
    "USAGE_MISMATCH": ("PERMISSION_DENIED", lambda a, m, i: (
        f"{m} requested usage was not specified when the buffer was allocated; buffer allows "
        f"{t.format_bits(a[0], t.USAGE_BITS)}, operation requires {t.format_bits(a[1], t.USAGE_BITS)}")),
    "ENCODING_MISMATCH": ("INVALID_ARGUMENT", lambda a, m, i: (
        f"{m} encoding mismatch; expected {a[0]:08X} but have {a[1]:08X}")),
    "ELEMENT_TYPE_MISMATCH": ("INVALID_ARGUMENT", lambda a, m, i: (
        f"{m} element type mismatch; expected {t.element_type_name(a[0])} ({a[0]:08X}) but have "
        f"{t.element_type_name(a[1])} ({a[1]:08X})")),
    "RANK_MISMATCH": ("INVALID_ARGUMENT", lambda a, m, i: (
        f"{m} shape rank mismatch; expected {a[0]}{_scalar(a[0])} but have {a[1]}{_scalar(a[1])}{i}")),
    "DIM_MISMATCH": ("INVALID_ARGUMENT", lambda a, m, i: (
        f"{m} shape dimension {a[0]} mismatch; expected {_i64(a[1])} but have {_i64(a[2])}{i}")),
    "NEGATIVE_DIM": ("INVALID_ARGUMENT", lambda a, m, i: f"buffer view shape {m} has a negative dimension"),
    "DIM_OUT_OF_RANGE": ("OUT_OF_RANGE", lambda a, m, i: (
        f"dimension {_i64(a[0])} out of range for a rank-{a[1]} buffer view")),
    "LOAD_LENGTH": ("INVALID_ARGUMENT", lambda a, m, i: f"load length byte count {_i64(a[0])} exceeds max"),
    "STORE_LENGTH": ("INVALID_ARGUMENT", lambda a, m, i: f"store length byte count {_i64(a[0])} exceeds max"),
    "STORE_OUT_OF_BOUNDS": ("OUT_OF_RANGE", lambda a, m, i: (
        f"store out of bounds (target_offset={a[0]}, length={a[1]} into max {a[2]})")),
    "ALLOCATION_TOO_LARGE": ("RESOURCE_EXHAUSTED", lambda a, m, i: (
        f"failed to allocate buffer of length {_i64(a[0])}")),
    "IMPORT_OUT_OF_BOUNDS": ("INVALID_ARGUMENT", lambda a, m, i: (
        f"byte range out of bounds (requested {_i64(a[0])}-{_i64(a[0] + a[1] - 1)} of available {a[2]})")),
    "IMPORT_IMMUTABLE": ("PERMISSION_DENIED", lambda a, m, i: (
        "source buffer is immutable and can only be imported for constant usage")),
    "POOLS_UNSUPPORTED": ("UNIMPLEMENTED", lambda a, m, i: "VM queue allocation pools are not supported"),
    "FILL_PATTERN": ("INVALID_ARGUMENT", lambda a, m, i: (
        f"fill patterns must be 1, 2, 4 or 8 bytes (got {_i64(a[0])})")),
    "FILL_UNALIGNED": ("INVALID_ARGUMENT", lambda a, m, i: (
        f"attempting to fill a range with {a[0]} byte values that is not aligned (offset={a[1]}, length={a[2]})")),
    "UPDATE_SOURCE_RANGE": ("OUT_OF_RANGE", lambda a, m, i: (
        f"source range (offset={a[0]}, length={a[1]}) exceeds the {a[2]}-byte buffer")),
    "COPY_OVERLAP": ("INVALID_ARGUMENT", lambda a, m, i: (
        "source and target ranges must not overlap within the same buffer")),
    "WAIT_FAILED": ("UNKNOWN", lambda a, m, i: f"{m}: a waited-on fence failed: {i}"),
    "WAIT_FOREVER": ("DEADLINE_EXCEEDED", lambda a, m, i: (
        f"{m} waits on a fence nothing will signal ({i}); the synchronous local device would block forever")),
    "AWAIT_FOREVER": ("DEADLINE_EXCEEDED", lambda a, m, i: (
        f"hal.fence.await waits forever on a fence nothing will signal ({m})")),
    "ALREADY_FAILED": ("ABORTED", lambda a, m, i: f"semaphore was already failed: {i}"),
    "NOT_MONOTONIC": ("OUT_OF_RANGE", lambda a, m, i: (
        f"semaphore values must be monotonically increasing; current value {a[0]}, new value {a[1]}")),
    "FAILED_BY_PROGRAM": ("UNKNOWN", lambda a, m, i: f"fence failed by the program with status {a[0]}"),
    "NOT_FINALIZED": ("FAILED_PRECONDITION", lambda a, m, i: "command buffer must be finalized before it is submitted"),
    "TABLE_TOO_SMALL": ("INVALID_ARGUMENT", lambda a, m, i: (
        f"binding table has {a[0]} bindings but the command buffer needs {a[1]}")),
    "BINDING_OUT_OF_RANGE": ("OUT_OF_RANGE", lambda a, m, i: (
        f"buffer binding {a[0]} out of range of binding table with capacity {a[1]}")),
    "NULL_BINDING": ("FAILED_PRECONDITION", lambda a, m, i: f"{m} is NULL; all bindings must have a valid buffer"),
}

KINDS = {name: traps.kind(FIRST_CODE + k, status, format=fmt) for k, (name, (status, fmt)) in enumerate(_TABLE.items())}


def template_values() -> dict[str, int]:
    """`K_<NAME>` for every kind (the VM's FAIL and OUT_OF_MEMORY too), for the templates."""
    return {**{f"K_{name}": k.code for name, k in KINDS.items()}, "K_FAIL": traps.FAIL.code,
            "K_OUT_OF_MEMORY": traps.OUT_OF_MEMORY.code}
