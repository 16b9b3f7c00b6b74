"""HAL exports: fences (create, join, query, signal, fail, await)."""

from __future__ import annotations

from ....errors import Trap
from ...vm.interface import export
from . import types as t
from .device import HalDevice
from .errors import deref, deref_or_null, hal_error
from .fence import DEADLINE_EXCEEDED, HalFence, Semaphore

STATUS_CODE_MASK = 0x1F


class FenceExports:
    @export("fence.create", "0rI_r")
    def fence_create(self, device, flags):
        deref(device, HalDevice, "hal.fence.create")
        return HalFence.new([(Semaphore(0), 1)])

    @export("fence.join", "0ICrD_r")
    def fence_join(self, flags, fences):
        checked = [deref_or_null(f, HalFence, f"hal.fence.join fence {i}") for i, (f,) in enumerate(fences)]
        timepoints = [tp for f in checked if f is not None for tp in f.timepoints]
        return HalFence.new(timepoints) if timepoints else None

    @export("fence.query", "0r_i")
    def fence_query(self, fence):
        return deref(fence, HalFence, "hal.fence.query").query()

    @export("fence.signal", "0r_v")
    def fence_signal(self, fence):
        deref(fence, HalFence, "hal.fence.signal").signal()

    @export("fence.fail", "0ri_v")
    def fence_fail(self, fence, status):
        code = status & STATUS_CODE_MASK
        deref(fence, HalFence, "hal.fence.fail").fail(
            Trap(code, f"fence failed by the program with status {code}"))

    @export("fence.await", "0iICrD_i")
    def fence_await(self, timeout_ms, flags, fences):
        checked = [deref_or_null(f, HalFence, f"hal.fence.await fence {i}") for i, (f,) in enumerate(fences)]
        pending = []
        for fence in checked:
            if fence is None:
                continue
            failed = fence.failure()
            if failed is not None:
                raise Trap(failed.status, failed.message)
            if fence.query() != 0:
                pending.append(fence)
        if not pending:
            return 0
        if timeout_ms & 0xFFFFFFFF != t.INFINITE_TIMEOUT_MS:
            return DEADLINE_EXCEEDED  # nothing else runs on this device: the wait would time out
        raise hal_error("DEADLINE_EXCEEDED",
                        f"hal.fence.await waits forever on a fence nothing will signal "
                        f"({pending[0].pending_text()})")

