"""How HAL failures surface: a jitvm.Trap with IREE's status code, and typed ref checks.

Every HAL export validates its ref arguments the way IREE's `*_check_deref` does, so a
program handing a fence where a buffer belongs gets a readable trap, not a Python crash.
"""

from __future__ import annotations

from ....errors import STATUS_CODES, Trap
from ...vm.objects import Ref, VmBuffer, payload


def hal_error(status: str, message: str) -> Trap:
    """A trap with IREE status `status` ("INVALID_ARGUMENT", ...)."""
    return Trap(STATUS_CODES[status], message)


def _describe(ref: Ref | None) -> str:
    return "null" if ref is None else f"!{ref.type_name}"


def deref(ref: Ref | None, cls, what: str):
    """The Python object behind `ref`, which must be a live `cls` (a NativeObject type)."""
    obj = payload(ref.addr, cls) if ref is not None else None
    if obj is None:
        raise hal_error("INVALID_ARGUMENT",
                        f"{what}: expected !{cls.type_name}, got {_describe(ref)} (ref type mismatch)")
    return obj


def own(ref: Ref | None) -> Ref | None:
    """A new reference of our own to `ref`: objects that keep a ref never share the caller's
    Ref object, which the caller (or a backend moving registers) may release at any time."""
    return None if ref is None else Ref.wrap(ref.addr)


def deref_or_null(ref: Ref | None, cls, what: str):
    return None if ref is None else deref(ref, cls, what)


def deref_vm_buffer(ref: Ref | None, what: str) -> VmBuffer:
    if not isinstance(ref, VmBuffer):
        raise hal_error("INVALID_ARGUMENT", f"{what}: expected !vm.buffer, got {_describe(ref)} (ref type mismatch)")
    return ref


def buffer_string(ref: Ref | None, what: str) -> str:
    """A vm.buffer's bytes as text (IREE's iree_vm_buffer_as_string)."""
    return str(BufferText(ref, what))


class BufferText:
    """A vm.buffer's text, read only when formatted: the entry checks' messages name the
    argument, and are needed only when a check fails (decoding one per call cost 2 us)."""

    __slots__ = ("_buffer",)

    def __init__(self, ref: Ref | None, what: str):
        self._buffer = deref_vm_buffer(ref, what)  # the type is checked now, as IREE does

    def __str__(self) -> str:
        return self._buffer.tobytes().decode("utf-8", "replace")

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)
