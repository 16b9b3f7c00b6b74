"""A finalized command buffer as native code executes it (layout `CommandProgram`).

Recording stays in Python (hal.command_buffer: once per reusable command buffer); finalize
turns the commands into native ones: fills, updates and copies with their buffer operands
(a buffer or a binding table slot, resolved per execution with IREE's rules), runs of
replayable dispatches as segments (hal.prepared: VMVX entries and llvm-cpu library exports
alike), and what only Python runs (indirect grids, custom arguments) as calls back into it. hal.device.queue.execute(.indirect) then runs
a memoized command buffer without Python (execute.ll).
"""

from __future__ import annotations

import ctypes

from ...native import layout
from ...vm.objects import address_of
from .commands import BufferRef, CopyCommand, FillCommand, UpdateCommand
from .native import CODES
from .prepared import DispatchSegment, segments

COMMAND_FILL, COMMAND_UPDATE, COMMAND_COPY, COMMAND_SEGMENT, COMMAND_PYTHON = (
    CODES[f"COMMAND_{k}"] for k in ("FILL", "UPDATE", "COPY", "SEGMENT", "PYTHON"))
_CommandT, _ProgramT = layout.CTYPES["Command"], layout.CTYPES["CommandProgram"]


def _operand(dst, ref: BufferRef) -> None:
    dst.buffer = ref.ref.addr if ref.ref is not None else None
    dst.slot, dst.offset, dst.length = ref.slot, ref.offset, ref.length


class Program:
    """The native program of recorded `commands`; `parts[i]` is what command i runs
    (Python's view, for the calls back: a command, or a DispatchSegment)."""

    def __init__(self, commands: list, binding_capacity: int):
        self.parts = segments(commands)
        self.commands = (_CommandT * max(1, len(self.parts)))()
        for i, (part, c) in enumerate(zip(self.parts, self.commands)):
            c.index = i
            if isinstance(part, FillCommand):
                c.kind, c.pattern, c.width = COMMAND_FILL, part.pattern & 0xFFFFFFFFFFFFFFFF, part.pattern_length
                _operand(c.target, part.target)
            elif isinstance(part, UpdateCommand):
                c.kind, c.data, c.data_length = COMMAND_UPDATE, address_of(part.data), len(part.data)
                _operand(c.target, part.target)
            elif isinstance(part, CopyCommand):
                c.kind = COMMAND_COPY
                _operand(c.source, part.source)
                _operand(c.target, part.target)
            elif isinstance(part, DispatchSegment):
                part.struct.index = i
                c.kind, c.segment = COMMAND_SEGMENT, part.address
            else:
                c.kind = COMMAND_PYTHON
        self.struct = _ProgramT(commands=ctypes.addressof(self.commands), count=len(self.parts),
                                binding_capacity=binding_capacity)
        self.address = ctypes.addressof(self.struct)

    @property
    def submissions(self) -> int:
        return self.struct.submissions
