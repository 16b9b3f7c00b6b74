"""vm.list element access with IREE's semantics, over the native list layout.

One implementation for both backends: the interpreter calls these functions directly, and
JIT-compiled code reaches them through native callbacks (list element access is not on
any hot path: kernels only read their bindings, which the JIT inlines). Values travel as
raw 64-bit patterns of their type (i32/f32 in the low 32 bits).

IREE's rules, kept here: value lists convert between integer widths (sign-extending or
truncating) and between f32 and f64; any other conversion yields 0. Variant lists store a
value with the type it was set with and refuse to read a ref as a value (and the
reverse) with FAILED_PRECONDITION. `vm.list.get.ref` of a ref whose type differs from the
requested one yields null rather than failing.
"""

from __future__ import annotations

import ctypes
import struct

import numpy as np

from ...errors import STATUS_CODES, Trap
from ..native import layout
from . import nativelib, traps
from ..native.layout import ListT, VariantT

_VALUE_FMT = {1: "<b", 2: "<h", 3: "<i", 4: "<q", 5: "<f", 6: "<d"}  # by value type code
_INT_BITS = {1: 8, 2: 16, 3: 32, 4: 64}
F32, F64 = layout.VALUE_CODES["f32"], layout.VALUE_CODES["f64"]


def deref(addr: int, what: str = "list") -> ListT:
    """The list at `addr`; a null or non-list ref fails like IREE ("list is null")."""
    if not addr or ctypes.c_uint32.from_address(addr + layout.field("Object", "type_id").offset).value \
            != nativelib.LIST_TYPE_ID:
        raise traps.make_trap(traps.NULL_REF, message=what)
    return ListT.from_address(addr)


def _check_index(lst: ListT, index: int) -> int:
    index &= 0xFFFFFFFF
    if index >= lst.size:
        raise traps.make_trap(traps.LIST_OUT_OF_RANGE, index, lst.size)
    return lst.storage + index * lst.element_size


def _decode(code: int, raw: bytes):
    return struct.unpack(_VALUE_FMT[code], raw[:struct.calcsize(_VALUE_FMT[code])])[0]


def _encode(code: int, value) -> bytes:
    return struct.pack(_VALUE_FMT[code], value).ljust(8, b"\0")


def _bits_to_value(code: int, bits: int):
    return _decode(code, struct.pack("<Q", bits & 0xFFFFFFFFFFFFFFFF))


def _value_to_bits(code: int, value) -> int:
    raw = _encode(code, value)
    if code in (F32, 3, 1, 2):  # 32-bit and narrower patterns travel zero-extended
        raw = raw[:struct.calcsize(_VALUE_FMT[code])].ljust(8, b"\0")
    return struct.unpack("<Q", raw)[0]


def convert(value, source: int, target: int):
    """IREE's value conversion between list element types."""
    if source == target:
        return value
    if source in _INT_BITS and target in _INT_BITS:
        bits = _INT_BITS[target]
        v = int(value) & ((1 << bits) - 1)
        return v - (1 << bits) if v >> (bits - 1) else v
    if (source, target) == (F32, F64):
        return float(value)
    if (source, target) == (F64, F32):
        with np.errstate(over="ignore"):
            return float(np.float64(value).astype(np.float32))
    return 0.0 if target in (F32, F64) else 0


def get_value(addr: int, index: int, code: int):
    """`vm.list.get.<type>`: the element converted to value type `code`, as a Python value."""
    lst = deref(addr)
    at = _check_index(lst, index)
    if lst.mode == layout.LIST_VALUE:
        source = lst.element_type
        value = _decode(source, ctypes.string_at(at, lst.element_size))
    elif lst.mode == layout.LIST_VARIANT:
        v = VariantT.from_address(at)
        if v.tag in (layout.VARIANT_EMPTY, layout.VARIANT_REF):
            raise Trap(STATUS_CODES["FAILED_PRECONDITION"], f"variant at index {index} is not a value type")
        source = v.tag
        value = _decode(source, struct.pack("<Q", v.bits))
    else:
        raise Trap(STATUS_CODES["FAILED_PRECONDITION"], "list does not store values")
    return convert(value, source, code)


def set_value(addr: int, index: int, code: int, value) -> None:
    """`vm.list.set.<type>`: stores a value of type `code`, converting for value lists."""
    lst = deref(addr)
    at = _check_index(lst, index)
    if lst.mode == layout.LIST_VALUE:
        target = lst.element_type
        raw = _encode(target, convert(value, code, target))
        ctypes.memmove(at, raw, lst.element_size)
    elif lst.mode == layout.LIST_VARIANT:
        v = VariantT.from_address(at)
        old = v.bits if v.tag == layout.VARIANT_REF else 0
        v.tag = code
        v.bits = struct.unpack("<Q", _encode(code, value))[0]
        nativelib.fn.jv_release(old) if old else None
    else:
        raise Trap(STATUS_CODES["FAILED_PRECONDITION"], "list cannot store values")


