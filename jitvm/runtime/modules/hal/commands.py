"""The commands a hal.command_buffer records: fills, updates, copies and dispatches.

Buffer operands are either direct (a buffer) or indirect (a slot of the binding table given
at execution), resolved with IREE's rules, so reusable command buffers (the compiler
memoizes them across calls) see each call's buffers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ....errors import Error
from ...exec.dispatch import Dispatch
from ...exec.dispatch_args import SPARE_SETS, DispatchArgs
from ...native import layout
from ...vm.objects import Ref, VmBuffer
from . import types as t
from .buffer import HalBuffer, calculate_range, copy
from .errors import hal_error
from .executable import HalExecutable, pack_constants


@dataclass(frozen=True)
class BufferRef:
    """A direct buffer (kept alive by `ref`) or, when `ref` is None, a binding table slot."""

    ref: Ref | None
    slot: int
    offset: int
    length: int

    def resolve(self, table: list[tuple[Ref | None, int, int]]) -> tuple[HalBuffer | None, int, int]:
        """(buffer, offset, length) after applying the binding table (IREE's resolve_ref)."""
        if self.ref is not None:
            return self.ref.payload, self.offset, self.length
        if not table:
            return None, 0, 0
        if self.slot >= len(table):
            raise hal_error("OUT_OF_RANGE", f"buffer binding {self.slot} out of range of binding table with "
                                            f"capacity {len(table)}")
        ref, base, length = table[self.slot]
        if ref is None:
            return None, 0, 0
        buffer = ref.payload
        max_length = length if length != t.WHOLE_BUFFER else buffer.byte_length - base
        offset, adjusted = calculate_range(base, max_length, self.offset, self.length)
        return buffer, offset, adjusted


def _require(buffer: HalBuffer | None, what: str) -> HalBuffer:
    if buffer is None:
        raise hal_error("FAILED_PRECONDITION", f"{what} is NULL; all bindings must have a valid buffer")
    return buffer


@dataclass(frozen=True)
class FillCommand:
    """A recorded fill of a buffer range with a pattern."""

    target: BufferRef
    pattern: int
    pattern_length: int

    def execute(self, table, device) -> None:
        buffer, offset, length = self.target.resolve(table)
        _require(buffer, "fill target").fill(offset, length, self.pattern, self.pattern_length)


@dataclass(frozen=True)
class UpdateCommand:
    """A recorded write of host bytes into a buffer."""

    target: BufferRef
    data: bytes  # captured when recorded, like IREE

    def execute(self, table, device) -> None:
        buffer, offset, length = self.target.resolve(table)
        _require(buffer, "update target").write(offset, self.data[:length])


@dataclass(frozen=True)
class CopyCommand:
    """A recorded copy between buffers."""

    source: BufferRef
    target: BufferRef

    def execute(self, table, device) -> None:
        src, src_offset, _ = self.source.resolve(table)
        dst, dst_offset, length = self.target.resolve(table)
        copy(_require(src, "copy source"), src_offset, _require(dst, "copy target"), dst_offset, length)


@dataclass(frozen=True)
class DispatchCommand:
    """A recorded dispatch of an executable's entry point."""

    executable: Ref
    function_id: int
    workgroup_count: tuple[int, int, int] | None  # None: read from `workgroups` when executed
    workgroups: BufferRef | None
    constants: tuple[int, ...]
    bindings: tuple[BufferRef, ...]
    flags: int
    _spare: list = field(default_factory=list, compare=False, repr=False)  # DispatchArgs to reuse

    def __post_init__(self):
        # Recorded constants never change and kernels cannot write them: one buffer for every run.
        object.__setattr__(self, "constant_buffer", VmBuffer.from_bytes(pack_constants(self.constants),
                                                                        access=layout.BUFFER_ORIGIN_HOST))

    def replay_runner(self):
        """The runner that may replay this dispatch natively (hal.prepared), or None: an
        indirect grid, custom arguments, counts the entry does not expect (Python raises
        those errors) or a runner without native replay."""
        if self.workgroup_count is None or \
                self.flags & (t.DISPATCH_FLAG_CUSTOM_DIRECT_ARGUMENTS | t.DISPATCH_FLAG_CUSTOM_INDIRECT_ARGUMENTS):
            return None
        exe: HalExecutable = self.executable.payload
        try:
            entry = exe.entry(self.function_id)
        except Error:
            return None
        if len(self.constants) != entry.constant_count or len(self.bindings) != entry.binding_count:
            return None
        return exe.runner if callable(getattr(exe.runner, "prepare", None)) else None

    def execute(self, table, device) -> None:
        exe: HalExecutable = self.executable.payload
        entry = exe.entry(self.function_id)
        if self.flags & (t.DISPATCH_FLAG_CUSTOM_DIRECT_ARGUMENTS | t.DISPATCH_FLAG_CUSTOM_INDIRECT_ARGUMENTS):
            raise hal_error("UNIMPLEMENTED", "direct/indirect arguments are not supported on the local-sync device")
        if len(self.constants) != entry.constant_count:
            raise hal_error("INVALID_ARGUMENT", f"constant count mismatch for {entry.name}, expected "
                                                f"{entry.constant_count} but was provided {len(self.constants)}")
        if len(self.bindings) != entry.binding_count:
            raise hal_error("INVALID_ARGUMENT", f"binding count mismatch for {entry.name}, expected "
                                                f"{entry.binding_count} but was provided {len(self.bindings)}")
        count = self.workgroup_count or self._indirect_count(table)
        if exe.is_library:  # an llvm-cpu library (hal.native_executable): native pointers, no vm objects
            return self._execute_library(exe, entry, count, table)
        try:
            args = self._spare.pop()
        except IndexError:
            args = DispatchArgs(len(self.bindings), entry.local_memory_size)
        try:
            for i, ref in enumerate(self.bindings):
                buffer, offset, length = ref.resolve(table)
                if buffer is None:
                    _require(buffer, f"required binding {i} of {entry.name}")
                address, n = buffer.map_range(offset, length, 0)
                args.point(i, address, n, bool(buffer.allowed_access & t.ACCESS_WRITE), buffer.memory)
            if 0 in count:
                return
            args.prepare_local()
            exe.runner.run(Dispatch(entry.function, count, (1, 1, 1), args.local, self.constant_buffer,
                                    args.list))
        finally:
            if args.finish() and len(self._spare) < SPARE_SETS:
                self._spare.append(args)

    def _execute_library(self, exe, entry, count, table) -> None:
        bindings = []
        for i, ref in enumerate(self.bindings):
            buffer, offset, length = ref.resolve(table)
            buffer = _require(buffer, f"required binding {i} of {entry.name}")
            bindings.append(buffer.map_range(offset, length, 0))
        if 0 in count:
            return
        constants = self.constant_buffer.data_address if self.constants else 0
        exe.dispatch(self.function_id, count, constants, bindings)

    def _indirect_count(self, table) -> tuple[int, int, int]:
        buffer, offset, _ = self.workgroups.resolve(table)
        raw = _require(buffer, "indirect workgroup count buffer").numpy("<u4", 3, offset)
        return int(raw[0]), int(raw[1]), int(raw[2])
