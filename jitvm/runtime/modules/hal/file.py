"""hal.file: a byte range the device queue can read from (`hal.ex.file.from_memory`).

The compiler stores large constants as rodata and reads them into device buffers with
`queue.read`; the file aliases the vm.buffer (kept alive) rather than copying it.
"""

from __future__ import annotations

import ctypes

from ...vm.objects import NativeObject, VmBuffer
from . import types as t
from .errors import hal_error, own


class HalFile(NativeObject):
    type_name = "hal.file"

    def __init__(self, source: VmBuffer, offset: int, length: int, access: int):
        if offset > source.length or length > source.length - offset:
            raise hal_error("OUT_OF_RANGE", f"file range (offset={offset}, length={length}) exceeds the "
                                            f"{source.length}-byte buffer")
        self.source = own(source)
        self.offset = offset
        self.length = length
        self.access = access

    def read(self, offset: int, length: int) -> memoryview:
        if offset > self.length or length > self.length - offset:
            raise hal_error("OUT_OF_RANGE", f"file read out of range (offset={offset}, length={length}, "
                                            f"file length={self.length})")
        if length == 0:
            return memoryview(b"")
        address = self.source.data_address + self.offset + offset
        return memoryview((ctypes.c_uint8 * length).from_address(address)).cast("B")

    def write(self, offset: int, data: memoryview) -> None:
        if not self.access & t.ACCESS_WRITE:
            raise hal_error("PERMISSION_DENIED", "file was imported read-only and cannot be written")
        dst = self.read(offset, len(data))
        dst[:] = data
