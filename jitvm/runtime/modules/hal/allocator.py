"""hal.allocator: the local device's heap allocator (allocate and import host memory).

Follows IREE's heap allocator: every buffer becomes host-visible and mappable, and
imported vm.buffers are aliased, never copied (read-only sources only for constant use).
"""

from __future__ import annotations

from ...native import layout
from ...vm.objects import StructView, VmBuffer
from . import native
from . import types as t
from .buffer import HalBuffer
from .errors import hal_error

DEVICE_NAME = "local-sync"

MAX_ALLOCATION = 1 << 40  # larger requests fail as out of memory instead of being attempted


def canonical_params(memory_type: int, usage: int, access: int = 0) -> tuple[int, int, int]:
    """IREE's params canonicalization plus the heap allocator's compatibility adjustments."""
    memory_type = memory_type or t.MEMORY_TYPE_OPTIMAL
    usage = usage or t.USAGE_DEFAULT
    access = access or t.ACCESS_ALL
    memory_type = (memory_type | t.MEMORY_TYPE_HOST_VISIBLE) & ~t.MEMORY_TYPE_OPTIMAL
    usage |= t.USAGE_MAPPING_SCOPED | t.USAGE_MAPPING_PERSISTENT | t.USAGE_MAPPING_ACCESS_RANDOM | t.USAGE_TRANSFER
    return memory_type, usage, access


class HalAllocator(StructView):
    __slots__ = ()
    type_name = "hal.allocator"
    struct_name = "HalAllocator"
    device_name = DEVICE_NAME

    @classmethod
    def create(cls) -> "HalAllocator":
        return cls.adopt(native.fn.jv_hal_allocator_new(), "allocator")

    @property
    def bytes_allocated(self) -> int:
        """Statistics, for tests and leak hunting."""
        return self.struct.bytes_allocated

    def allocate(self, memory_type: int, usage: int, size: int, zeroed: bool = True) -> HalBuffer:
        """A heap buffer; zero-filled (contents IREE leaves undefined, kept deterministic here)
        unless its creator overwrites it in full at once."""
        if size >= MAX_ALLOCATION:
            raise hal_error("RESOURCE_EXHAUSTED", f"failed to allocate buffer of length {t.as_signed(size)}")
        memory_type, usage, access = canonical_params(memory_type, usage)
        self.struct.bytes_allocated += size
        return HalBuffer.allocate(size, memory_type, usage, access, zeroed=zeroed)

    def import_buffer(self, memory_type: int, usage: int, source: VmBuffer, offset: int, length: int) -> HalBuffer:
        """Aliases `length` bytes of `source` at `offset` (length -1: the rest)."""
        available = source.length
        if length == t.WHOLE_BUFFER:
            length = available
        if offset > available or offset + length > available:
            raise hal_error("INVALID_ARGUMENT", f"byte range out of bounds (requested {t.as_signed(offset)}-"
                                                f"{t.as_signed(offset + length - 1)} of available {available})")
        access = t.ACCESS_READ
        if not source.mutable:
            if not usage & t.USAGE_SHARING_IMMUTABLE:
                raise hal_error("PERMISSION_DENIED",
                                "source buffer is immutable and can only be imported for constant usage")
        elif not usage & t.USAGE_SHARING_IMMUTABLE:
            access |= t.ACCESS_WRITE
        memory_type, usage, _ = canonical_params(memory_type, usage)
        flags = layout.BUFFER_ORIGIN_HOST | (layout.BUFFER_MUTABLE if access & t.ACCESS_WRITE else 0)
        memory = VmBuffer.wrap_memory(source.data_address + offset, length, flags, source)
        return HalBuffer.wrap(memory, memory_type, access, usage)
