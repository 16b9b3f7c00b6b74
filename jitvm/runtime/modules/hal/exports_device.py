"""HAL exports implemented in Python: device queries, allocator selection, files and the
queue's file transfers (run once per module, at initialization).

Each export decodes its VM arguments (refs checked, i64 sizes made unsigned) and calls the
device object; the calling conventions are IREE's hal module ABI (version 7). The device's
per-call functions (allocator, queue allocations, execution...) are native (hal.native).
"""

from __future__ import annotations

from ...vm.interface import export
from . import types as t
from .buffer import HalBuffer
from .types import device_size
from .device import HalDevice
from .errors import buffer_string, deref, deref_or_null, deref_vm_buffer, hal_error, own
from .fence import HalFence
from .file import HalFile


class DeviceExports:
    """Mixed into HalModule, which provides `self.devices` (a list of device Refs)."""

    devices: list

    # --- devices -----------------------------------------------------------------------------

    @export("devices.count", "0v_i")
    def devices_count(self):
        return len(self.devices)

    @export("devices.get", "0i_r")
    def devices_get(self, index):
        return own(self.devices[index]) if 0 <= index < len(self.devices) else None

    @export("device.query.i64", "0rrr_iI")
    def device_query_i64(self, device, category, key):
        dev = deref(device, HalDevice, "hal.device.query.i64")
        value = dev.query_i64(buffer_string(category, "category"), buffer_string(key, "key"))
        return (0, 0) if value is None else (1, value)

    # --- allocators ---------------------------------------------------------------------------

    @export("allocator.select", "0iiICrID_rI")
    def allocator_select(self, memory_types, usage, flags, pairs):
        if not pairs:
            raise hal_error("INVALID_ARGUMENT", "at least one device/queue affinity pair must be provided")
        device, affinity = pairs[0]
        deref(device, HalDevice, "hal.allocator.select")
        return own(device), affinity

    # --- files ---------------------------------------------------------------------------------

    @export("ex.file.from_memory", "0rIirIIi_r")
    def file_from_memory(self, device, affinity, access, buffer, offset, length, flags):
        deref(device, HalDevice, "hal.ex.file.from_memory")
        if access & ~t.ACCESS_READ:
            raise hal_error("PERMISSION_DENIED", "only read-only memory can be accessed via a file handle (today)")
        src = deref_vm_buffer(buffer, "hal.ex.file.from_memory buffer")
        return HalFile.new(src, device_size(offset), device_size(length), access)

    # --- queue (the rest is native: hal.native, queues.ll) -----------------------------------

    @staticmethod
    def _queue(device, wait, signal, what):
        return (deref(device, HalDevice, what), deref_or_null(wait, HalFence, f"{what} wait fence"),
                deref_or_null(signal, HalFence, f"{what} signal fence"))

    @export("device.queue.read", "0rIrrrIrIII_v")
    def queue_read(self, device, affinity, wait, signal, file, file_offset, target, target_offset, length, flags):
        dev, w, s = self._queue(device, wait, signal, "hal.device.queue.read")
        dev.queue_read(w, s, deref(file, HalFile, "hal.device.queue.read file"), device_size(file_offset),
                       deref(target, HalBuffer, "hal.device.queue.read target"), device_size(target_offset),
                       device_size(length))

    @export("device.queue.write", "0rIrrrIrIII_v")
    def queue_write(self, device, affinity, wait, signal, source, source_offset, file, file_offset, length, flags):
        dev, w, s = self._queue(device, wait, signal, "hal.device.queue.write")
        dev.queue_write(w, s, deref(source, HalBuffer, "hal.device.queue.write source"), device_size(source_offset),
                        deref(file, HalFile, "hal.device.queue.write file"), device_size(file_offset),
                        device_size(length))
