"""Python values <-> VM values for reflected functions, as iree.runtime does it.

Arrays become buffer views in fresh device buffers (DEVICE_LOCAL, default usage, element
type from the array's dtype); buffer-view results come back as numpy arrays; scalars are
Python ints and floats. Mismatches raise jitvm.ArgumentError naming the argument and what
was expected instead of failing later inside the program.
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError
from .declaration import SCALAR_TYPES, ValueDecl
from ..runtime.modules.hal import types as hal_types
from ..runtime.modules.hal.buffer_view import HalBufferView
from ..runtime.vm.objects import Ref

INPUT_MEMORY_TYPE = hal_types.MEMORY_TYPE_DEVICE_LOCAL
INPUT_USAGE = hal_types.USAGE_DEFAULT | hal_types.USAGE_MAPPING


def _compatible(have: np.dtype, want: np.dtype) -> bool:
    """IREE's rule: exact dtype, or integers/bools of the same width (signless storage)."""
    if have == want:
        return True
    return have.kind in "biu" and want.kind in "biu" and have.itemsize == want.itemsize


def _coerce_array_like(value, want: np.dtype, label: str) -> np.ndarray:
    """A non-ndarray (list, scalar) as an array of `want`, only when that loses nothing."""
    try:
        arr = np.asarray(value)
    except Exception as e:  # noqa: BLE001 - ragged lists and the like
        raise ArgumentError(f"{label}: cannot make an array of {type(value).__name__}: {e}") from None
    if arr.dtype.kind not in "biuf" or (arr.dtype.kind == "f" and want.kind != "f"):
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
    data = np.ascontiguousarray(arr)
    buffer = hal.device.allocator.allocate(INPUT_MEMORY_TYPE, INPUT_USAGE, data.nbytes, zeroed=False)
    buffer.write(0, data.reshape(-1).view(np.uint8))
    return HalBufferView.new(buffer, data.shape, element_type, hal_types.ENCODING_DENSE_ROW_MAJOR)


_INT_LIMITS = {bits: (-(1 << (bits - 1)), (1 << bits) - 1) for bits in (8, 16, 32, 64)}
_INT_LIMITS[1] = (0, 1)


def scalar_argument(value, decl: ValueDecl, label: str):
    """A Python/numpy scalar as the VM value of declared scalar type `decl.type`."""
    kind, bits = SCALAR_TYPES[decl.type]
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
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
