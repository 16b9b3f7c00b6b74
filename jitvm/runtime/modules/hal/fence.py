"""Timeline semaphores and hal.fence (a set of semaphore timepoints), synchronously.

The local-sync device completes every queue operation before returning, so a wait either
finds its timepoints reached, finds a failure to propagate, or can never be satisfied (no
other agent runs); that last case is reported instead of hanging as IREE would. Both objects
are native (runtime.native.layout `HalSemaphore`, `HalFence`; fences.ll waits, signals and
fails them); a failed semaphore keeps its failure as a `Failure` record (runtime.vm.traps
formats it). These classes are their views.
"""

from __future__ import annotations

import ctypes

from ....errors import STATUS_CODES, Trap
from ...native import layout
from ...vm import nativelib, traps
from ...vm.objects import StructView
from . import native

DEFERRED = STATUS_CODES["DEFERRED"]
DEADLINE_EXCEEDED = STATUS_CODES["DEADLINE_EXCEEDED"]
_TIMEPOINTS = layout.field("HalFence", "timepoints").offset
_FAILURE = layout.field("HalSemaphore", "failure").offset
_TimepointT = layout.CTYPES["Timepoint"]


def fail_fence(fence_addr: int, trap: Trap) -> None:
    """Fails the semaphores of the fence at `fence_addr` not failed yet with `trap`'s status
    and message (a Failure record native code copies)."""
    rec = layout.FailureT()
    addr = ctypes.addressof(rec)
    nativelib.fn.jv_failure_set_text(addr, trap.status, traps.FAIL.code, trap.message.encode("utf-8", "replace"))
    try:
        native.fn.jv_hal_fence_fail_with(fence_addr, addr)
    finally:
        nativelib.fn.jv_failure_clear(addr)


class HalSemaphore(StructView):
    """A monotonically increasing 64-bit payload, or a failure status once failed."""

    __slots__ = ()
    type_name = "hal.semaphore"
    struct_name = "HalSemaphore"

    @classmethod
    def create(cls, value: int = 0) -> "HalSemaphore":
        return cls.adopt(native.fn.jv_hal_semaphore_new(value), "semaphore")

    @property
    def value(self) -> int:
        return self.struct.value

    @property
    def failure(self) -> Trap | None:
        return traps.failure_trap(self.addr + _FAILURE) if self.struct.failed else None

    def reached(self, value: int) -> bool:
        return not self.struct.failed and self.value >= value

    def signal(self, value: int) -> None:
        """Moves the payload to `value` (a trap if failed or not later), as a fence would."""
        HalFence.new([(self, value)]).signal()

    def fail(self, failure: Trap) -> None:
        """Fails the semaphore with `failure` unless it failed already."""
        HalFence.new([(self, 0)]).fail(failure)


def Semaphore(value: int = 0) -> HalSemaphore:  # noqa: N802 - the constructor's old name
    """A new semaphore at `value`."""
    return HalSemaphore.create(value)


class HalFence(StructView):
    __slots__ = ()
    type_name = "hal.fence"
    struct_name = "HalFence"

    @classmethod
    def new(cls, timepoints: list[tuple[HalSemaphore, int]] | None = None) -> "HalFence":
        """A fence of (semaphore, value) timepoints; a semaphore named twice keeps the later value."""
        points = list(timepoints or [])
        arr = (_TimepointT * max(1, len(points)))()
        for tp, (sem, value) in zip(arr, points):
            tp.semaphore, tp.value = sem.addr, value
        return cls.adopt(native.fn.jv_hal_fence_new(len(points), arr), "fence")

    @classmethod
    def create(cls) -> "HalFence":
        """What hal.fence.create makes: one new semaphore at 0, awaiting 1."""
        return cls.adopt(native.fn.jv_hal_fence_make(), "fence")

    def joined(self, timepoints: list[tuple[HalSemaphore, int]]) -> "HalFence":
        """A new fence of this one's timepoints and `timepoints` (native fences do not grow)."""
        return HalFence.new(self.timepoints + list(timepoints))

    @property
    def timepoints(self) -> list[tuple[HalSemaphore, int]]:
        n = self.struct.count
        points = (_TimepointT * n).from_address(self.addr + _TIMEPOINTS) if n else ()
        return [(HalSemaphore(tp.semaphore), tp.value) for tp in points]

    def failure(self) -> Trap | None:
        return next((s.failure for s, _ in self.timepoints if s.struct.failed), None)

    def query(self) -> int:
        """IREE status code: OK when reached, DEFERRED while pending, else the failure's code."""
        return native.fn.jv_hal_fence_status(self.addr)

    def signal(self) -> None:
        native.checked("jv_hal_fence_signal_all", self.addr)

    def fail(self, failure: Trap) -> None:
        fail_fence(self.addr, failure)

    def pending_text(self) -> str:
        return ", ".join(f"semaphore at {s.value} awaiting {v}" for s, v in self.timepoints if not s.reached(v))


def wait_all(fences: list["HalFence | None"], what: str) -> None:
    """Blocks until every fence is reached (immediately, on this device) or raises why not."""
    label = what.encode("utf-8", "replace")
    for fence in fences:
        if fence is not None:
            native.checked("jv_hal_wait", fence.addr, label)
