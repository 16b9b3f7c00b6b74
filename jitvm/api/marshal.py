"""Python values <-> VM values for reflected functions, as iree.runtime does it.

Arrays become buffer views in fresh device buffers (DEVICE_LOCAL, default usage, element
type from the array's dtype); buffer-view results come back as numpy arrays; scalars are
Python ints and floats. Mismatches raise jitvm.ArgumentError naming the argument and what
was expected instead of failing later inside the program.
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError
from .declaration import ELEMENT_DTYPES, SCALAR_TYPES, ValueDecl
from ..runtime.modules.hal import types as hal_types
from ..runtime.modules.hal.buffer_view import HalBufferView
from ..runtime.modules.hal.fence import HalFence
from ..runtime.vm.objects import Ref, VmList

INPUT_MEMORY_TYPE = hal_types.MEMORY_TYPE_DEVICE_LOCAL
INPUT_USAGE = hal_types.USAGE_DEFAULT | hal_types.USAGE_MAPPING


def _compatible(have: np.dtype, want: np.dtype) -> bool:
    """IREE's rule: exact dtype, or integers/bools of the same width (signless storage)."""
    if have == want:
        return True
    return have.kind in "biu" and want.kind in "biu" and have.itemsize == want.itemsize


is_float = hal_types.is_float_dtype


def _coerce_array_like(value, want: np.dtype, label: str) -> np.ndarray:
    """A non-ndarray (list, scalar) as an array of `want`, only when that loses nothing."""
    try:
        arr = np.asarray(value)
    except Exception as e:  # noqa: BLE001 - ragged lists and the like
        raise ArgumentError(f"{label}: cannot make an array of {type(value).__name__}: {e}") from None
    if arr.dtype.kind not in "biuf" or (arr.dtype.kind == "f" and not is_float(want)):
        raise ArgumentError(f"{label} expects an array of {want.name}, got {type(value).__name__} of {arr.dtype}")
    with np.errstate(all="ignore"):
        converted = arr.astype(want)
    if arr.size and not np.array_equal(converted.astype(arr.dtype), arr, equal_nan=arr.dtype.kind == "f"):
        raise ArgumentError(f"{label} expects {want.name} values; {value!r} does not convert exactly")
    return converted


def _shape_text(shape) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def array_argument(hal, value, decl: ValueDecl, label: str) -> Ref:
    """A numpy array (or array-like) as a buffer view matching `decl`, copied to the device."""
    want = decl.dtype
    if isinstance(value, np.ndarray):
        arr = value if value.dtype.isnative else value.astype(value.dtype.newbyteorder("="))
        if want is not None and not _compatible(arr.dtype, want):
            raise ArgumentError(f"{label} expects dtype {want.name}, got {arr.dtype.name}")
    elif want is not None:
        arr = _coerce_array_like(value, want, label)
    else:
        raise ArgumentError(f"{label} expects a numpy array, got {type(value).__name__}")
    if len(arr.shape) != len(decl.shape) or any(d is not None and d != s for d, s in zip(decl.shape, arr.shape)):
        raise ArgumentError(f"{label} expects shape {_shape_text(decl.shape)}, got {_shape_text(arr.shape)}")
    etype = hal_types.ELEMENT_OF_NUMPY.get(arr.dtype)
    if etype is None:
        raise ArgumentError(f"{label}: arrays of {arr.dtype} cannot be passed to a VM function")
    return array_to_view(hal, arr, etype)


def array_to_view(hal, arr: np.ndarray, element_type: int) -> Ref:
    """A buffer view holding a copy of `arr` (any rank, 0-d included) in a new device buffer."""
    data = arr if arr.flags.c_contiguous else np.array(arr, order="C")  # ascontiguousarray makes 0-d 1-d
    buffer = hal.device.allocator.allocate(INPUT_MEMORY_TYPE, INPUT_USAGE, data.nbytes, zeroed=False)
    buffer.write(0, data.reshape(-1).view(np.uint8))
    return HalBufferView.new(buffer, data.shape, element_type, hal_types.ENCODING_DENSE_ROW_MAJOR)


def numpy_to_view(hal, value, label: str) -> Ref:
    """An ndarray or numpy scalar as a buffer view of its own dtype (how iree.runtime passes
    arrays to functions without reflection)."""
    arr = np.asarray(value)
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    etype = hal_types.ELEMENT_OF_NUMPY.get(arr.dtype)
    if etype is None:
        raise ArgumentError(f"{label}: arrays of {arr.dtype} cannot be passed to a VM function")
    if hal is None:
        raise ArgumentError(f"{label}: the module has no hal module to hold arrays")
    return array_to_view(hal, arr, etype)


def vm_ref(value):
    """The Ref behind a value of the iree.runtime-style API (HalBufferView, HalFence, VmRef,
    DeviceArray ...), which carry one as `__jitvm_ref__`; other values as they are."""
    ref = getattr(value, "__jitvm_ref__", None)
    return ref if ref is not None else value


