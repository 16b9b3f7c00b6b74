"""Runners for accepted mutants: every export called under the interpreter ("interp") or the JIT ("jit").

Importing this module registers both in `jitvm.fuzz.mutation.RUNNERS`. A runner gets a
mutant that loaded and verified, prepares it with its backend and calls what it exports:

- VMVX executables (exports with the dispatch calling convention `0rrriiiiiiiii_v`) are
  created the way `hal.executable.create` does it (`__set_constants` included) and every
  entry point is dispatched through the backend's own dispatch runner, as the HAL's command
  buffers do, with a small workgroup grid, zeroed binding buffers of BINDING_BYTES each and
  push constants that are zeros, small numbers or edge values.
- Any other module is instantiated like `jitvm.load` does (a context with the hal, check
  and vmvx native modules it imports; `__init` runs), then every export is called with raw
  VM values (ARGUMENT_SETS: zeros and null refs, small numbers and a small !vm.buffer, edge
  values), and functions with `iree.abi.declaration` reflection once more with small numpy
  arrays of the declared shapes. `__deinit` runs at the end.

A call may return or raise jitvm.Error: that is counted ("traps", or "errors" for other
jitvm errors such as ArgumentError). A jitvm.Error that wraps a Python exception other than
RecursionError/MemoryError (an interpreter handler or native module that hit an IndexError,
say, reported as an INTERNAL trap) is a jitvm bug like a bare exception: both raise
`RunnerBug` out of the runner, which the pool reports as BUG.

Every step tells the pool its phase (protocol.phase) so a timeout is charged right:
"compile" (the backend prepares the module and its embedded executables: JIT compilation
or the interpreter's translation) has its own budget and must end; "init" and "call" may run
long for a mutant (a mutated loop bound) and end as SLOW_CALL when past the call budget.

The JIT runs with use_cache=False (every mutant is new code; the disk cache would only
collect garbage) and one thread (two workers share two cores; traps are deterministic).
"""

from __future__ import annotations

import builtins
import math
import re
import struct
import warnings
import zlib
from collections import Counter

import numpy as np

import jitvm
from jitvm.api import EmbeddedLoader

from . import protocol
from .checks import RUNNERS

BINDING_BYTES = 1 << 16  # each dispatch binding buffer (zeroed)
MAX_BINDINGS = 16  # a mutated binding_count attribute is capped
MAX_CONSTANTS = 64  # and so is constant_count
EXECUTABLE_CONSTANTS = 64  # i32s handed to __set_constants when an executable exports it
MAX_ARRAY_ELEMENTS = 1 << 16  # reflected calls with bigger declared arrays are skipped
DYNAMIC_DIM = 3  # the size given to a `?` dimension

_I32_EDGES = (-1, -(1 << 31), (1 << 31) - 1, 7)
_I64_EDGES = (-1, -(1 << 63), (1 << 63) - 1, 1 << 32)
_F_EDGES = (float("nan"), -0.0, float("inf"), -float("inf"))

# name -> value for (code, argument position); "buffer" refs become a fresh 64-byte !vm.buffer
ARGUMENT_SETS = {
    "zeros": {"i": lambda k: 0, "I": lambda k: 0, "f": lambda k: 0.0, "F": lambda k: 0.0, "r": lambda k: None},
    "small": {"i": lambda k: 1 + k % 4, "I": lambda k: 1 + k % 4, "f": lambda k: 1.5 + k,
              "F": lambda k: 2.5 + k, "r": lambda k: "buffer"},
    "edges": {"i": lambda k: _I32_EDGES[k % 4], "I": lambda k: _I64_EDGES[k % 4],
              "f": lambda k: _F_EDGES[k % 4], "F": lambda k: _F_EDGES[(k + 1) % 4], "r": lambda k: None},
}

# (name, workgroup count, push constant for position k) of each dispatch of an entry point
DISPATCHES = (
    ("zeros", (1, 1, 1), lambda k: 0),
    ("small", (2, 2, 1), lambda k: 4 * (k + 1)),
    ("edges", (1, 1, 1), lambda k: (0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0xFFFFFFF0)[k % 4]),
)

# Causes a jitvm.Error may legitimately carry: the interpreter's stack bound and host memory.
_ALLOWED_CAUSES = (RecursionError, MemoryError)


