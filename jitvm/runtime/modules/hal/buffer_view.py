"""hal.buffer_view: a buffer plus shape, element type and encoding (what tensors cross as).

Also the checks the compiler emits on function entry (`hal.buffer_view.assert`,
`hal.buffer.assert`) with IREE's compatibility rules and messages naming the argument,
and IREE's text form of a view (`2x2xf32=[1 2][3 4]`) used by `jitvm run` and check diffs.
The object is native (runtime.native.layout `HalBufferView`); `HalBufferView` is its view.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

from ...native import layout
from ...vm.objects import Ref, StructView, header
from . import native
from . import types as t
from .buffer import HalBuffer
from .errors import hal_error

_DIMS = layout.field("HalBufferView", "dims").offset


class HalBufferView(StructView):
    __slots__ = ()
    type_name = "hal.buffer_view"
    struct_name = "HalBufferView"

    @classmethod
    def new(cls, buffer: Ref, shape, element_type: int, encoding_type: int) -> "HalBufferView":
        shape = tuple(shape)
        dims = (ctypes.c_int64 * max(1, len(shape)))(*shape)
        addr = native.fn.jv_hal_buffer_view_new(buffer.addr, len(shape), dims, element_type & 0xFFFFFFFF,
                                                encoding_type & 0xFFFFFFFF)
        return cls.adopt(addr, "buffer view")

    @property
    def buffer(self) -> HalBuffer:
        return HalBuffer(self.struct.buffer)

    buffer_ref = buffer

    @property
    def shape(self) -> tuple[int, ...]:
        rank = self.struct.rank
        return tuple((ctypes.c_int64 * rank).from_address(self.addr + _DIMS)) if rank else ()

    element_type = property(lambda self: self.struct.element_type)
    encoding_type = property(lambda self: self.struct.encoding_type)

    @property
    def element_count(self) -> int:
        return math.prod(self.shape)

    @property
    def byte_length(self) -> int:
        return t.dense_byte_count(self.element_type, self.element_count)

    @property
    def dtype(self) -> np.dtype | None:
        return t.NUMPY_OF_ELEMENT.get(self.element_type)

    def to_numpy(self) -> np.ndarray:
        """A host copy of the contents as an array of the view's shape and dtype."""
        dtype = self.dtype
        if dtype is None:
            raise hal_error("UNIMPLEMENTED", f"no numpy dtype for element type "
                                             f"{t.element_type_name(self.element_type)}")
        data = self.buffer.numpy(dtype, self.element_count)
        return data.reshape(self.shape)

    def hand_over_numpy(self, ref: Ref) -> np.ndarray:
        """The contents as an array for the holder of `ref`, a reference to this view: the
        buffer's own memory when nothing else can reach it (no other reference to the view,
        its buffer or the buffer's memory), which the array then keeps alive; else a copy."""
        if ref.refcount != 1 or header(self.struct.buffer).refcount != 1:
            return self.to_numpy()
        buffer = self.buffer
        if buffer.exclusively_owned():
            mapped = self.mapped_numpy(ref)
            if mapped is not None:
                return mapped
        return self.to_numpy()

    def mapped_numpy(self, owner: Ref, dtype=None, writable: bool = True) -> np.ndarray | None:
        """The contents as an array over the buffer's own memory (no copy), kept alive by
        `owner` (a reference to this view), as iree.runtime maps host-visible buffers; None
        for an empty view or one without a numpy dtype."""
        v = self.struct
        dtype = t.NUMPY_OF_ELEMENT.get(v.element_type) if dtype is None else np.dtype(dtype)
        if dtype is None:
            return None
        shape = self.shape
        length = t.dense_byte_count(v.element_type, math.prod(shape))
        address, n = HalBuffer(v.buffer).map_range(0, length, t.ACCESS_READ)
        if n != length or not n:
            return None
        raw = np.asarray(_OwnedMemory(address, n, owner, writable))
        return raw.view(dtype).reshape(shape)

    def format(self, max_elements: int = 1024) -> str:
        """IREE's `iree_hal_buffer_view_format`: shape x type = nested [..] elements."""
        return f"{shape_prefix(self.shape, self.element_type)}={format_elements(self, max_elements)}"


class _OwnedMemory:
    """Bytes at an address, exposed to numpy, kept alive by the ref held here."""

    def __init__(self, address: int, length: int, owner: Ref, writable: bool = True):
        self.owner = owner
        self.__array_interface__ = {"shape": (length,), "typestr": "|u1", "data": (address, not writable),
                                    "version": 3}


def shape_prefix(shape, element_type: int) -> str:
    return "".join(f"{d}x" for d in shape) + t.element_type_name(element_type)


