"""llvm-cpu library dispatches on the native executor: IREE's executable library ABI.

An llvm-cpu export is `int fn(environment, dispatch_state, workgroup_state)`, called once per
workgroup. The grid walker and the pool (runtime.exec.workers, replay) run it as they run a
VMVX entry: a step's `fn` is `jv_library_workgroup` (library.ll), an adapter with the VMVX
entry's native ABI, and its `ctx` a `LibraryCall` (runtime.native.layout): the export, the
library's environment, its name and the dispatch state its workgroups share, filled as
IREE's local-sync command buffer fills it (workgroup size 1x1x1, the grid with z as uint16,
the push constants, one pointer and length per binding). Per workgroup the adapter builds the
workgroup state (ids, the processor, the share's own zeroed 64-byte-aligned local memory) and
turns a nonzero return into a trap naming the export and the workgroup; the runner reports
the lowest failing one, as a serial loop would. A replayed step repoints the binding
pointers per run from the binding table (its views' `view` is a pointer's address); the
thread policy is the VMVX steps', with each export's cost its own; exports flagged
sequential run on one thread; the dispatch state's max_concurrency is the thread count.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

from ..native import layout
from ..vm import traps

DISPATCH_FLAG_SEQUENTIAL = 1 << 0  # IREE_HAL_EXECUTABLE_DISPATCH_FLAG_V0_SEQUENTIAL
MAX_WORKGROUP_COUNT_Z = 0xFFFF  # the dispatch state holds z as uint16, as IREE's does
LibraryCallT = layout.CTYPES["LibraryCall"]


def _i32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


# IREE's message (its loaders' issue_call), with the export and the workgroup named.
LIBRARY_FAILED = traps.kind(32, "INTERNAL", format=lambda a, m, i: (
    f"executable entry point {m} returned catastrophic error {_i32(a[0])} (workgroup {a[1]}, {a[2]}, {a[3]})"))


@dataclass(frozen=True)
class LibraryEntry:
    """One export of a loaded library, as the executor calls it."""

    name: str
    function: int  # the export's address
    environment: int  # the library's ExeEnvironment
    local_memory_size: int  # bytes per workgroup
    constant_count: int
    binding_count: int
    sequential: bool
    keep: object = field(compare=False, repr=False)  # keeps the code mapped and the environment alive


@dataclass(frozen=True)
class LibraryDispatch:
    """A dispatch from Python: `constants` the address of the entry's u32s (0: none),
    `bindings` (address, length) each, valid until the runner returns."""

    entry: LibraryEntry
    workgroup_count: tuple[int, int, int]
    constants: int
    bindings: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class PreparedLibraryDispatch:
    """A recorded library dispatch to replay: per binding (table slot index or -1, offset from
    that slot's base or the address itself, length), as PreparedDispatch's views; `keep`
    holds the constants' memory."""

    entry: LibraryEntry
    workgroup_count: tuple[int, int, int]
    constants: int
    bindings: tuple[tuple[int, int, int], ...]
    keep: object = field(compare=False, repr=False, default=None)


def grid_of(workgroup_count: tuple[int, int, int]) -> tuple[int, int, int]:
    """The grid the export sees (z truncated to the dispatch state's uint16, as IREE does)."""
    x, y, z = workgroup_count
    return x, y, z & MAX_WORKGROUP_COUNT_Z


class LibraryCall:
    """A LibraryCall struct and the binding arrays its dispatch state points at."""

    def __init__(self, entry: LibraryEntry, workgroup_count, constants: int, lengths):
        n = max(1, entry.binding_count)
        self.entry = entry
        self.grid = grid_of(workgroup_count)
        self.pointers = (ctypes.c_void_p * n)()
        self.lengths = (ctypes.c_size_t * n)(*lengths)
        self._name = ctypes.create_string_buffer(entry.name.encode("utf-8", "replace"))
        self.struct = LibraryCallT(fn=entry.function, environment=entry.environment,
                                   name=ctypes.addressof(self._name))
        s = self.struct.state
        s.workgroup_size_x = s.workgroup_size_y = s.workgroup_size_z = 1  # the static dispatch config
        s.constant_count = entry.constant_count
        s.workgroup_count_x, s.workgroup_count_y, s.workgroup_count_z = self.grid
        s.max_concurrency = 1  # the runner stores the thread count of each run
        s.binding_count = entry.binding_count
        s.constants = constants or None
        s.binding_ptrs = ctypes.addressof(self.pointers)
        s.binding_lengths = ctypes.addressof(self.lengths)
        self.address = ctypes.addressof(self.struct)

    def pointer_address(self, j: int) -> int:
        """Where binding j's pointer lives (a replayed step's view repoints it)."""
        return ctypes.addressof(self.pointers) + j * ctypes.sizeof(ctypes.c_void_p)
