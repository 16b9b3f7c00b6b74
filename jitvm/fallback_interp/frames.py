"""Invocation state and trap unwinding for interpreted functions.

A `Stack` is one invocation's view of the VM call stack: its depth (bounded by
`runtime.vm.semantics.MAX_CALL_DEPTH`, the same limit the JIT enforces) and the buffer views
the interpreted code has opened. Nested entries on one thread (interpreted code calling a
Python import that calls back into interpreted code) share the thread's current stack, so
the depth bound holds across them.

Generated functions catch every exception once per frame and hand it to `unwind`, which
turns it into a `jitvm.Trap` (Python-level failures included: a RecursionError becomes
RESOURCE_EXHAUSTED, anything else INTERNAL naming the Python error) and appends the
frame's (module, function, pc, source location), found from the line the exception passed.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from ..errors import STATUS_CODES, Error, Trap
from ..runtime.vm import traps
from ..runtime.vm.semantics import MAX_CALL_DEPTH

_tls = threading.local()

# Python frames an interpreted VM frame may need: the generated function plus helpers.
_PYTHON_FRAMES_PER_VM_FRAME = 3


class Stack:
    """The depth counter and open buffer views of one invocation (one thread)."""

    __slots__ = ("depth", "views")

    def __init__(self, depth: int = 0):
        self.depth = depth
        self.views: dict = {}  # buffer address -> buffers.BufferView (holds a reference)

    def close(self) -> None:
        """Releases the buffers the views hold (the dict stays: generated code aliases it)."""
        views = list(self.views.values())
        self.views.clear()
        for v in views:
            v.close()


def current() -> Stack | None:
    return getattr(_tls, "stack", None)


@contextmanager
def invocation(depth: int = 0):
    """The thread's current stack, or a fresh one starting at `depth` for an outermost call.

    A fresh stack is the thread's current one until the call returns, then its buffer
    views are closed.
    """
    stk = getattr(_tls, "stack", None)
    if stk is not None:
        yield stk
        return
    stk = _tls.stack = Stack(depth)
    try:
        yield stk
    finally:
        _tls.stack = None
        stk.close()


def ensure_recursion_limit() -> None:
    """Lets Python recurse as deep as MAX_CALL_DEPTH interpreted VM frames need.

    Python-to-Python calls do not use the C stack on CPython >= 3.11, so a higher limit
    costs nothing; it is only raised, never lowered.
    """
    import sys

    need = MAX_CALL_DEPTH * _PYTHON_FRAMES_PER_VM_FRAME + 1000
    if sys.getrecursionlimit() < need:
        sys.setrecursionlimit(need)


class FunctionInfo:
    """What a trap needs to name an interpreted frame."""

    __slots__ = ("module", "name", "ordinal", "bytecode_module", "code_lines")

    def __init__(self, module: str, name: str, ordinal: int, bytecode_module, code_lines):
        self.module = module
        self.name = name
        self.ordinal = ordinal
        self.bytecode_module = bytecode_module
        self.code_lines = code_lines  # generated-source line -> instruction pc (None: prologue)

    def pc_at_line(self, line: int) -> int:
        lines = self.code_lines
        pc = lines[line] if 0 <= line < len(lines) else None
        return 0 if pc is None else pc


def as_trap(exc: BaseException) -> Trap | Error:
    """The jitvm error an exception escaping interpreted code becomes."""
    if isinstance(exc, Trap):
        return exc
    if isinstance(exc, Error):
        return exc
    if isinstance(exc, RecursionError):
        t = traps.make_trap(traps.STACK_OVERFLOW, MAX_CALL_DEPTH)
    elif isinstance(exc, MemoryError):
        t = traps.make_trap(traps.OUT_OF_MEMORY, message="the Python interpreter ran out of memory")
    else:
        t = Trap(STATUS_CODES["INTERNAL"], f"interpreter error: {type(exc).__name__}: {exc}")
    t.__cause__ = exc
    return t


def unwind(exc: BaseException, info: FunctionInfo) -> BaseException:
    """Adds the frame of `info` (at the line `exc` passed through) to the trap it becomes."""
    trap = as_trap(exc)
    if not isinstance(trap, Trap):
        return trap
    tb = exc.__traceback__
    line = tb.tb_lineno if tb is not None else -1
    pc = info.pc_at_line(line)
    location = None
    try:
        location = info.bytecode_module.source_location(info.ordinal, pc)
    except Exception:  # noqa: BLE001 - a broken debug database never hides the trap
        location = None
    trap.add_frame(info.module, info.name, pc, location)
    return trap
