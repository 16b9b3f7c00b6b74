"""Timeline semaphores and hal.fence (a set of semaphore timepoints), synchronously.

The local-sync device completes every queue operation before returning, so a wait either
finds its timepoints reached, finds a failure to propagate, or can never be satisfied (no
other agent runs); that last case is reported instead of hanging as IREE would. Both objects
are native (runtime.native.layout `HalSemaphore`, `HalFence`); a failed semaphore keeps its
failure as a `Failure` record (runtime.vm.traps formats it). These classes are their views.
"""

from __future__ import annotations

from ....errors import STATUS_CODES, Trap
from ...native import layout
from ...vm import nativelib, traps
from ...vm.objects import StructView
from . import native
from .errors import hal_error

DEFERRED = STATUS_CODES["DEFERRED"]
DEADLINE_EXCEEDED = STATUS_CODES["DEADLINE_EXCEEDED"]
_TIMEPOINTS = layout.field("HalFence", "timepoints").offset
_FAILURE = layout.field("HalSemaphore", "failure").offset


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

    def signal(self, value: int) -> None:
        failure = self.failure
        if failure is not None:
            raise hal_error("ABORTED", f"semaphore was already failed: {failure.message}")
        if value <= self.value:
            raise hal_error("OUT_OF_RANGE", f"semaphore values must be monotonically increasing; current value "
                                            f"{self.value}, new value {value}")
        self.struct.value = value

    def fail(self, failure: Trap) -> None:
        s = self.struct
        if not s.failed:
            nativelib.fn.jv_failure_set_text(self.addr + _FAILURE, failure.status, traps.FAIL.code,
                                             failure.message.encode("utf-8", "replace"))
            s.failed = 1

    def reached(self, value: int) -> bool:
        return not self.struct.failed and self.value >= value


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
        arr = (layout.CTYPES["Timepoint"] * max(1, len(points)))()
        for tp, (sem, value) in zip(arr, points):
            tp.semaphore, tp.value = sem.addr, value
        return cls.adopt(native.fn.jv_hal_fence_new(len(points), arr), "fence")

    @classmethod
    def create(cls) -> "HalFence":
        """What hal.fence.create makes: one new semaphore at 0, awaiting 1."""
        return cls.new([(HalSemaphore.create(0), 1)])

    @property
    def timepoints(self) -> list[tuple[HalSemaphore, int]]:
        n = self.struct.count
        points = (layout.CTYPES["Timepoint"] * n).from_address(self.addr + _TIMEPOINTS) if n else ()
        return [(HalSemaphore(tp.semaphore), tp.value) for tp in points]

    def failure(self) -> Trap | None:
        return next((s.failure for s, _ in self.timepoints if s.struct.failed), None)

    def query(self) -> int:
        """IREE status code: OK when reached, DEFERRED while pending, else the failure's code."""
        failed = self.failure()
        if failed is not None:
            return failed.status
        return 0 if all(s.reached(v) for s, v in self.timepoints) else DEFERRED

    def signal(self) -> None:
        for sem, value in self.timepoints:
            sem.signal(value)

    def fail(self, failure: Trap) -> None:
        for sem, _ in self.timepoints:
            sem.fail(failure)

    def pending_text(self) -> str:
        return ", ".join(f"semaphore at {s.value} awaiting {v}" for s, v in self.timepoints if not s.reached(v))


def wait_all(fences: list["HalFence | None"], what: str) -> None:
    """Blocks until every fence is reached (immediately, on this device) or raises why not."""
    for fence in fences:
        if fence is None:
            continue
        failed = fence.failure()
        if failed is not None:
            raise Trap(failed.status, f"{what}: a waited-on fence failed: {failed.message}")
        if fence.query() != 0:
            raise hal_error("DEADLINE_EXCEEDED",
                            f"{what} waits on a fence nothing will signal ({fence.pending_text()}); the "
                            f"synchronous local device would block forever")
