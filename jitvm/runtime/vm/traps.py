"""Trap records: how a failure travels from where it happens to the Python caller.

Native code (JIT-compiled functions) records a trap in a `Trap` struct: a status code, a
kind from the table below whose template formats the recorded integer arguments, an
optional message pointer, and one frame per function it unwinds through. Python code
raises `jitvm.Trap` directly; when such an exception crosses a native boundary it is parked
here keyed by the trap record's address and picked up again on the other side.

Both backends format messages from the same table, so a trap reads the same whichever
backend raised it. A kind whose message is more than a template (the HAL's: bit sets by name,
ranges, a waited-on fence's failure) has a `format` function instead; a record (and a
`Failure`, what a failed semaphore keeps) may own its message and wrap another failure
(`inner`), which native code frees when Python has taken the record.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Callable

from ...errors import STATUS_CODES, Error, Trap
from ..native.layout import FailureT, TrapT
from . import nativelib

MAX_FRAMES = 32


@dataclass(frozen=True)
class TrapKind:
    """A kind of trap native code records: its status and message."""

    code: int
    status: str  # IREE status name
    template: str  # str.format template over args[0..3] and {message} (and {inner}: the wrapped failure's text)
    format: Callable | None = None  # (args, message, inner) -> text, instead of the template

    def text(self, args, message: str, inner: str = "") -> str:
        """The message for unsigned 64-bit `args` (as IREE prints sizes and offsets: %zu)."""
        if self.format is not None:
            return self.format(args, message, inner)
        return self.template.format(*args, *([0] * (4 - len(args))), message=message, inner=inner)


KINDS: dict[int, TrapKind] = {}


def kind(code: int, status: str, template: str = "", format: Callable | None = None) -> TrapKind:
    """Registers trap kind `code` (the VM's below 64, native modules' above)."""
    k = TrapKind(code, status, template, format)
    assert code not in KINDS, code
    KINDS[code] = k
    return k


_kind = kind


FAIL = _kind(1, "UNKNOWN", "{message}")  # vm.fail / cond_fail: status comes from the program
BUFFER_OUT_OF_RANGE = _kind(2, "OUT_OF_RANGE", "out-of-bounds access detected (offset={0}, length={1}, "
                            "alignment={2}, buffer length={3})")
BUFFER_READ_ONLY = _kind(3, "PERMISSION_DENIED", "buffer is read-only and cannot be mapped for mutation")
NULL_REF = _kind(4, "INVALID_ARGUMENT", "{message} is null")
DIVIDE_BY_ZERO = _kind(5, "INVALID_ARGUMENT", "integer division by zero")
DIVIDE_OVERFLOW = _kind(12, "INVALID_ARGUMENT", "integer overflow in signed division (INT_MIN / -1)")
LIST_OUT_OF_RANGE = _kind(6, "OUT_OF_RANGE", "list index {0} out of bounds (size {1})")
TYPE_MISMATCH = _kind(7, "INVALID_ARGUMENT", "{message}")
UNRESOLVED_IMPORT = _kind(8, "NOT_FOUND", "optional import `{message}` is not resolved")
OUT_OF_MEMORY = _kind(9, "RESOURCE_EXHAUSTED", "out of memory: {message}")
NATIVE = _kind(10, "INTERNAL", "{message}")  # a Python exception carried through native code
GLOBAL_OUT_OF_RANGE = _kind(13, "OUT_OF_RANGE", "global byte_offset out of range: {0} (rwdata={1})")
BAD_ALIGNMENT = _kind(14, "INVALID_ARGUMENT", "alignment {0} is not a power of two")
GLOBAL_REF_OUT_OF_RANGE = _kind(15, "OUT_OF_RANGE", "global ref ordinal out of range: {0} (table={1})")
FELL_OFF_END = _kind(16, "FAILED_PRECONDITION", "execution ran past the end of the function")
STACK_OVERFLOW = _kind(11, "RESOURCE_EXHAUSTED", "VM stack overflow: call depth exceeds {0} frames")


def make_trap(kind: TrapKind, *args, message: str = "", status: int | None = None) -> Trap:
    """The jitvm.Trap an interpreter raises for `kind` (the JIT records the same fields)."""
    text = kind.text(args, message)
    return Trap(STATUS_CODES[kind.status] if status is None else status, text)


def _text_at(addr) -> str:
    return ctypes.string_at(addr).decode("utf-8", "replace") if addr else ""


def failure_text(rec) -> str:
    """The message a Failure (or trap record) `rec` describes, its wrapped failures included."""
    inner = failure_text(FailureT.from_address(rec.inner)) if rec.inner else ""
    kind = KINDS.get(rec.kind, FAIL)
    # Arguments are sizes, offsets and indices, printed unsigned as IREE does (%zu):
    # a record holds them as i64, an interpreter passes Python ints of the same bits.
    return kind.text([a & 0xFFFFFFFFFFFFFFFF for a in rec.args], _text_at(rec.message), inner)


def failure_trap(addr: int) -> Trap:
    """The jitvm.Trap the Failure at `addr` describes (no frames)."""
    rec = FailureT.from_address(addr)
    return Trap(rec.status, failure_text(rec))


# --- crossing native boundaries ------------------------------------------------------------

_pending: dict[int, BaseException] = {}
_pending_lock = threading.Lock()


def new_record() -> TrapT:
    return TrapT()


def park_exception(trap_addr: int, exc: BaseException) -> int:
    """Stores a Python exception raised inside a native callback; returns its status code.
    The record also gets the exception's message as text of its own, for native code that
    keeps a copy of the failure (a HAL semaphore the failed operation signals)."""
    rec = TrapT.from_address(trap_addr)
    status = exc.status if isinstance(exc, Trap) else STATUS_CODES["INTERNAL"]
    text = exc.message if isinstance(exc, Trap) else str(exc)
    nativelib.fn.jv_trap_clear(trap_addr)
    rec.status = status
    rec.kind = NATIVE.code
    rec.message = nativelib.fn.jv_strdup(text.encode("utf-8", "replace"))
    rec.message_owned = 1
    with _pending_lock:
        _pending[trap_addr] = exc
    return status


def no_module_frame(state: int, function: int, pc: int):
    """`describe_frame` for records of native functions outside any module (they push none)."""
    return ("?", f"function {function}", pc, None)


def take_exception(rec: TrapT, describe_frame) -> BaseException:
    """The exception for a nonzero status: a parked one, or a Trap built from the record.

    `describe_frame(module_state_addr, function, pc)` -> (module, function, pc, location)
    names the native frames the record collected, which are appended to the backtrace.
    """
    addr = ctypes.addressof(rec)
    with _pending_lock:
        parked = _pending.pop(addr, None)
    if parked is not None and not isinstance(parked, Trap):
        if isinstance(parked, Error):
            return parked
        exc = Trap(STATUS_CODES["INTERNAL"], f"{type(parked).__name__}: {parked}")
        exc.__cause__ = parked
        parked = exc
    if parked is None:
        parked = Trap(rec.status, failure_text(rec))
    for i in range(min(rec.frame_count, MAX_FRAMES)):
        f = rec.frames[i]
        parked.add_frame(*describe_frame(f.module or 0, f.function, f.pc))
    if rec.message_owned or rec.inner:
        nativelib.fn.jv_trap_clear(addr)
    rec.status = rec.frame_count = 0
    return parked