def list_argument(hal, values, label: str) -> VmList:
    """A Python list or tuple as a VM list of variants: ints as i64, floats as f64, arrays as
    buffer views, nested lists as lists, refs as they are (iree.runtime's conversion)."""
    out = VmList.allocate(None, len(values))
    for i, v in enumerate(values):
        v = vm_ref(v)
        where = f"{label} element {i}"
        if v is None or isinstance(v, Ref):
            out.append(v)
        elif isinstance(v, (bool, np.bool_)):
            out.append(int(v), "i64")
        elif isinstance(v, int):
            out.append(v, "i64")
        elif isinstance(v, float):
            out.append(v, "f64")
        elif isinstance(v, (np.ndarray, np.generic)):
            out.append(numpy_to_view(hal, v, where))
        elif isinstance(v, (list, tuple)):
            out.append(list_argument(hal, v, where))
        else:
            raise ArgumentError(f"{where}: cannot convert {type(v).__name__} to a VM value")
    return out


def signature_argument(hal, value, code: str, label: str):
    """A caller's value for an argument of VM type `code`: refs from arrays (buffer views),
    lists (VM lists) and API objects; values and variadic spans as they are (checked later)."""
    if code != "r":
        return value
    value = vm_ref(value)
    if isinstance(value, (np.ndarray, np.generic)):
        return numpy_to_view(hal, value, label)
    if isinstance(value, (list, tuple)):
        return list_argument(hal, value, label)
    return value


def fence_argument(value, label: str) -> Ref | None:
    """A caller's wait or signal fence (a hal.fence ref, an API HalFence, or None)."""
    value = vm_ref(value)
    if value is None or isinstance(value, Ref) and isinstance(value.payload, HalFence):
        return value
    raise ArgumentError(f"{label} must be a hal.fence (or None), got {type(value).__name__}")


_INT_LIMITS = {bits: (-(1 << (bits - 1)), (1 << bits) - 1) for bits in (8, 16, 32, 64)}
_INT_LIMITS[1] = (0, 1)


HALF_SCALARS = ("f16", "bf16")  # VM i32 arguments carrying the value's 16 bits (the host code zero-extends them)


def _an(type_name: str) -> str:
    return ("an " if type_name == "f16" else "a ") + type_name


def _half_bits(value, type_name: str, label: str) -> int:
    """An f16/bf16 scalar argument as its VM value: the bits of a numpy float16 or ml_dtypes
    bfloat16 scalar, or an integer taken as the bit pattern (what iree.runtime passes). A
    Python float is refused: iree.runtime truncates it to an integer and passes that as the
    bits, which is never the number meant."""
    if isinstance(value, np.generic) and value.dtype.itemsize == 2 and hal_types.is_float_dtype(value.dtype):
        if value.dtype != np.dtype(ELEMENT_DTYPES[type_name]):
            raise ArgumentError(f"{label} expects {_an(type_name)} value, got {value.dtype.name}")
        return int(np.asarray(value).view(np.uint16))
    if isinstance(value, (int, np.integer)):
        value = int(value)
        lo, hi = _INT_LIMITS[32]
        if not lo <= value <= hi:
            raise ArgumentError(f"{label} expects {_an(type_name)} bit pattern that fits i32, got {value}")
        return value
    hint = "numpy.float16(x)" if type_name == "f16" else "ml_dtypes.bfloat16(x)"
    raise ArgumentError(f"{label} expects {_an(type_name)} scalar ({hint}) or its bit pattern as an int, "
                        f"got {type(value).__name__} {value!r}")


def scalar_argument(value, decl: ValueDecl, label: str):
    """A Python/numpy scalar as the VM value of declared scalar type `decl.type`."""
    kind, bits = SCALAR_TYPES[decl.type]
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    if decl.type in HALF_SCALARS:
        return _half_bits(value, decl.type, label)
    if kind == "float":
        if isinstance(value, (int, float, np.integer, np.floating)):
            return float(value)
        raise ArgumentError(f"{label} expects a float, got {type(value).__name__}")
    if isinstance(value, (float, np.floating)):
        if not float(value).is_integer():
            raise ArgumentError(f"{label} expects an integer, got {value!r}")
        value = int(value)
    if not isinstance(value, (int, np.integer)):
        raise ArgumentError(f"{label} expects an integer, got {type(value).__name__}")
    value = int(value)
    lo, hi = _INT_LIMITS[bits]
    if not lo <= value <= hi:
        raise ArgumentError(f"{label} expects a value that fits {decl.type}, got {value}")
    return value


def result_value(value):
    """A VM result as a Python value: buffer views become numpy arrays, the rest stays. An
    array is the result buffer's own memory when the call handed that over exclusively (as
    iree.runtime maps host-visible results), else a copy.

    Views of element types numpy has no dtype for (i4, bf16, ...) are returned as the view ref.
    """
    if isinstance(value, Ref):
        view = value.payload
        if isinstance(view, HalBufferView) and view.dtype is not None:
            return view.hand_over_numpy(value)
    return value