def _name(cause) -> str:
    return cause if isinstance(cause, str) else type(cause).__name__


class RunnerBug(Exception):
    """A call raised something other than jitvm.Error, or a jitvm.Error hiding a Python error."""


_backends: dict = {}


def backend(name: str):
    """This process's backend object for `name` ("jit": no disk cache, one thread)."""
    if name not in _backends:
        if name == "jit":
            from jitvm.lower.backend import JitBackend

            _backends[name] = JitBackend(use_cache=False, progress=False, threads=1)
        elif name == "interp":
            from jitvm.fallback_interp import InterpreterBackend

            _backends[name] = InterpreterBackend()
        else:
            raise ValueError(name)
    return _backends[name]


# How both backends word an INTERNAL trap made from a Python exception: "IndexError: ..."
# (native modules called from the JIT or the interpreter) or "interpreter error: KeyError: ...".
_WRAPPED = re.compile(r"^(?:interpreter error: )?([A-Za-z_][\w.]*): ")


def hidden_bug(error: BaseException):
    """The Python exception (or its name) a jitvm.Error was made from, if it is one that only a
    jitvm bug raises. Traps that crossed native frames (JIT code, trampolines) lose their
    `__cause__`, so an INTERNAL trap's message is read too."""
    seen = set()
    cause = error.__cause__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if not isinstance(cause, jitvm.Error) and not isinstance(cause, _ALLOWED_CAUSES):
            return cause
        cause = cause.__cause__
    if isinstance(error, jitvm.Trap) and error.status_name == "INTERNAL":
        m = _WRAPPED.match(error.message)
        if m:
            name = m.group(1).rsplit(".", 1)[-1]
            cls = getattr(builtins, name, None)
            python_error = isinstance(cls, type) and issubclass(cls, BaseException) or name == "error"
            if python_error and not (isinstance(cls, type) and issubclass(cls, _ALLOWED_CAUSES)):
                return name
    return None


def fingerprint(value) -> bytes:
    """Bytes that are equal for equal results: numbers by their bits, refs by type, arrays by content."""
    if value is None:
        return b"N"
    if isinstance(value, bool):
        return b"b%d" % value
    if isinstance(value, int):
        return b"i%d" % value
    if isinstance(value, float):
        return b"f" + struct.pack("<d", value)
    if isinstance(value, np.ndarray):
        return b"a" + str(value.dtype).encode() + str(value.shape).encode() + np.ascontiguousarray(value).tobytes()
    if isinstance(value, (list, tuple)):
        return b"(" + b",".join(fingerprint(v) for v in value) + b")"
    name = getattr(value, "type_name", None)
    return b"r" + str(name if name is not None else type(value).__name__).encode()


class _Calls:
    """Counts calls and their outcomes; anything but a clean jitvm.Error raises RunnerBug.

    `counts["digest"]` is a CRC of every call's outcome in order (results by value, traps by
    status and message): the two backends must agree on it for the same mutant, unless one
    ran out of memory (`counts["out_of_memory"]`: the two processes hit their address-space
    limit at different sizes).
    """

    def __init__(self):
        self.counts: Counter = Counter()
        self.digest = 0

    def _record(self, what: str, outcome: bytes) -> None:
        self.digest = zlib.crc32(what.encode() + b"=" + outcome + b";", self.digest)
        self.counts["digest"] = self.digest

    def run(self, phase: str, what: str, thunk, counter: str = "calls") -> bool:
        """Runs `thunk` as one counted call; True when it returned."""
        self.counts[counter] += 1
        protocol.phase(phase, what, self.counts)
        try:
            result = thunk()
        except jitvm.Error as e:
            cause = hidden_bug(e)
            if cause is not None:
                raise RunnerBug(f"{what}: {type(e).__name__} wrapping {_name(cause)}: {e}") from e
            self.counts["traps" if isinstance(e, jitvm.Trap) else "errors"] += 1
            if "out of memory" in str(e):  # where the worker's memory limit bites is no program fact
                self.counts["out_of_memory"] += 1
            text = f"{e.status_name}: {e.message}" if isinstance(e, jitvm.Trap) else f"{type(e).__name__}: {e}"
            self._record(what, text.encode("utf-8", "replace"))
            return False
        except Exception as e:  # noqa: BLE001 - the finding
            raise RunnerBug(f"{what}: {type(e).__name__}: {e}") from e
        self._record(what, fingerprint(result))
        return True