def format_element(value, dtype: np.dtype) -> str:
    if t.is_float_dtype(dtype):
        return format_float_upper(float(value))
    if dtype.kind in "iu":
        return str(int(value))
    return bytes(np.asarray(value, dtype=dtype).tobytes()).hex().upper()


def format_float_upper(x: float) -> str:
    """C's printf("%G"), including the sign of NaN."""
    if math.isnan(x):
        return "-NAN" if math.copysign(1.0, x) < 0 else "NAN"
    return "%G" % x


def format_float_lower(x: float) -> str:
    """C's printf("%g") (scalar results)."""
    if math.isnan(x):
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    return "%g" % x


def format_elements(view: HalBufferView, max_elements: int) -> str:
    dtype = view.dtype
    if dtype is None or dtype.kind == "b":
        # IREE prints booleans and unknown types as hex bytes per element
        size = max(1, t.dense_byte_count(view.element_type))
        raw = np.frombuffer(view.buffer.read(0, size * view.element_count), dtype=np.uint8).reshape(-1, size)
        items = [bytes(r).hex().upper() for r in raw]
    else:
        items = [format_element(v, dtype) for v in view.to_numpy().reshape(-1)]
    return nest_elements(items, view.shape, max_elements)


def nest_elements(items: list[str], shape, max_elements: int = 1024) -> str:
    """Formatted elements nested by `shape` as IREE prints a view's contents."""
    return _nest(items, tuple(shape) or (1,), [max_elements])


def _nest(items: list[str], shape, budget: list[int]) -> str:
    """IREE's nesting; past `budget` elements a row ends in "..." and later rows are "[...]"."""
    if len(shape) == 1:
        out = ""
        for j, item in enumerate(items[:shape[0]]):
            if budget[0] <= 0:
                return out + "..."
            out += (" " if j else "") + item
            budget[0] -= 1
        return out
    stride = math.prod(shape[1:])
    return "".join("[" + _nest(items[i * stride:(i + 1) * stride], shape[1:], budget) + "]" for i in range(shape[0]))


def assert_buffer(buffer: HalBuffer, message: str, minimum_length: int, memory_types: int, usage: int) -> None:
    """IREE's hal.buffer.assert: long enough, with the memory type and usage bits required."""
    if buffer.byte_length < minimum_length:
        raise hal_error("INVALID_ARGUMENT", f"{message} buffer byte length {buffer.byte_length} less than "
                                            f"expected minimum {minimum_length}")
    if memory_types & ~buffer.memory_type:
        raise hal_error("PERMISSION_DENIED",
                        f"{message} buffer memory type is not compatible; buffer has "
                        f"{t.format_bits(buffer.memory_type, t.MEMORY_TYPE_BITS)}, operation requires "
                        f"{t.format_bits(memory_types, t.MEMORY_TYPE_BITS)}")
    if usage & ~buffer.allowed_usage:
        raise hal_error("PERMISSION_DENIED",
                        f"{message} requested usage was not specified when the buffer was allocated; buffer allows "
                        f"{t.format_bits(buffer.allowed_usage, t.USAGE_BITS)}, operation requires "
                        f"{t.format_bits(usage, t.USAGE_BITS)}")


def assert_view(view: HalBufferView, message: str, element_type: int, encoding_type: int, shape) -> None:
    """IREE's hal.buffer_view.assert: encoding, then element type, then rank and dims."""
    if view.encoding_type != t.ENCODING_OPAQUE and view.encoding_type != encoding_type:
        raise hal_error("INVALID_ARGUMENT", f"{message} encoding mismatch; expected {encoding_type:08X} but have "
                                            f"{view.encoding_type:08X}")
    if not t.element_types_compatible(view.element_type, element_type):
        raise hal_error("INVALID_ARGUMENT",
                        f"{message} element type mismatch; expected {t.element_type_name(element_type)} "
                        f"({element_type:08X}) but have {t.element_type_name(view.element_type)} "
                        f"({view.element_type:08X})")
    shape = tuple(shape)
    if view.shape == shape:
        return

    def detail() -> str:
        return f"; expected shape `{_shape_text(shape)}`, actual shape `{_shape_text(view.shape)}`"

    if len(view.shape) != len(shape):
        raise hal_error("INVALID_ARGUMENT",
                        f"{message} shape rank mismatch; expected {len(shape)}{' (scalar)' if not shape else ''} "
                        f"but have {len(view.shape)}{' (scalar)' if not view.shape else ''}{detail()}")
    for i, (have, want) in enumerate(zip(view.shape, shape)):
        if have != want:
            raise hal_error("INVALID_ARGUMENT",
                            f"{message} shape dimension {i} mismatch; expected {want} but have {have}{detail()}")


def _shape_text(shape) -> str:
    return "x".join(str(d) for d in shape)
