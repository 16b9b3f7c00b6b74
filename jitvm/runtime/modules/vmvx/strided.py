"""2-D strided views of vm.buffers for microkernels, checked like IREE's MAP_BUFFER_2D.

A kernel names a buffer, an element offset, two element strides and two sizes; the
spanned bytes must lie inside the buffer, start aligned to the element size, and be
writable for outputs. The view is a numpy array over the buffer's native memory (no copy).
"""

from __future__ import annotations

import ctypes

import numpy as np

from ....errors import STATUS_CODES, Trap
from ...vm.objects import Ref, VmBuffer

_LIMIT = 1 << 32  # IREE refuses sizes and strides that do not fit 32 bits


def _error(status: str, message: str) -> Trap:
    return Trap(STATUS_CODES[status], message)


def view_2d(ref: Ref | None, name: str, dtype, offset: int, stride0: int, stride1: int, size0: int, size1: int,
            writable: bool) -> np.ndarray:
    """A (size0, size1) array of `dtype` at element `offset` with the given element strides."""
    return view(ref, name, dtype, offset, (size0, size1), (stride0, stride1), writable)


def view(ref: Ref | None, name: str, dtype, offset: int, shape, strides, writable: bool) -> np.ndarray:
    """An array of `shape` at element `offset` with element `strides`, over the buffer's memory."""
    if not isinstance(ref, VmBuffer):
        raise _error("INVALID_ARGUMENT", f"{name}: expected !vm.buffer, got {'null' if ref is None else ref.type_name}")
    dtype = np.dtype(dtype)
    esize = dtype.itemsize
    if not all(0 <= v < _LIMIT for v in (offset, *shape, *strides)):
        raise _error("INVALID_ARGUMENT", f"buffer overflow for {name} (offset={offset}, sizes={tuple(shape)}, "
                                         f"strides={tuple(strides)})")
    if 0 in shape:
        return np.zeros(shape, dtype=dtype)
    start = offset * esize
    span = (sum((n - 1) * st for n, st in zip(shape, strides)) + 1) * esize
    if start + span > ref.length:
        raise _error("OUT_OF_RANGE", f"{name}: access out of bounds (byte offset={start}, span={span}, "
                                     f"buffer length={ref.length})")
    if (ref.data_address + start) % esize:
        raise _error("INVALID_ARGUMENT", f"{name}: byte offset {start} is not aligned to {esize}-byte elements")
    if writable and not ref.mutable:
        raise _error("PERMISSION_DENIED", f"{name}: buffer is read-only and cannot be written")
    memory = (ctypes.c_uint8 * ref.length).from_address(ref.data_address)
    array = np.ndarray(tuple(shape), dtype=dtype, buffer=memory, offset=start,
                       strides=tuple(st * esize for st in strides))
    if not writable:
        array.flags.writeable = False
    return array
