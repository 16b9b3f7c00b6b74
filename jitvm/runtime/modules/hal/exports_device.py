"""HAL exports: devices, allocators, files and the device queue.

Each export decodes its VM arguments (refs checked, i64 sizes made unsigned) and calls the
device object; the calling conventions are IREE's hal module ABI (version 7).
"""

from __future__ import annotations

from ...vm.interface import export
from . import fastpath
from . import types as t
from .allocator import HalAllocator
from .buffer import HalBuffer
from .types import device_size
from .command_buffer import HalCommandBuffer
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

    @export("device.allocator", "0r_r", fastpath.of("jv_hal_device_allocator"))
    def device_allocator(self, device):
        return own(deref(device, HalDevice, "hal.device.allocator").allocator_ref)

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

    @export("allocator.allocate", "0rIiiI_r")
    def allocator_allocate(self, allocator, affinity, memory_types, usage, size):
        alloc = deref(allocator, HalAllocator, "hal.allocator.allocate")
        return alloc.allocate(memory_types, usage, device_size(size))

    @export("allocator.import", "0riIiirII_r")
    def allocator_import(self, allocator, is_try, affinity, memory_types, usage, source, offset, length):
        alloc = deref(allocator, HalAllocator, "hal.allocator.import")
        src = deref_vm_buffer(source, "hal.allocator.import source")
        return alloc.import_buffer(memory_types, usage, src, device_size(offset), device_size(length))

    # --- files ---------------------------------------------------------------------------------

    @export("ex.file.from_memory", "0rIirIIi_r")
    def file_from_memory(self, device, affinity, access, buffer, offset, length, flags):
        deref(device, HalDevice, "hal.ex.file.from_memory")
        if access & ~t.ACCESS_READ:
            raise hal_error("PERMISSION_DENIED", "only read-only memory can be accessed via a file handle (today)")
        src = deref_vm_buffer(buffer, "hal.ex.file.from_memory buffer")
        return HalFile.new(src, device_size(offset), device_size(length), access)

    # --- queue -------------------------------------------------------------------------------

    @staticmethod
    def _queue(device, wait, signal, what):
        return (deref(device, HalDevice, what), deref_or_null(wait, HalFence, f"{what} wait fence"),
                deref_or_null(signal, HalFence, f"{what} signal fence"))

    @export("device.queue.alloca", "0rIrrIiiII_r")
    def queue_alloca(self, device, affinity, wait, signal, pool, memory_types, usage, size, flags):
        dev, w, s = self._queue(device, wait, signal, "hal.device.queue.alloca")
        if pool != 0:
            raise hal_error("UNIMPLEMENTED", "VM queue allocation pools are not supported")
        return dev.queue_alloca(w, s, memory_types, usage, device_size(size))

    @export("device.queue.dealloca", "0rIrrrI_v")
    def queue_dealloca(self, device, affinity, wait, signal, buffer, flags):
        dev, w, s = self._queue(device, wait, signal, "hal.device.queue.dealloca")
        dev.queue_dealloca(w, s, deref(buffer, HalBuffer, "hal.device.queue.dealloca buffer"))

    @export("device.queue.fill", "0rIrrrIIIiI_v")
    def queue_fill(self, device, affinity, wait, signal, target, offset, length, pattern, pattern_length, flags):
        dev, w, s = self._queue(device, wait, signal, "hal.device.queue.fill")
        dev.queue_fill(w, s, deref(target, HalBuffer, "hal.device.queue.fill target"), device_size(offset),
                       device_size(length), pattern, pattern_length)

    @export("device.queue.update", "0rIrrrIrIII_v")
    def queue_update(self, device, affinity, wait, signal, source, source_offset, target, target_offset,
                     length, flags):
        dev, w, s = self._queue(device, wait, signal, "hal.device.queue.update")
        src = deref_vm_buffer(source, "hal.device.queue.update source")
        start, n = device_size(source_offset), device_size(length)
        if start > src.length or n > src.length - start:
            raise hal_error("OUT_OF_RANGE", f"source range (offset={start}, length={n}) exceeds the "
                                            f"{src.length}-byte buffer")
        dev.queue_update(w, s, src.view()[start:start + n],
                         deref(target, HalBuffer, "hal.device.queue.update target"), device_size(target_offset))

    @export("device.queue.copy", "0rIrrrIrIII_v")
    def queue_copy(self, device, affinity, wait, signal, source, source_offset, target, target_offset,
                   length, flags):
        dev, w, s = self._queue(device, wait, signal, "hal.device.queue.copy")
        dev.queue_copy(w, s, deref(source, HalBuffer, "hal.device.queue.copy source"), device_size(source_offset),
                       deref(target, HalBuffer, "hal.device.queue.copy target"), device_size(target_offset),
                       device_size(length))

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

    @export("device.queue.barrier", "0rIrrI_v")
    def queue_barrier(self, device, affinity, wait, signal, flags):
        dev, w, s = self._queue(device, wait, signal, "hal.device.queue.barrier")
        dev.queue_barrier(w, s)

    @export("device.queue.execute", "0rIrrrI_v")
    def queue_execute(self, device, affinity, wait, signal, command_buffer, flags):
        dev, w, s = self._queue(device, wait, signal, "hal.device.queue.execute")
        cmd = deref(command_buffer, HalCommandBuffer, "hal.device.queue.execute command buffer")
        dev.queue_execute(w, s, cmd, [])

    @export("device.queue.execute.indirect", "0rIrrrICrIID_v")
    def queue_execute_indirect(self, device, affinity, wait, signal, command_buffer, flags, bindings):
        dev, w, s = self._queue(device, wait, signal, "hal.device.queue.execute.indirect")
        cmd = deref(command_buffer, HalCommandBuffer, "hal.device.queue.execute.indirect command buffer")
        table = []
        for i, (buffer, offset, length) in enumerate(bindings):
            deref_or_null(buffer, HalBuffer, f"hal.device.queue.execute.indirect binding {i}")
            table.append((own(buffer), device_size(offset), device_size(length)))
        dev.queue_execute(w, s, cmd, table)

    @export("device.queue.flush", "0rI_v")
    def queue_flush(self, device, affinity):
        deref(device, HalDevice, "hal.device.queue.flush")
