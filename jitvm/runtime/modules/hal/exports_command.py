"""HAL exports: command buffers, executables and (unsupported) collective channels."""

from __future__ import annotations

from ...vm.interface import export
from .buffer import HalBuffer
from .types import device_size
from . import types as t
from .command_buffer import HalCommandBuffer
from .commands import CopyCommand, DispatchCommand, FillCommand, UpdateCommand
from .device import HalDevice
from .errors import buffer_string, deref, deref_or_null, deref_vm_buffer, hal_error, own
from .creation import create_executable
from .executable import HalExecutable, constants_from_buffer

_NO_CHANNELS = "collective channels are not supported by the local-sync device"


class CommandExports:
    """Mixed into HalModule, which provides `vmvx_module()` for executable contexts."""

    # --- command buffers --------------------------------------------------------------------

    @export("command_buffer.create", "0riiIi_r")
    def command_buffer_create(self, device, modes, categories, affinity, binding_capacity):
        deref(device, HalDevice, "hal.command_buffer.create")
        if binding_capacity < 0:
            raise hal_error("INVALID_ARGUMENT", f"binding capacity {binding_capacity} is negative")
        return HalCommandBuffer.new(modes, categories, binding_capacity)

    @export("command_buffer.finalize", "0r_v")
    def command_buffer_finalize(self, command_buffer):
        deref(command_buffer, HalCommandBuffer, "hal.command_buffer.finalize").finalize()

    @export("command_buffer.begin_debug_group", "0rr_v")
    def command_buffer_begin_debug_group(self, command_buffer, label):
        cmd = deref(command_buffer, HalCommandBuffer, "hal.command_buffer.begin_debug_group")
        cmd.debug_groups.append(buffer_string(label, "hal.command_buffer.begin_debug_group label"))

    @export("command_buffer.end_debug_group", "0r_v")
    def command_buffer_end_debug_group(self, command_buffer):
        cmd = deref(command_buffer, HalCommandBuffer, "hal.command_buffer.end_debug_group")
        if not cmd.debug_groups:
            raise hal_error("FAILED_PRECONDITION", "no debug group is open")
        cmd.debug_groups.pop()

    @export("command_buffer.execution_barrier", "0riiI_v")
    def command_buffer_execution_barrier(self, command_buffer, source_stages, target_stages, flags):
        deref(command_buffer, HalCommandBuffer, "hal.command_buffer.execution_barrier").record(_Barrier())

    @export("command_buffer.advise_buffer", "0rrIIIi_v")
    def command_buffer_advise_buffer(self, command_buffer, buffer, flags, arg0, arg1, slot):
        cmd = deref(command_buffer, HalCommandBuffer, "hal.command_buffer.advise_buffer")
        deref_or_null(buffer, HalBuffer, "hal.command_buffer.advise_buffer buffer")
        cmd.make_ref(buffer, slot, 0, t.WHOLE_BUFFER)
        cmd.record(_Barrier())  # advice has no effect on host memory

    @export("command_buffer.fill_buffer", "0rrIIiIiI_v")
    def command_buffer_fill_buffer(self, command_buffer, target, offset, length, slot, pattern, pattern_length,
                                   flags):
        cmd = deref(command_buffer, HalCommandBuffer, "hal.command_buffer.fill_buffer")
        deref_or_null(target, HalBuffer, "hal.command_buffer.fill_buffer target")
        if pattern_length not in (1, 2, 4, 8):
            raise hal_error("INVALID_ARGUMENT", f"fill patterns must be 1, 2, 4 or 8 bytes (got {pattern_length})")
        ref = cmd.make_ref(target, slot, device_size(offset), device_size(length))
        cmd.record(FillCommand(ref, pattern, pattern_length))

    @export("command_buffer.update_buffer", "0rrIrIIiI_v")
    def command_buffer_update_buffer(self, command_buffer, source, source_offset, target, target_offset, length,
                                     slot, flags):
        cmd = deref(command_buffer, HalCommandBuffer, "hal.command_buffer.update_buffer")
        src = deref_vm_buffer(source, "hal.command_buffer.update_buffer source")
        deref_or_null(target, HalBuffer, "hal.command_buffer.update_buffer target")
        start, n = device_size(source_offset), device_size(length)
        if start > src.length or n > src.length - start:
            raise hal_error("OUT_OF_RANGE", f"source range (offset={start}, length={n}) exceeds the "
                                            f"{src.length}-byte buffer")
        ref = cmd.make_ref(target, slot, device_size(target_offset), n)
        cmd.record(UpdateCommand(ref, bytes(src.view()[start:start + n])))

    @export("command_buffer.copy_buffer", "0riirIrIII_v")
    def command_buffer_copy_buffer(self, command_buffer, source_slot, target_slot, source, source_offset, target,
                                   target_offset, length, flags):
        cmd = deref(command_buffer, HalCommandBuffer, "hal.command_buffer.copy_buffer")
        deref_or_null(source, HalBuffer, "hal.command_buffer.copy_buffer source")
        deref_or_null(target, HalBuffer, "hal.command_buffer.copy_buffer target")
        n = device_size(length)
        cmd.record(CopyCommand(cmd.make_ref(source, source_slot, device_size(source_offset), n),
                               cmd.make_ref(target, target_slot, device_size(target_offset), n)))

    @export("command_buffer.collective", "0rriiiirrIIIII_v")
    def command_buffer_collective(self, command_buffer, channel, op, param, send_slot, recv_slot, send, recv,
                                  send_offset, send_length, recv_offset, recv_length, count):
        raise hal_error("UNIMPLEMENTED", _NO_CHANNELS)

    def _dispatch(self, command_buffer, executable, function_id, count, workgroups, flags, constants, bindings,
                  what):
        cmd = deref(command_buffer, HalCommandBuffer, what)
        exe = deref(executable, HalExecutable, f"{what} executable")
        exe.entry(function_id)
        refs = []
        for i, (_, slot, buffer, offset, length) in enumerate(bindings):
            deref_or_null(buffer, HalBuffer, f"{what} binding {i}")
            refs.append(cmd.make_ref(buffer, slot, device_size(offset), device_size(length)))
        cmd.record(DispatchCommand(own(executable), function_id, count, workgroups,
                                   tuple(c & 0xFFFFFFFF for (c,) in constants), tuple(refs), flags))

    @export("command_buffer.dispatch", "0rrIiiiICiDCiirIID_v")
    def command_buffer_dispatch(self, command_buffer, executable, function_id, x, y, z, flags, constants,
                                bindings):
        count = (x & 0xFFFFFFFF, y & 0xFFFFFFFF, z & 0xFFFFFFFF)
        self._dispatch(command_buffer, executable, function_id, count, None, flags, constants, bindings,
                       "hal.command_buffer.dispatch")

    @export("command_buffer.dispatch.indirect", "0rrIirIICiDCiirIID_v")
    def command_buffer_dispatch_indirect(self, command_buffer, executable, function_id, workgroups_slot,
                                         workgroups_buffer, workgroups_offset, flags, constants, bindings):
        what = "hal.command_buffer.dispatch.indirect"
        cmd = deref(command_buffer, HalCommandBuffer, what)
        deref_or_null(workgroups_buffer, HalBuffer, f"{what} workgroups buffer")
        workgroups = cmd.make_ref(workgroups_buffer, workgroups_slot, device_size(workgroups_offset), 12)
        self._dispatch(command_buffer, executable, function_id, None, workgroups, flags, constants, bindings, what)

    # --- executables --------------------------------------------------------------------------

    @export("executable.create", "0rIrrr_r")
    def executable_create(self, device, affinity, executable_format, executable_data, constants):
        dev = deref(device, HalDevice, "hal.executable.create")
        fmt = buffer_string(executable_format, "hal.executable.create format")
        data = deref_vm_buffer(executable_data, "hal.executable.create data").tobytes()
        consts = constants_from_buffer(constants if constants is not None and constants.type_name == "vm.buffer"
                                       else None)
        exe = create_executable(fmt, data, consts, dev.loader, dev.runner, self.vmvx_module, dev.policy)
        return exe._attach()

    @export("executable.lookup.function", "0rr_I")
    def executable_lookup_function(self, executable, name):
        exe = deref(executable, HalExecutable, "hal.executable.lookup.function")
        return exe.lookup(buffer_string(name, "hal.executable.lookup.function name"))

    # --- channels (single device: none) -----------------------------------------------------

    @export("channel.create", "0rIIrrii_r")
    def channel_create(self, device, affinity, flags, id, group, rank, count):
        raise hal_error("UNIMPLEMENTED", _NO_CHANNELS)

    @export("channel.split", "0riiI_r")
    def channel_split(self, channel, color, key, flags):
        raise hal_error("UNIMPLEMENTED", _NO_CHANNELS)

    @export("channel.rank_and_count", "0r_ii")
    def channel_rank_and_count(self, channel):
        raise hal_error("UNIMPLEMENTED", _NO_CHANNELS)


class _Barrier:
    """Execution and memory barriers: commands already run in order on this device."""

    no_op = True  # replay skips it (hal.prepared)

    def execute(self, table, device) -> None:
        pass

