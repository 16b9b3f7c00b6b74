"""Runs of recorded dispatches, prepared once and replayed by the runner in one native call.

A finalized command buffer's consecutive dispatches with static grids form a segment. Its
first execution resolves every binding against the binding table exactly as a dispatch
executed from Python would (the same checks, so the same errors) and hands the runner
the dispatches with arguments of their own (`PreparedDispatch`). What that resolution
depended on, per table slot used, is the slot's buffer length, range and access; while
later tables agree on those, every binding lies at the same offset from its slot's first
byte, so an execution only computes the slots' base addresses.

Anything unusual (a table that differs, a busy segment: the same command buffer executed
on two threads at once, a runner without native replay) runs the dispatches from Python,
which raises whatever error the table deserves at the dispatch that hits it.
"""

from __future__ import annotations

import ctypes
import threading

from ....errors import Error
from . import types as t
from ...exec.dispatch import PreparedDispatch, PreparedFill
from ...exec.dispatch_args import DispatchArgs, view_access
from .commands import DispatchCommand, FillCommand


class DispatchSegment:
    """Consecutive DispatchCommands (static grids, matching counts) of one runner, and the
    fills among them."""

    def __init__(self, commands: list, runner):
        self.commands = commands
        self.runner = runner
        slots = sorted({ref.slot for c in commands for ref in _refs(c) if ref.ref is None})
        self._index = {slot: k for k, slot in enumerate(slots)}  # table slot -> bases index
        self._bases = (ctypes.c_uint64 * max(1, len(slots)))()
        self._signature = None
        self._sequence = None
        self._args: list = []  # per step: (command, its DispatchArgs), None for a fill
        self._native = True  # False once the runner declined: Python from then on
        self._lock = threading.Lock()

    def execute(self, table, device) -> None:
        if not (self._native and self._lock.acquire(blocking=False)):
            return self._python(table, device)
        try:
            signature = self._signature_of(table)
            if signature is None:
                return self._python(table, device)
            if signature != self._signature or self._sequence is None:
                self._sequence, self._signature = self._prepare(table), signature
                if self._sequence is None:
                    return self._python(table, device)
            try:
                self._sequence.run(self._bases)
            finally:
                touched = self._sequence.touched()
                if touched:
                    self._release(touched, table)
        finally:
            self._lock.release()

    def _python(self, table, device) -> None:
        for command in self.commands:
            command.execute(table, device)

    def _signature_of(self, table) -> tuple | None:
        """What binding resolution depends on, per slot used; fills the slots' base addresses.
        None when a slot is missing or empty (Python raises the error)."""
        parts = []
        for slot, k in self._index.items():
            if slot >= len(table):
                return None
            ref, base, length = table[slot]
            if ref is None:
                return None
            buffer = ref.payload
            parts.append((buffer.byte_length, base, length, buffer.allowed_access))
            self._bases[k] = buffer.memory.data_address + buffer.byte_offset + base
        return tuple(parts)

    def _prepare(self, table):
        """The runner's sequence for this table's layout, or None (Python runs this one)."""
        steps, self._args = [], []
        try:
            for command in self.commands:
                if isinstance(command, FillCommand):
                    fill = self._fill(command, table)
                    if fill is not None:
                        steps.append(fill)
                        self._args.append(None)
                    continue
                step = self._dispatch(command, table)
                if step is None:
                    return None
                steps.append(step)
        except Error:
            return None
        sequence = self.runner.prepare(steps)
        if sequence is None:
            self._native = False
        return sequence

    def _place(self, ref, address: int) -> tuple[int, int]:
        """(slot index or -1, offset from that slot's base or the address itself)."""
        if ref.ref is not None:
            return -1, address
        k = self._index[ref.slot]
        return k, address - self._bases[k]

    def _fill(self, command, table) -> PreparedFill | None:
        buffer, offset, length = command.target.resolve(table)
        if buffer is None:
            raise Error("fill target is NULL")  # Python raises IREE's error
        target = buffer.fill_range(offset, length, command.pattern_length)
        if target is None:
            return None  # nothing to fill
        address, n = target
        return PreparedFill((*self._place(command.target, address), n), command.pattern, command.pattern_length)

    def _dispatch(self, command, table) -> PreparedDispatch | None:
        entry = command.executable.payload.entry(command.function_id)
        args = DispatchArgs(len(command.bindings), entry.local_memory_size)
        views = []
        for i, ref in enumerate(command.bindings):
            buffer, offset, length = ref.resolve(table)
            if buffer is None:
                return None
            address, n = buffer.map_range(offset, length, 0)
            access = view_access(bool(buffer.allowed_access & t.ACCESS_WRITE))
            views.append((args.views[i].addr, *self._place(ref, address), n, access))
        self._args.append((command, args))
        return PreparedDispatch(entry.function, command.workgroup_count, command.constant_buffer,
                                args.local, args.list, tuple(views))

    def _release(self, touched: list[int], table) -> None:
        """Kernels that kept or changed their arguments: the views they can reach get their
        real origins, and the next execution prepares fresh arguments."""
        for i in touched:
            command, args = self._args[i]
            args.give_origins([(ref.ref if ref.ref is not None else table[ref.slot][0]).payload.memory
                               for ref in command.bindings])
        self._sequence = None


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
            out.extend(run)  # fills alone stay in Python
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
