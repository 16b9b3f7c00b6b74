"""Dispatches run back to back in native code, one native call for a run of them.

IREE's compiler memoizes command buffers: every call of a model replays the same dispatches
with the same grids, constants and binding slots; only the binding table's buffers change.
Done from Python, each dispatch cost tens of microseconds of host work (a ResNet call: 58
dispatches, about 3 ms of 27). A `StepT` holds one dispatch prepared once: its entry, grid,
constants, the vm.buffer views its kernel receives, and per view the table slot and offset
it points into. Per call, Python only fills the table slots' base addresses; native code
then, per step:

- repoints the views (data, length, access) and zeroes the workgroup-local memory;
- chooses the threads by the entry's measured cost (`CostT`, shared by every dispatch of
  the entry): all threads, or the calling thread alone with the idle pool lent to the
  kernel's split loops. Two threads must never lose to one: the first run is not measured
  (cold caches); then the calling thread alone is, and a grid it runs in under SMALL_GRID_S
  stays there (waking the pool, and its threads spinning for the next job, cost more than
  such a grid could gain); otherwise all threads are measured too, they are kept only when
  clearly faster per workgroup (PARALLEL_MARGIN: a tie goes to the calling thread, which
  leaves the other cores to the rest of a busy machine), and now and then the
  other way is measured again: REPROBE runs after the last look, an interval that doubles
  (up to REPROBE_MAX) while the looks confirm the choice and starts over when one changes
  it (a reprobe of a grid that clearly wins on all threads runs it serially: ResNet-50's
  4-workgroup convolutions took twice as long on every 32nd run); when the choice changes
  between looks, the way dropped is measured again on the next run. A measurement counts
  at most twice the larger of the two ways' averages (a VM can take a core away for
  milliseconds: one such run must not flip the choice; but a real change of cost, seen by
  both ways, is believed within a run or two). A parallel grid is claimed in runs of about
  RUN_S on one thread (a thread the machine gives little CPU holds the rest up for at most
  its last run), and waiting threads yield their core now and then while they spin
  (`sched_yield`: the thread they wait for may be queued behind them). A step on the calling thread alone, and the end of the
  sequence, send the pool's waiting threads to sleep at once (`jv_pool_rest`): spinning
  through serial steps and host code took a core from the caller on a busy machine;
- runs the grid, timing it, and checks the kernel left its arguments as it got them (no
  new references, the list unchanged), so they can be reused; otherwise Python gives the
  views their real origins and builds fresh arguments next time.

A single dispatch from Python (`NativeDispatchRunner.run`) is a one-step sequence, so the
thread choice lives here alone. The native side is replay.ll (fills: fill.ll), rendered with
the policy's constants (REPROBE, REPROBE_MAX, PARALLEL_MARGIN, SMALL_GRID_S, RUNS_PER_THREAD) by
runtime.exec.nativecode; the structs are runtime.native.layout's Step, View, Sequence, Cost.
"""

from __future__ import annotations

import ctypes

from ..native.layout import SequenceT, StepT, TrapT, ViewT
from .library import LibraryCall
from .nativecode import native