def run(verified, data: bytes, backend_name: str) -> dict:
    """Prepares `verified` (the mutant `data`) with the backend and calls its exports; returns counts."""
    from jitvm.lower.backend import STATS
    from jitvm.runtime.vm.bytecode import LoadedModule
    from jitvm.runtime.modules import register_hal_types
    from jitvm.runtime.modules.hal import native as hal_native

    be = backend(backend_name)
    calls = _Calls()
    register_hal_types()
    hal_native.zero_transients()  # a mutant may read transient bytes no dispatch wrote
    protocol.phase("compile", verified.name, calls.counts)
    fallbacks = STATS["fallback_functions"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # JIT fallbacks are counted below
        try:
            if _is_executable(verified):  # through the HAL's cache, where executable.create looks
                from jitvm.runtime.modules.hal.executable import _load

                loaded = _load(data, EmbeddedLoader(be))
            else:
                loaded = LoadedModule(verified, be)
            keep = _prepare_embedded(verified, be)
        except jitvm.Error as e:
            cause = hidden_bug(e)
            if cause is not None:
                raise RunnerBug(f"prepare: {type(e).__name__} wrapping {_name(cause)}: {e}") from e
            calls.counts["prepare_errors"] += 1
            return dict(calls.counts)
        except Exception as e:  # noqa: BLE001
            raise RunnerBug(f"prepare: {type(e).__name__}: {e}") from e
    if STATS["fallback_functions"] > fallbacks:
        calls.counts["fallbacks"] += STATS["fallback_functions"] - fallbacks
    if _is_executable(verified):
        _run_executable(loaded, data, be, calls)
    else:
        _run_program(loaded, calls)
    del keep
    return dict(calls.counts)


def _prepare_embedded(verified, be) -> list:
    """Loads (verifies and compiles) the executables in the module's rodata now, in the
    compile phase; `hal.executable.create` then finds them in the HAL's cache."""
    from jitvm.runtime.modules.hal.executable import _load
    from jitvm.verify.embedded import embedded_modules

    keep = []
    for _ordinal, data in embedded_modules(verified.module):
        try:
            keep.append(_load(bytes(data), EmbeddedLoader(be)))
        except jitvm.Error:
            pass  # the program's own executable.create will fail on it the same way
    return keep


def _is_executable(verified) -> bool:
    from jitvm.runtime.exec.dispatch import VMVX_ENTRY_CCONV

    m = verified.module
    if any(i.module_name in ("hal", "check") for i in m.imports):
        return False
    return any(m.signatures[e.internal_ordinal].cconv.text == VMVX_ENTRY_CCONV for e in m.exports)


# --- programs ----------------------------------------------------------------------------------

def _instantiate(loaded):
    """What jitvm.load does after verification: the native modules the module imports, then it."""
    from jitvm.api import Module, _native_modules
    from jitvm.runtime.vm.context import Context

    m = loaded.module
    wanted = [d.name for d in m.dependencies] + [i.module_name for i in m.imports]
    factories = _native_modules(EmbeddedLoader(loaded.backend), None)
    context = Context()
    natives = {}
    for name in dict.fromkeys(wanted):
        if name in factories:
            natives[name] = context.add(factories[name]())
    return Module(context, context.add(loaded), natives)


def _run_program(loaded, calls: _Calls) -> None:
    box = {}

    def init():
        box["module"] = _instantiate(loaded)

    if not calls.run("init", "__init", init, counter="inits"):
        return
    module = box["module"]
    try:
        for name in module.exports:
            fn = module.function(name)
            if fn.declaration is not None:
                args = reflected_arguments(fn.declaration)
                if args is not None:
                    calls.run("call", f"{name} reflected", lambda: fn(*args))
            for label in ARGUMENT_SETS:
                raw = raw_arguments(fn.cconv, label)
                calls.run("call", f"{name} {label}", lambda: fn.vm_function.call(raw))
    finally:
        calls.run("call", "__deinit", module.close, counter="deinits")


def raw_arguments(cconv, label: str) -> list:
    """Raw VM values for every argument position of `cconv` from ARGUMENT_SETS[label]."""
    from jitvm.frontend.cconv import Span

    values = ARGUMENT_SETS[label]
    k = 0

    def value(code):
        nonlocal k
        v = values[code](k)
        k += 1
        return _buffer() if v == "buffer" else v

    out = []
    for spec in cconv.args:
        if isinstance(spec, Span):
            out.append([] if label == "zeros" else [tuple(value(c) for c in spec.codes)])
        else:
            out.append(value(spec))
    return out


def _buffer():
    from jitvm.runtime.vm.objects import VmBuffer

    buf = VmBuffer.allocate(64)
    buf.view()[:] = bytes(range(1, 65))
    return buf


def reflected_arguments(decl) -> list | None:
    """Small numpy arrays (values 1, 2, 3, ...) of the declared shapes, `?` as DYNAMIC_DIM;
    scalars 1 / 1.5; other types (fences, raw views) None. None when an array is too big."""
    out = []
    for d in decl.inputs:
        if d.is_tensor:
            shape = tuple(DYNAMIC_DIM if s is None else s for s in d.shape)
            n = math.prod(shape)  # exact: a mutated dimension may be huge
            if d.dtype is None or not 0 <= n <= MAX_ARRAY_ELEMENTS or any(s < 0 for s in shape):
                return None
            values = np.arange(n) % 3 + 1
            out.append((values % 2 if d.dtype.kind == "b" else values).astype(d.dtype).reshape(shape))
        elif d.is_scalar:
            out.append(1.5 if d.dtype is not None and d.dtype.kind == "f" else 1)
        else:
            out.append(None)
    return out


# --- VMVX executables --------------------------------------------------------------------------

def _run_executable(loaded, data: bytes, be, calls: _Calls) -> None:
    """Creates the executable like hal.executable.create and dispatches every entry point."""
    from jitvm.runtime.modules import VmvxModule
    from jitvm.runtime.exec.dispatch import runner_for
    from jitvm.runtime.modules.hal.executable import create_vmvx_executable, pack_constants

    runner = runner_for(be)
    exports = {e.name for e in loaded.module.exports}
    constants = pack_constants(range(1, EXECUTABLE_CONSTANTS + 1)) if "__set_constants" in exports else None
    box = {}

    def create():
        box["exe"] = create_vmvx_executable(data, constants, EmbeddedLoader(be), runner, VmvxModule)

    if not calls.run("init", "hal.executable.create", create, counter="inits"):
        _run_program(loaded, calls)  # not a valid executable any more: call its exports raw
        return
    exe = box["exe"]
    try:
        for entry in exe.entries:
            if entry.function is None:
                continue
            for label, count, constant in DISPATCHES:
                calls.run("call", f"{entry.name} {label}",
                          lambda: _dispatch(exe, entry, count, constant), counter="dispatches")
    finally:
        exe.context.close()


def _dispatch(exe, entry, count, constant) -> None:
    """One dispatch of `entry` the way a HAL command buffer issues it."""
    from jitvm.frontend.types import parse_type
    from jitvm.runtime.native import layout
    from jitvm.runtime.exec.dispatch import Dispatch
    from jitvm.runtime.modules.hal.executable import pack_constants
    from jitvm.runtime.exec.fpu import denormals_flushed
    from jitvm.runtime.vm.objects import VmBuffer, VmList

    n = max(0, min(entry.binding_count, MAX_BINDINGS))
    bindings = VmList.allocate(parse_type("!vm.buffer"), n)
    for _ in range(n):
        bindings.append(VmBuffer.allocate(BINDING_BYTES))
    constants = VmBuffer.from_bytes(pack_constants([constant(k) for k in range(min(entry.constant_count,
                                                                                    MAX_CONSTANTS))]),
                                    access=layout.BUFFER_ORIGIN_HOST)
    local_memory = VmBuffer.allocate(entry.local_memory_size)
    with denormals_flushed():
        exe.runner.run(Dispatch(entry.function, count, (1, 1, 1), local_memory, constants, bindings))


RUNNERS["interp"] = lambda verified, data: run(verified, data, "interp")
RUNNERS["jit"] = lambda verified, data: run(verified, data, "jit")
