"""Runs of recorded dispatches, prepared once and replayed by the runner in one native call.

A finalized command buffer's consecutive dispatches with static grids form a segment. Its
first execution resolves every binding against the binding table exactly as a dispatch
executed from Python would (the same checks, so the same errors) and hands the runner
the dispatches with arguments of their own (`PreparedDispatch`; an llvm-cpu library export's
is a `PreparedLibraryDispatch`, whose binding pointers native code patches per run). What that resolution
depended on, per table slot used, is the slot's buffer length, range and access (the
signature); while later tables agree on those, every binding lies at the same offset from
its slot's first byte, so an execution only computes the slots' base addresses.

That check and the run are native (execute.ll): an execution takes one of the segment's
replicas (each a prepared sequence with arguments of its own, so executions on several
threads at once each get one), compares the table's signature with the replica's and runs
its sequence. Python is called back only to prepare a replica (the first execution, a table
that differs), when no replica is free or a slot is missing (the dispatches then run from
Python, which raises whatever error the table deserves at the dispatch that hits it), when a
kernel kept or changed its arguments, and to turn a failed run into its exception.
"""

from __future__ import annotations

import ctypes

from ....errors import Error
from ...exec.dispatch import PreparedDispatch, PreparedFill
from ...exec.library import PreparedLibraryDispatch
from ...exec.dispatch_args import DispatchArgs, view_access
from ...exec.runner import failure
from ...native import layout
from . import types as t
from .commands import DispatchCommand, FillCommand

REPLICAS = 4  # prepared sequences per segment: executions at once beyond it run from Python
_SegmentT, _ReplicaT = layout.CTYPES["Segment"], layout.CTYPES["Replica"]


class Replica:
    """One prepared sequence of a segment, the signature it was prepared for and the bases
    an execution fills (`struct`: what native code reads)."""

    def __init__(self, struct, slots: int):
        self.struct = struct
        self.signature = (ctypes.c_uint64 * max(1, 4 * slots))()
        self.bases = (ctypes.c_uint64 * max(1, slots))()
        struct.signature, struct.bases = ctypes.addressof(self.signature), ctypes.addressof(self.bases)
        self.sequence = None
        self.args: list = []  # per step: (command, its DispatchArgs), None for a fill

    def drop(self) -> None:
        self.struct.valid, self.struct.sequence = 0, None
        self.sequence = None


