"""hal.buffer: device memory of the local CPU device, which is plain host memory.

A buffer is an allocation (native memory held by a vm.buffer, so dispatches can hand raw
pointers to kernels) or a subspan of one. Ranges are checked exactly as IREE checks them
(`iree_hal_buffer_calculate_range`), and mapped memory honours the allowed access bits.
The object is native (runtime.native.layout `HalBuffer`, made by objects.ll); `HalBuffer`
is its view.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ...native import layout
from ...vm.objects import StructView, VmBuffer, address_of, header
from . import native
from . import types as t
from .errors import hal_error

ALLOCATION_ALIGNMENT = native.ALLOCATION_ALIGNMENT
_M64 = 0xFFFFFFFFFFFFFFFF


def calculate_range(base_offset: int, max_length: int, offset: int, length: int) -> tuple[int, int]:
    """(absolute offset, length) of [offset, offset+length) inside a region; WHOLE_BUFFER ok."""
    if offset > max_length:
        raise hal_error("OUT_OF_RANGE", f"attempted to access an address off the end of the valid buffer range "
                                        f"(offset={offset}, length={t.as_signed(length)}, buffer byte_length={max_length})")
    adjusted = max_length - offset if length == t.WHOLE_BUFFER else length
    if adjusted and offset + adjusted - 1 >= max_length:
        raise hal_error("OUT_OF_RANGE", f"attempted to access an address outside of the valid buffer range "
                                        f"(offset={offset}, adjusted_length={adjusted}, end={offset + adjusted - 1}, "
                                        f"buffer byte_length={max_length})")
    return base_offset + offset, adjusted


class HalBuffer(StructView):
    """An allocation or a subspan of one; `memory` is the allocation's native storage."""

    __slots__ = ()
    type_name = "hal.buffer"
    struct_name = "HalBuffer"

    @property
    def memory(self) -> VmBuffer:
        """The vm.buffer holding the allocation's bytes."""
        return VmBuffer(self.struct.memory)

    @property
    def data_address(self) -> int:
        """The address of this buffer's first byte."""
        return self.struct.data or 0

    byte_offset = property(lambda self: self.struct.byte_offset, doc="offset inside the allocation")
    byte_length = property(lambda self: self.struct.byte_length)
    memory_type = property(lambda self: self.struct.memory_type)
    allowed_access = property(lambda self: self.struct.allowed_access)
    allowed_usage = property(lambda self: self.struct.allowed_usage)

    @property
    def preserve_count(self) -> int:
        return self.struct.preserve_count

    @preserve_count.setter
    def preserve_count(self, value: int) -> None:
        self.struct.preserve_count = value

    def exclusively_owned(self) -> bool:
        """Whether this buffer is a whole allocation whose memory nothing else references."""
        s = self.struct
        return not s.parent and s.byte_offset == 0 and header(s.memory).refcount == 1 and \
            bool(layout.BufferT.from_address(s.memory).allocation)

    @property
    def allocated(self) -> "HalBuffer":
        parent = self.struct.parent
        return HalBuffer(parent) if parent else self

    # --- construction -------------------------------------------------------------------

    @classmethod
    def new(cls, memory: VmBuffer, byte_offset: int, byte_length: int, memory_type: int, allowed_access: int,
            allowed_usage: int, parent: "HalBuffer | None" = None) -> "HalBuffer":
        addr = native.fn.jv_hal_buffer_new(memory.addr, byte_offset, byte_length, memory_type & 0xFFFFFFFF,
                                           allowed_access & 0xFFFFFFFF, allowed_usage & 0xFFFFFFFF,
                                           parent.addr if parent is not None else None)
        return cls.adopt(addr, "buffer")

    @classmethod
    def allocate(cls, length: int, memory_type: int, allowed_usage: int,
                 allowed_access: int = t.ACCESS_ALL, zeroed: bool = True) -> "HalBuffer":
        addr = native.fn.jv_hal_buffer_allocate(length, memory_type & 0xFFFFFFFF, allowed_usage & 0xFFFFFFFF,
                                                allowed_access & 0xFFFFFFFF, int(zeroed))
        return cls.adopt(addr, f"{length}-byte buffer")

    @classmethod
    def wrap(cls, memory: VmBuffer, memory_type: int, allowed_access: int, allowed_usage: int) -> "HalBuffer":
        """A buffer over existing native memory (imports): `memory` stays alive with it."""
        return cls.new(memory, 0, memory.length, memory_type, allowed_access, allowed_usage)

    def subspan(self, offset: int, length: int) -> "HalBuffer":
        """IREE's subspan (hal.buffer.subspan): the same buffer for the whole range, else a
        view of the allocation."""
        return native.call_export("buffer.subspan", self, offset, length)[0]

    # --- access (native: buffers.ll) ----------------------------------------------------------

    def map_range(self, offset: int, length: int, access: int) -> tuple[int, int]:
        """(address, length) of a checked range of this buffer's bytes: the access bits, then
        the range (IREE's iree_hal_buffer_calculate_range)."""
        address, n = ctypes.c_void_p(), ctypes.c_uint64()
        native.checked("jv_hal_map_range", self.addr, offset & _M64, length & _M64, access, ctypes.byref(address),
                       ctypes.byref(n))
        return address.value or 0, n.value

    def view(self, offset: int = 0, length: int = t.WHOLE_BUFFER, access: int = t.ACCESS_READ) -> memoryview:
        address, n = self.map_range(offset, length, access)
        if n == 0:
            return memoryview(bytearray())
        return memoryview((ctypes.c_uint8 * n).from_address(address)).cast("B")

    def vm_view(self, offset: int, length: int, access: int) -> VmBuffer:
        """A vm.buffer aliasing a range of this buffer (dispatch bindings, no copy)."""
        address, n = self.map_range(offset, length, access)
        flags = layout.BUFFER_ORIGIN_HOST
        if self.allowed_access & t.ACCESS_WRITE:
            flags |= layout.BUFFER_MUTABLE
        return VmBuffer.wrap_memory(address, n, flags, self.memory)

    def numpy(self, dtype, count: int, offset: int = 0) -> np.ndarray:
        """A copy of `count` elements of `dtype` starting at `offset`."""
        n = np.dtype(dtype).itemsize * count
        return np.frombuffer(self.view(offset, n), dtype=dtype, count=count).copy()

    # --- transfer operations (IREE's iree_hal_buffer_map_*, native: queues.ll) -----------------

    def read(self, offset: int, length: int) -> bytes:
        return bytes(self.view(offset, length, t.ACCESS_READ))

    def write(self, offset: int, data) -> None:
        data = memoryview(data).cast("B")
        native.checked("jv_hal_buffer_write", self.addr, offset & _M64, address_of(data), len(data))

    def fill(self, offset: int, length: int, pattern: int, pattern_length: int) -> None:
        native.checked("jv_hal_buffer_fill", self.addr, offset & _M64, length & _M64, pattern & _M64,
                       pattern_length & 0xFFFFFFFF)

    def fill_range(self, offset: int, length: int, pattern_length: int) -> tuple[int, int] | None:
        """(address, length) a fill writes, checked as IREE checks it; None: nothing to fill."""
        if pattern_length not in (1, 2, 4, 8):
            raise hal_error("INVALID_ARGUMENT", f"fill patterns must be 1, 2, 4 or 8 bytes (got {pattern_length})")
        if length == 0:
            return None
        absolute, adjusted = calculate_range(0, self.byte_length, offset, length)
        if absolute % pattern_length or adjusted % pattern_length:
            raise hal_error("INVALID_ARGUMENT",
                            f"attempting to fill a range with {pattern_length} byte values that is not aligned "
                            f"(offset={absolute}, length={adjusted})")
        return self.map_range(absolute, adjusted, t.ACCESS_WRITE)


def copy(source: HalBuffer, source_offset: int, target: HalBuffer, target_offset: int, length: int) -> None:
    """IREE's iree_hal_buffer_map_copy: checked, and overlapping ranges are refused."""
    native.checked("jv_hal_buffer_copy", source.addr, source_offset & _M64, target.addr, target_offset & _M64,
                   length & _M64)
