"""hal.command_buffer: commands recorded once and replayed by `queue.execute`.

Execution is sequential, which makes barriers no-ops: every command completes before the
next one starts (the commands themselves: hal.commands). Runs of dispatches are replayed in
one native call when the runner can (hal.prepared).
"""

from __future__ import annotations

from ...vm.objects import NativeObject, Ref
from .commands import BufferRef
from .errors import hal_error, own
from .prepared import segments


class HalCommandBuffer(NativeObject):
    type_name = "hal.command_buffer"

    def __init__(self, mode: int, categories: int, binding_capacity: int):
        self.mode = mode
        self.categories = categories
        self.binding_capacity = binding_capacity
        self.commands: list = []
        self.recording = True  # hal.command_buffer.create returns it already begun
        self.debug_groups: list[str] = []
        self.submissions = 0
        self._parts = None  # once finalized: the commands, runs of dispatches as hal.prepared segments

    def record(self, command) -> None:
        if not self.recording:
            raise hal_error("FAILED_PRECONDITION", "command buffer is not in a recording state (already finalized)")
        self.commands.append(command)

    def make_ref(self, buffer: Ref | None, slot: int, offset: int, length: int) -> BufferRef:
        slot &= 0xFFFFFFFF  # a VM i32 holding IREE's uint32 slot: -1 is slot 4294967295, not the last one
        if buffer is None and slot >= self.binding_capacity:
            raise hal_error("OUT_OF_RANGE", f"indirect buffer reference slot {slot} is out of the command buffer's "
                                            f"binding table capacity {self.binding_capacity}")
        return BufferRef(own(buffer), slot, offset, length)

    def finalize(self) -> None:
        if not self.recording:
            raise hal_error("FAILED_PRECONDITION", "command buffer is not in a recording state (already finalized)")
        if self.debug_groups:
            raise hal_error("FAILED_PRECONDITION", f"debug group '{self.debug_groups[-1]}' was never ended")
        self.recording = False

    def execute(self, table: list[tuple[Ref | None, int, int]], device) -> None:
        if self.recording:
            raise hal_error("FAILED_PRECONDITION", "command buffer must be finalized before it is submitted")
        if len(table) < self.binding_capacity:
            raise hal_error("INVALID_ARGUMENT", f"binding table has {len(table)} bindings but the command buffer "
                                                f"needs {self.binding_capacity}")
        self.submissions += 1
        if self._parts is None:
            self._parts = segments(self.commands)
        for part in self._parts:
            part.execute(table, device)
