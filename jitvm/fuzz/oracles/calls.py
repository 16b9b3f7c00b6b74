"""Raw calls under one backend and how their outcomes compare: the vocabulary of every
differential check (JIT against the interpreter, jitvm against IREE).

An outcome is ("ok", results) or ("trap", status, message). Values compare exactly: integers
by type and value, floats bit for bit (NaN payloads too), refs by presence; the differential
runner compares refs by content on top of that.
"""

from __future__ import annotations

import math
import struct

import jitvm
from jitvm.fallback_interp import InterpreterBackend
from jitvm.frontend.module import load_module
from jitvm.runtime.vm.bytecode import LoadedModule
from jitvm.runtime.vm.context import Context
from jitvm.verify import verify_module


def instantiate(path, backend=None, context=None):
    """(context, instance) of the module at `path` (or in .vmfb bytes) under `backend`
    (the interpreter by default)."""
    backend = backend or InterpreterBackend()
    context = context or Context()
    source = path if isinstance(path, (bytes, bytearray, memoryview)) else str(path)
    return context, context.add(LoadedModule(verify_module(load_module(source)), backend))


def same_value(got, want) -> bool:
    """Integers exactly (same type), floats bit for bit (NaN payloads too), refs by presence."""
    if isinstance(want, float) or isinstance(got, float):
        if not (isinstance(got, float) and isinstance(want, float)):
            return False
        return struct.pack("<d", got) == struct.pack("<d", want)
    if hasattr(got, "addr") or hasattr(want, "addr") or got is None or want is None:
        return (got is None) == (want is None)
    return type(got) is type(want) and got == want


def describe(v) -> str:
    if isinstance(v, float):
        return f"{v!r} (0x{struct.unpack('<Q', struct.pack('<d', v))[0]:016x})" if math.isnan(v) else repr(v)
    return repr(v)


def outcome(fn, args):
    """("ok", results) or ("trap", status, message) of one raw call."""
    try:
        return ("ok", fn.call(list(args)))
    except jitvm.Trap as e:
        return ("trap", e.status_name, e.message)


def same_outcome(a, b) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "trap":
        return a[1:] == b[1:]
    return len(a[1]) == len(b[1]) and all(same_value(x, y) for x, y in zip(a[1], b[1]))


def show(o) -> str:
    if o[0] == "trap":
        return f"trap {o[1]}: {o[2]}"
    return "[" + ", ".join(map(describe, o[1])) + "]"
