"""Ref type names a module's type table may use, until the native modules register their own.

The runtime's native modules (hal, vmvx, check) will call
`jitvm.frontend.types.register_ref_type` for the types they implement. Until the HAL module
exists, the verifier also accepts the names iree-compile emits for it: they are listed here
and nowhere else, so the runtime can take this list over (and this file can shrink to
`known_ref_types()`) in one change.
"""

from __future__ import annotations

from ..frontend.types import known_ref_types

PROVISIONAL_HAL_REF_TYPES = frozenset({
    "hal.allocator",
    "hal.buffer",
    "hal.buffer_view",
    "hal.channel",
    "hal.command_buffer",
    "hal.device",
    "hal.event",
    "hal.executable",
    "hal.fence",
    "hal.file",
    "hal.semaphore",
})


def resolvable_ref_types() -> frozenset[str]:
    """Registered ref types plus the provisional HAL names (without the leading '!')."""
    return known_ref_types() | PROVISIONAL_HAL_REF_TYPES