class DispatchSegment:
    """Consecutive DispatchCommands (static grids, matching counts) of one runner, and the
    fills among them."""

    def __init__(self, commands: list, runner):
        self.commands = commands
        self.runner = runner
        slots = sorted({ref.slot for c in commands for ref in _refs(c) if ref.ref is None})
        self._index = {slot: k for k, slot in enumerate(slots)}  # table slot -> bases index
        self._slots = (ctypes.c_uint64 * max(1, len(slots)))(*slots)
        self._replica_structs = (_ReplicaT * REPLICAS)()
        self.replicas = [Replica(r, len(slots)) for r in self._replica_structs]
        self.struct = _SegmentT(slots=ctypes.addressof(self._slots), slot_count=len(slots),
                                replicas=ctypes.addressof(self._replica_structs), replica_count=REPLICAS,
                                runner=getattr(runner, "address", None))  # its index: hal.program sets it
        self.address = ctypes.addressof(self.struct)
        self._native = True  # False once the runner declined: Python from then on

    # --- what native code calls back for (a replica held, or -1: none free) -------------------

    def run(self, replica: int, table, device) -> None:
        """Prepares replica `replica` for `table` and runs it, or runs the dispatches from Python."""
        r = self.replicas[replica] if replica >= 0 and self._native else None
        if r is None or not self._signature_of(table, r):
            return self._python(table, device)
        r.sequence = self._prepare(table, r)
        if r.sequence is None:
            r.drop()
            return self._python(table, device)
        r.struct.sequence, r.struct.valid = r.sequence.address, 1
        try:
            self.runner.run_sequence(r.sequence, r.bases)
        finally:
            self.release(replica, table)

    def failure(self, replica: int) -> BaseException:
        """The exception of replica `replica`'s failed native run."""
        return failure(self.replicas[replica].sequence)

    def release(self, replica: int, table) -> None:
        """After a run: kernels that kept or changed their arguments get their views' real
        origins, and the replica is prepared afresh next time."""
        r = self.replicas[replica]
        touched = r.sequence.touched() if r.sequence is not None else []
        if touched:
            for i in touched:
                command, args = r.args[i]
                args.give_origins([(ref.ref if ref.ref is not None else table[ref.slot][0]).memory
                                   for ref in command.bindings])
            r.drop()

    # --- preparing ----------------------------------------------------------------------------

    def _python(self, table, device) -> None:
        for command in self.commands:
            command.execute(table, device)

    def _signature_of(self, table, r: Replica) -> bool:
        """Writes the table's signature and slot bases into `r`; False when a slot is missing
        or empty (Python raises the error)."""
        for slot, k in self._index.items():
            if slot >= len(table):
                return False
            ref, base, length = table[slot]
            if ref is None:
                return False
            r.signature[4 * k:4 * k + 4] = [ref.byte_length, base, length, ref.allowed_access]
            r.bases[k] = ref.data_address + base
        return True

    def _prepare(self, table, r: Replica):
        """The runner's sequence for this table's layout, or None (Python runs this one)."""
        steps, r.args = [], []
        try:
            for command in self.commands:
                if isinstance(command, FillCommand):
                    fill = self._fill(command, table, r)
                    if fill is not None:
                        steps.append(fill)
                        r.args.append(None)
                    continue
                step = self._dispatch(command, table, r)
                if step is None:
                    return None
                steps.append(step)
        except Error:
            return None
        sequence = self.runner.prepare(steps)
        if sequence is None:
            self._native = False
        return sequence

    def _place(self, ref, address: int, r: Replica) -> tuple[int, int]:
        """(slot index or -1, offset from that slot's base or the address itself)."""
        if ref.ref is not None:
            return -1, address
        k = self._index[ref.slot]
        return k, address - r.bases[k]

    def _fill(self, command, table, r: Replica) -> PreparedFill | None:
        buffer, offset, length = command.target.resolve(table)
        if buffer is None:
            raise Error("fill target is NULL")  # Python raises IREE's error
        target = buffer.fill_range(offset, length, command.pattern_length)
        if target is None:
            return None  # nothing to fill
        address, n = target
        return PreparedFill((*self._place(command.target, address, r), n), command.pattern, command.pattern_length)

    def _dispatch(self, command, table, r: Replica) -> PreparedDispatch | PreparedLibraryDispatch | None:
        exe = command.executable.payload
        if exe.is_library:
            return self._library_dispatch(command, exe, table, r)
        entry = exe.entry(command.function_id)
        args = DispatchArgs(len(command.bindings), entry.local_memory_size)
        views = []
        for i, ref in enumerate(command.bindings):
            buffer, offset, length = ref.resolve(table)
            if buffer is None:
                return None
            address, n = buffer.map_range(offset, length, 0)
            access = view_access(bool(buffer.allowed_access & t.ACCESS_WRITE))
            views.append((args.views[i].addr, *self._place(ref, address, r), n, access))
        r.args.append((command, args))
        return PreparedDispatch(entry.function, command.workgroup_count, command.constant_buffer,
                                args.local, args.list, tuple(views))


    def _library_dispatch(self, command, exe, table, r: Replica) -> PreparedLibraryDispatch | None:
        """An llvm-cpu export's dispatch: its binding pointers are patched per run."""
        bindings = []
        for ref in command.bindings:
            buffer, offset, length = ref.resolve(table)
            if buffer is None:
                return None
            address, n = buffer.map_range(offset, length, 0)
            bindings.append((*self._place(ref, address, r), n))
        r.args.append(None)
        constants = command.constant_buffer
        return PreparedLibraryDispatch(exe.library_entries[command.function_id], command.workgroup_count,
                                       constants.data_address if command.constants else 0, tuple(bindings),
                                       keep=(constants, command.executable))


def _refs(command) -> tuple:
    bindings = getattr(command, "bindings", None)
    return bindings if bindings is not None else (command.target,)


def segments(commands: list) -> list:
    """The commands with each run of replayable dispatches (same runner) and the fills
    between them as one segment; commands that do nothing (barriers: execution is in order
    anyway) are left out."""
    out, run, runner = [], [], None

    def close():
        if any(isinstance(c, DispatchCommand) for c in run):
            out.append(DispatchSegment(list(run), runner))
        else:
            out.extend(run)  # fills alone run as fills
        run.clear()

    for command in commands:
        if getattr(command, "no_op", False):
            continue
        if isinstance(command, FillCommand):
            run.append(command)
            continue
        r = command.replay_runner() if isinstance(command, DispatchCommand) else None
        if r is not None and runner is not None and r is not runner and \
                any(isinstance(c, DispatchCommand) for c in run):
            close()
        if r is None:
            close()
            out.append(command)
        else:
            run.append(command)
            runner = r
    close()
    return out
