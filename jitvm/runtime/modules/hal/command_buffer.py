"""hal.command_buffer: commands recorded once and replayed by `queue.execute`.

Recording is Python (once per reusable command buffer: the compiler memoizes them); finalize
builds the native program (hal.program) that hal.device.queue.execute(.indirect) runs
without Python (execute.ll). Execution is sequential, which makes barriers no-ops: every
command completes before the next one starts (the commands themselves: hal.commands). Runs
of dispatches are replayed in one native call when the runner can (hal.prepared).
"""

from __future__ import annotations

import ctypes

from ...native import layout
from ...vm import traps
from ...vm.objects import NativeObject, Ref, payload
from . import native
from .commands import BufferRef
from .errors import hal_error, own
from .program import Program

# What native execution calls back into Python for (jv_hal_py_call's `what`).
RUN_COMMAND, RUN_SEGMENT, RELEASE_SEGMENT = (native.CODES[k] for k in ("RUN_COMMAND", "RUN_SEGMENT", "RELEASE_SEGMENT"))


class HalCommandBuffer(NativeObject):
    type_name = "hal.command_buffer"
    facts = "HalCommandBuffer"

    def __init__(self, mode: int, categories: int, binding_capacity: int):
        self.mode = mode
        self.categories = categories
        self.binding_capacity = binding_capacity
        self.commands: list = []
        self.recording = True  # hal.command_buffer.create returns it already begun
        self.debug_groups: list[str] = []
        self.program: Program | None = None  # once finalized

    def write_facts(self, facts) -> None:
        facts.program = None

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
        self.program = Program(self.commands, self.binding_capacity)
        self.recording = False
        layout.CTYPES[self.facts].from_address(self.addr).program = self.program.address  # executable now

    @property
    def submissions(self) -> int:
        return self.program.submissions if self.program is not None else 0

    def execute(self, table: list[tuple[Ref | None, int, int]], device=None) -> None:
        """Runs the commands with binding table `table` ((buffer, offset, length) each) as
        hal.device.queue.execute.indirect does: natively."""
        slots = (ctypes.c_uint64 * max(1, 3 * len(table)))()
        for i, (ref, offset, length) in enumerate(table):
            slots[3 * i:3 * i + 3] = [ref.addr if ref is not None else 0, offset, length]
        native.checked("jv_hal_execute", self.addr, len(table), slots)


def _table(count: int, table: int) -> list:
    slots = (ctypes.c_uint64 * (3 * count)).from_address(table) if count else ()
    return [(Ref.wrap(slots[3 * i]), slots[3 * i + 1], slots[3 * i + 2]) for i in range(count)]


def call_from_native(what: int, command_buffer: int, index: int, replica: int, count: int, table: int,
                     trap: int) -> int:
    """What native execution of a command buffer hands Python (`what`): command `index` to
    run from Python, a segment's replica to prepare and run (or -1: the segment's dispatches
    from Python), to release after its kernels kept their arguments, or to turn into the
    exception of its failed run. A status; the trap in `trap`."""
    try:
        part = payload(command_buffer).program.parts[index]
        if what == RUN_COMMAND:
            part.execute(_table(count, table), None)
        elif what == RUN_SEGMENT:
            part.run(replica, _table(count, table), None)
        elif what == RELEASE_SEGMENT:
            part.release(replica, _table(count, table))
        else:
            raise part.failure(replica)
        return 0
    except BaseException as e:  # noqa: BLE001 - carried to the native caller
        return traps.park_exception(trap, e)


native.set_callback(call_from_native)
