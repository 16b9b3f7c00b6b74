"""HAL exports: buffers and buffer views (hal module ABI version 7)."""

from __future__ import annotations

import struct

from ....errors import Trap
from ...vm.interface import export
from . import fastpath
from .allocator import HalAllocator
from .buffer import HalBuffer, calculate_range
from .types import device_size
from .buffer_view import HalBufferView, assert_buffer, assert_view
from .errors import BufferText, buffer_string, deref, hal_error, own


class BufferExports:
    # --- buffers -----------------------------------------------------------------------------

    @export("buffer.assert", "0rrrIii_v", fastpath.of("jv_hal_buffer_assert"))
    def buffer_assert(self, buffer, message, allocator, minimum_length, memory_types, usage):
        buf = deref(buffer, HalBuffer, "hal.buffer.assert")
        text = BufferText(message, "hal.buffer.assert message")
        deref(allocator, HalAllocator, "hal.buffer.assert allocator")
        assert_buffer(buf, text, device_size(minimum_length), memory_types, usage)

    @export("buffer.allocation.preserve", "0r_v")
    def buffer_allocation_preserve(self, buffer):
        deref(buffer, HalBuffer, "hal.buffer.allocation.preserve").allocated.preserve_count += 1

    @export("buffer.allocation.discard", "0r_i")
    def buffer_allocation_discard(self, buffer):
        root = deref(buffer, HalBuffer, "hal.buffer.allocation.discard").allocated
        if root.preserve_count > 0:
            root.preserve_count -= 1
        return int(root.preserve_count == 0)

    @export("buffer.allocation.is_terminal", "0r_i")
    def buffer_allocation_is_terminal(self, buffer):
        return int(deref(buffer, HalBuffer, "hal.buffer.allocation.is_terminal").allocated.preserve_count <= 1)

    @export("buffer.subspan", "0rII_r")
    def buffer_subspan(self, buffer, offset, length):
        buf = deref(buffer, HalBuffer, "hal.buffer.subspan")
        try:
            return buf.subspan(device_size(offset), device_size(length))
        except Trap as e:
            raise Trap(e.status, f"{e.message}; invalid subspan of an existing buffer (source_offset={offset}, "
                                 f"length={length})") from None

    @export("buffer.length", "0r_I")
    def buffer_length(self, buffer):
        return deref(buffer, HalBuffer, "hal.buffer.length").byte_length

    @export("buffer.load", "0rIi_i")
    def buffer_load(self, buffer, offset, length):
        buf = deref(buffer, HalBuffer, "hal.buffer.load")
        if not 0 <= length <= 4:
            raise hal_error("INVALID_ARGUMENT", f"load length byte count {length} exceeds max")
        raw = buf.read(device_size(offset), length).ljust(4, b"\0")
        return struct.unpack("<i", raw)[0]

    @export("buffer.store", "0irIi_v")
    def buffer_store(self, value, buffer, offset, length):
        buf = deref(buffer, HalBuffer, "hal.buffer.store")
        offset = device_size(offset)
        if not 0 <= length <= 4:
            raise hal_error("INVALID_ARGUMENT", f"store length byte count {length} exceeds max")
        if offset + length > buf.byte_length:
            raise hal_error("OUT_OF_RANGE", f"store out of bounds (target_offset={offset}, length={length} into "
                                            f"max {buf.byte_length})")
        buf.write(offset, struct.pack("<I", value & 0xFFFFFFFF)[:length])

    # --- buffer views ----------------------------------------------------------------------------

    @export("buffer_view.create", "0rIIiiCID_r")
    def buffer_view_create(self, buffer, offset, length, element_type, encoding_type, dims):
        buf = deref(buffer, HalBuffer, "hal.buffer_view.create")
        offset, length = device_size(offset), device_size(length)
        if offset != 0 or length != buf.byte_length:
            calculate_range(0, buf.byte_length, offset, length)
            buffer = buf.subspan(offset, length)
        shape = tuple(d for (d,) in dims)
        if any(d < 0 for d in shape):
            raise hal_error("INVALID_ARGUMENT", f"buffer view shape {shape} has a negative dimension")
        return HalBufferView.new(buffer, shape, element_type & 0xFFFFFFFF, encoding_type & 0xFFFFFFFF)

    @export("buffer_view.assert", "0rriiCID_v", fastpath.of("jv_hal_buffer_view_assert"))
    def buffer_view_assert(self, view, message, element_type, encoding_type, dims):
        bv = deref(view, HalBufferView, "hal.buffer_view.assert")
        text = BufferText(message, "hal.buffer_view.assert message")
        assert_view(bv, text, element_type & 0xFFFFFFFF, encoding_type & 0xFFFFFFFF, [d for (d,) in dims])

    @export("buffer_view.buffer", "0r_r", fastpath.of("jv_hal_buffer_view_buffer"))
    def buffer_view_buffer(self, view):
        return own(deref(view, HalBufferView, "hal.buffer_view.buffer").buffer_ref)

    @export("buffer_view.element_type", "0r_i")
    def buffer_view_element_type(self, view):
        return deref(view, HalBufferView, "hal.buffer_view.element_type").element_type

    @export("buffer_view.encoding_type", "0r_i")
    def buffer_view_encoding_type(self, view):
        return deref(view, HalBufferView, "hal.buffer_view.encoding_type").encoding_type

    @export("buffer_view.rank", "0r_i")
    def buffer_view_rank(self, view):
        return len(deref(view, HalBufferView, "hal.buffer_view.rank").shape)

    @export("buffer_view.dim", "0ri_I")
    def buffer_view_dim(self, view, index):
        bv = deref(view, HalBufferView, "hal.buffer_view.dim")
        if not 0 <= index < len(bv.shape):
            raise hal_error("OUT_OF_RANGE", f"dimension {index} out of range for a rank-{len(bv.shape)} buffer view")
        return bv.shape[index]

    @export("buffer_view.trace", "0rCrD_v")
    def buffer_view_trace(self, key, views):
        name = buffer_string(key, "hal.buffer_view.trace key")
        checked = [deref(v, HalBufferView, f"hal.buffer_view.trace view {i}") for i, (v,) in enumerate(views)]
        sink = getattr(self, "trace_sink", None)
        if sink is not None:
            sink(name, checked)
