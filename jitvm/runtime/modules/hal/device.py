"""hal.device: the synchronous local CPU device (IREE's `local-sync`).

Queue operations run to completion inside the call: wait fences must already be reached,
the operation runs, then the signal fence is signalled, or failed with the error (which is
also raised, as the sync device returns it to the caller). The queue's per-call operations
are native (queues.ll); the file transfers (queue.read/write, at initialization) run here.
"""

from __future__ import annotations

import fnmatch

from ....errors import STATUS_CODES, Trap
from ...vm.objects import NativeObject, Ref
from .allocator import HalAllocator
from .buffer import HalBuffer
from .fence import HalFence, wait_all
from .formats import FormatPolicy
from .library import cpu_feature_value

DEVICE_ID = "local-sync"


def match_pattern(value: str, pattern: str) -> bool:
    """IREE's iree_string_view_match_pattern: `*` and `?` wildcards."""
    return fnmatch.fnmatchcase(value, pattern)


class HalDevice(NativeObject):
    type_name = "hal.device"
    facts = "HalDevice"

    def __init__(self, loader, runner, policy: FormatPolicy | None = None, device_id: str = DEVICE_ID):
        self.loader = loader  # executables are loaded with the host module's backend (executable.ExecutableLoader)
        self.runner = runner  # and dispatched with its runner
        self.policy = policy if policy is not None else FormatPolicy()  # which formats it offers
        self.device_id = device_id  # what `hal.device.id` queries match: "local-sync" or "local-task"
        self.allocator_ref = HalAllocator.create()

    def write_facts(self, facts) -> None:
        facts.allocator = self.allocator_ref.addr

    @property
    def allocator(self) -> HalAllocator:
        return self.allocator_ref

    # --- queries ---------------------------------------------------------------------------

    def query_i64(self, category: str, key: str) -> int | None:
        """The value of a configuration key, or None when the device does not know it."""
        if category == "hal.device.id":
            return int(match_pattern(self.device_id, key))
        if category == "hal.executable.format":
            return int(self.policy.supports(key))
        if category == "hal.cpu":
            return cpu_feature_value(key)
        if category in ("hal.device", "hal.dispatch") and key == "concurrency":
            return 1
        return None

    # --- queue operations ------------------------------------------------------------------

    def queue_op(self, what: str, wait: HalFence | None, signal: HalFence | None, body):
        wait_all([wait], what)
        try:
            result = body()
        except Exception as e:
            if signal is not None:
                signal.fail(e if isinstance(e, Trap) else Trap(STATUS_CODES["INTERNAL"], str(e)))
            raise
        if signal is not None:
            signal.signal()
        return result

    def queue_read(self, wait, signal, file, file_offset: int, target: HalBuffer, target_offset: int,
                   length: int) -> None:
        self.queue_op("queue.read", wait, signal,
                      lambda: target.write(target_offset, file.read(file_offset, length)))

    def queue_write(self, wait, signal, source: HalBuffer, source_offset: int, file, file_offset: int,
                    length: int) -> None:
        self.queue_op("queue.write", wait, signal,
                      lambda: file.write(file_offset, source.view(source_offset, length)))