class Sequence:
    """Native steps of one runner, with the per-share records their runs fill. Running it is
    the runner's (`NativeDispatchRunner.run_sequence`): one holder of the pool at a time."""

    def __init__(self, runner, count: int, keep=()):
        self.runner = runner
        shares = max(1, runner.threads)
        self.steps = (StepT * max(1, count))()
        self.records = [TrapT() for _ in range(shares)]
        self._trap_ptrs = (ctypes.c_void_p * shares)(*[ctypes.addressof(r) for r in self.records])
        self.failed = (ctypes.c_uint64 * shares)()
        self.statuses = (ctypes.c_int32 * shares)()
        self._locals = (ctypes.c_void_p * shares)()
        self.struct = SequenceT(steps=ctypes.addressof(self.steps), count=count, threads=runner.threads,
                                flush=runner.flush, traps=ctypes.addressof(self._trap_ptrs),
                                failed=ctypes.addressof(self.failed), statuses=ctypes.addressof(self.statuses),
                                locals=ctypes.addressof(self._locals), used_pool=1)
        self.address = ctypes.addressof(self.struct)
        self._keep = list(keep)  # what the steps point at: views, arguments, constants

    def set_step(self, i: int, target: tuple[int, int], constants: int, bindings: int, local, grid,
                 views=None, cost_key: int | None = None) -> None:
        """Step i runs entry `target` (fn, ctx) over `grid` with `local` memory (a VmBuffer).
        `views`, (view address, slot index or -1, offset, length, access) per binding: the step
        owns its arguments and repoints them per run; None: a Python dispatch's own. The
        thread policy measures the entry's cost under `cost_key` (default: its fn)."""
        s = self.steps[i]
        s.fn, s.ctx = target
        s.consts, s.bindings, s.local = constants, bindings, local.addr
        s.local_data, s.local_size = local.data_address, local.length
        s.helper_locals, s.helper_data = self.runner.helper_locals(s.local_size)
        s.cost = self.runner.cost_address(target[0] if cost_key is None else cost_key)
        s.cx, s.cy, s.cz = grid
        s.total = grid[0] * grid[1] * grid[2]
        if views is not None:
            arr = _views_array(views)
            s.views, s.view_count, s.owned = ctypes.addressof(arr), len(views), 1
            self._keep.append(arr)

    def set_library_step(self, i: int, call: LibraryCall, local, bindings) -> None:
        """Step i runs the library dispatch `call` (runtime.exec.library) with `local` memory
        (a 64-byte-aligned VmBuffer); `bindings`, (slot index or -1, offset, length) each,
        repoint its binding pointers per run."""
        views = [(call.pointer_address(j), slot, offset, length, 0) for j, (slot, offset, length) in enumerate(bindings)]
        self.set_step(i, (native().library_workgroup, call.address), 0, 0, local, call.grid, views,
                      cost_key=call.entry.function)
        s = self.steps[i]
        s.library, s.sequential = 1, int(call.entry.sequential)
        self._keep += [call, local]

    def set_fill(self, i: int, target: tuple[int, int, int], pattern: int, width: int) -> None:
        """Step i fills `target` (slot index or -1, offset or address, length) with `pattern`."""
        s = self.steps[i]
        arr = _views_array([(0, *target, 0)])
        s.views, s.view_count, s.fill_width, s.pattern = ctypes.addressof(arr), 1, width, pattern & (2**64 - 1)
        self._keep.append(arr)

    def run(self, bases=None) -> None:
        self.runner.run_sequence(self, bases)

    def choose_threads(self, i: int) -> int:
        """The thread count step i's next run would get, as the native policy decides it
        (it counts the run: tests drive the policy through this with costs of their own)."""
        s = self.steps[i]
        return native().choose_threads(self.address, ctypes.addressof(s), s.total)

    def record_cost(self, i: int, threads: int, seconds: float) -> None:
        """Counts a run of step i on `threads` threads that took `seconds` into its entry's
        cost, as a real run does (tests drive the averaging through this)."""
        s = self.steps[i]
        native().record_cost(ctypes.addressof(s), threads, int(seconds * 1e9), s.total)

    def threads_used(self) -> list[int]:
        """Per dispatch step of the last run, how many threads ran it (0: not run)."""
        return [self.steps[i].ran_on for i in range(self.struct.count) if not self.steps[i].fill_width]

    def touched(self) -> list[int]:
        """Steps whose kernels kept or changed their arguments in the last run (flags reset)."""
        if not self.struct.touched:
            return []
        out = [i for i in range(self.struct.count) if self.steps[i].touched]
        for i in out:
            self.steps[i].touched = 0
        self.struct.touched = 0
        return out


def _views_array(views) -> ctypes.Array:
    """ViewT entries for (view address, slot index or -1, offset, length, access) tuples."""
    arr = (ViewT * max(1, len(views)))()
    for v, (view, slot, offset, length, access) in zip(arr, views):
        v.view, v.slot, v.offset, v.length, v.access = view, slot, offset, length, access
    return arr
