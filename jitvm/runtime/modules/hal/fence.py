"""Timeline semaphores and hal.fence (a set of semaphore timepoints), synchronously.

The local-sync device completes every queue operation before returning, so a wait either
finds its timepoints reached, finds a failure to propagate, or can never be satisfied (no
other agent runs); that last case is reported instead of hanging as IREE would.
"""

from __future__ import annotations

from ....errors import STATUS_CODES, Trap
from ...vm.objects import NativeObject
from .errors import hal_error

DEFERRED = STATUS_CODES["DEFERRED"]
DEADLINE_EXCEEDED = STATUS_CODES["DEADLINE_EXCEEDED"]


class Semaphore:
    """A monotonically increasing 64-bit payload, or a failure status once failed."""

    def __init__(self, value: int = 0):
        self.value = value
        self.failure: Trap | None = None

    def signal(self, value: int) -> None:
        if self.failure is not None:
            raise hal_error("ABORTED", f"semaphore was already failed: {self.failure.message}")
        if value <= self.value:
            raise hal_error("OUT_OF_RANGE", f"semaphore values must be monotonically increasing; current value "
                                            f"{self.value}, new value {value}")
        self.value = value

    def fail(self, failure: Trap) -> None:
        if self.failure is None:
            self.failure = failure

    def reached(self, value: int) -> bool:
        return self.failure is None and self.value >= value


class HalFence(NativeObject):
    type_name = "hal.fence"

    def __init__(self, timepoints: list[tuple[Semaphore, int]] | None = None):
        self.timepoints: list[tuple[Semaphore, int]] = []
        for sem, value in timepoints or []:
            self.insert(sem, value)

    def insert(self, semaphore: Semaphore, value: int) -> None:
        """Adds a timepoint, keeping the later value when the semaphore is already present."""
        for i, (sem, have) in enumerate(self.timepoints):
            if sem is semaphore:
                self.timepoints[i] = (sem, max(have, value))
                return
        self.timepoints.append((semaphore, value))

    def failure(self) -> Trap | None:
        return next((s.failure for s, _ in self.timepoints if s.failure is not None), None)

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
