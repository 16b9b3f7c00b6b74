"""Running one dispatch over its workgroup grid, behind a small replaceable interface.

The HAL prepares a `Dispatch` (entry function, grid, and the vm.buffers/list the VMVX
convention passes) and hands it to a `DispatchRunner`. The default runner calls the entry
once per workgroup from Python; a backend that can do better (the JIT: a native,
multi-threaded loop with the GIL released) supplies its own runner through
`Backend.dispatch_runner()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..vm.interface import Function
from ..vm.objects import VmBuffer, VmList
from .fpu import denormals_flushed

VMVX_ENTRY_CCONV = "0rrriiiiiiiii_v"
# Workgroup-local memory is 64-byte aligned, as IREE's workers' is: llvm-cpu code may load it
# with aligned vector instructions (VMVX kernels do not care).
LOCAL_MEMORY_ALIGNMENT = 64


@dataclass(frozen=True)
class Dispatch:
    """Everything one dispatch needs; the VMVX entry signature is VMVX_ENTRY_CCONV:

    (local_memory: !vm.buffer, constants: !vm.buffer (read-only i32s),
     bindings: !vm.list<!vm.buffer>, workgroup_id x,y,z, workgroup_size x,y,z,
     workgroup_count x,y,z)
    """

    entry: Function
    workgroup_count: tuple[int, int, int]
    workgroup_size: tuple[int, int, int]
    local_memory: VmBuffer
    constants: VmBuffer
    bindings: VmList

    @property
    def workgroups(self) -> int:
        x, y, z = self.workgroup_count
        return x * y * z


@dataclass(frozen=True)
class PreparedDispatch:
    """A recorded dispatch with arguments of its own, to be replayed without Python per run.

    `views`: per binding, (the vm.buffer view's address, table slot index or -1, offset from
    that slot's base address (or the address itself for -1), length, access bits)."""

    entry: Function
    workgroup_count: tuple[int, int, int]
    constants: VmBuffer
    local_memory: VmBuffer
    bindings: VmList
    views: tuple[tuple[int, int, int, int, int], ...]


@dataclass(frozen=True)
class PreparedFill:
    """A recorded fill between prepared dispatches: `target` is (slot index or -1, offset or
    address, length) as a view's, of a checked range; the pattern is 1, 2, 4 or 8 bytes."""

    target: tuple[int, int, int]
    pattern: int
    pattern_length: int


class DispatchRunner(Protocol):
    def run(self, dispatch: Dispatch) -> None:
        """Calls `dispatch.entry` for every workgroup id in the grid; raises jitvm.Trap."""

    # Optional: runners that can replay dispatches natively also offer
    # prepare(steps: list[PreparedDispatch | PreparedFill]) -> a sequence, or None when they cannot;
    # sequence.run(bases) runs them all (bases: a ctypes u64 array, the address of each
    # table slot's first byte) and raises jitvm.Trap; sequence.touched() lists the steps
    # whose kernels kept or changed their arguments.


class SerialDispatchRunner:
    """One call per workgroup, z outermost and x innermost, like IREE's inline executor,
    with denormals flushed as IREE runs dispatches (native runners set the mode themselves)."""

    def run(self, dispatch: Dispatch) -> None:
        cx, cy, cz = dispatch.workgroup_count
        head = [dispatch.local_memory, dispatch.constants, dispatch.bindings]
        tail = [*dispatch.workgroup_size, cx, cy, cz]
        call = dispatch.entry.call
        with denormals_flushed():
            for z in range(cz):
                for y in range(cy):
                    for x in range(cx):
                        call(head + [x, y, z] + tail)


def runner_for(backend) -> DispatchRunner:
    """The backend's own runner if it offers one, else the serial Python loop."""
    make = getattr(backend, "dispatch_runner", None)
    return make() if callable(make) else SerialDispatchRunner()
