"""hal.allocator: the local device's heap allocator (allocate and import host memory).

Follows IREE's heap allocator: every buffer becomes host-visible and mappable, and
imported vm.buffers are aliased, never copied (read-only sources only for constant use).
The allocator and its operations are native (objects.ll, queues.ll); `HalAllocator` is the
allocator's view.
"""

from __future__ import annotations

import ctypes

from ...vm.objects import StructView, VmBuffer
from . import native
from . import types as t
from .buffer import HalBuffer

DEVICE_NAME = "local-sync"
MAX_ALLOCATION = native.MAX_ALLOCATION  # larger requests fail as out of memory


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
        out = ctypes.c_void_p()
        native.checked("jv_hal_allocate", self.addr, memory_type & 0xFFFFFFFF, usage & 0xFFFFFFFF,
                       size & 0xFFFFFFFFFFFFFFFF, zeroed, ctypes.byref(out))
        return HalBuffer(out.value, retain_it=False)

    def import_buffer(self, memory_type: int, usage: int, source: VmBuffer, offset: int, length: int) -> HalBuffer:
        """Aliases `length` bytes of `source` at `offset` (length -1: the rest)."""
        return native.call_export("allocator.import", self, 0, -1, memory_type, usage, source, offset, length)[0]