def get_ref(addr: int, index: int, is_move: bool, expected_type: int) -> int:
    """`vm.list.get.ref`: an owned reference (moved out when `is_move`), or 0.

    A ref of another type than `expected_type` (0: any) comes back as null, like IREE.
    """
    lst = deref(addr)
    at = _check_index(lst, index)
    if lst.mode == layout.LIST_REF:
        slot = ctypes.c_void_p.from_address(at)
        obj = slot.value or 0
        if is_move:
            slot.value = None
        elif obj:
            nativelib.fn.jv_retain(obj)
    elif lst.mode == layout.LIST_VARIANT:
        v = VariantT.from_address(at)
        if v.tag not in (layout.VARIANT_EMPTY, layout.VARIANT_REF):
            raise Trap(STATUS_CODES["FAILED_PRECONDITION"], f"variant at index {index} is not a ref")
        obj = v.bits if v.tag == layout.VARIANT_REF else 0
        if is_move:
            v.tag, v.bits = layout.VARIANT_EMPTY, 0
        elif obj:
            nativelib.fn.jv_retain(obj)
    else:
        raise Trap(STATUS_CODES["FAILED_PRECONDITION"], "list does not store refs")
    if obj and expected_type and _type_of(obj) != expected_type:
        nativelib.fn.jv_release(obj)
        return 0
    return obj


def set_ref(addr: int, index: int, obj: int, is_move: bool) -> None:
    """`vm.list.set.ref`: the list takes a reference (the caller's one when `is_move`)."""
    lst = deref(addr)
    at = _check_index(lst, index)
    if lst.mode == layout.LIST_REF:
        if obj and lst.element_type and _type_of(obj) != lst.element_type:
            raise traps.make_trap(traps.TYPE_MISMATCH, message="source ref type mismatch")
        slot = ctypes.c_void_p.from_address(at)
        old = slot.value or 0
        if not is_move and obj:
            nativelib.fn.jv_retain(obj)
        slot.value = obj or None
        if old:
            nativelib.fn.jv_release(old)
    elif lst.mode == layout.LIST_VARIANT:
        v = VariantT.from_address(at)
        old = v.bits if v.tag == layout.VARIANT_REF else 0
        if not is_move and obj:
            nativelib.fn.jv_retain(obj)
        v.tag, v.bits = (layout.VARIANT_REF, obj) if obj else (layout.VARIANT_EMPTY, 0)
        if old:
            nativelib.fn.jv_release(old)
    else:
        raise Trap(STATUS_CODES["FAILED_PRECONDITION"], "list cannot store refs")


def _type_of(obj: int) -> int:
    return ctypes.c_uint32.from_address(obj + layout.field("Object", "type_id").offset).value


# --- native entry points for JIT-compiled code ------------------------------------------------
# Each takes the trap record first and returns 0 or the status of the Trap it parked there.

def _guard(fn):
    def wrapper(trap, *args):
        try:
            return fn(*args)
        except BaseException as e:  # noqa: BLE001 - carried through native code
            return traps.park_exception(trap, e)
    return wrapper


def _native_get_value(lst, index, code, out):
    ctypes.c_uint64.from_address(out).value = _value_to_bits(code, get_value(lst, index, code))
    return 0


def _native_set_value(lst, index, code, bits):
    set_value(lst, index, code, _bits_to_value(code, bits))
    return 0


def _native_get_ref(lst, index, is_move, expected, out):
    ctypes.c_void_p.from_address(out).value = get_ref(lst, index, bool(is_move), expected) or None
    return 0


def _native_set_ref(lst, index, obj, is_move):
    set_ref(lst, index, obj or 0, bool(is_move))
    return 0


_I32, _U32, _U64, _P = ctypes.c_int32, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p
# Name -> (ctypes prototype, implementation) of the callbacks (linked by runtime.vm.symbols).
CALLBACKS = {
    "jv_list_get_value": (ctypes.CFUNCTYPE(_I32, _P, _P, _U32, _U32, _P), _guard(_native_get_value)),
    "jv_list_set_value": (ctypes.CFUNCTYPE(_I32, _P, _P, _U32, _U32, _U64), _guard(_native_set_value)),
    "jv_list_get_ref": (ctypes.CFUNCTYPE(_I32, _P, _P, _U32, _U32, _U32, _P), _guard(_native_get_ref)),
    "jv_list_set_ref": (ctypes.CFUNCTYPE(_I32, _P, _P, _U32, _P, _U32), _guard(_native_set_ref)),
}
