"""The interpreter as a runtime backend: prepare once per module, bind once per instance.

`InterpreterBackend.prepare(loaded)` translates every verified function of the module to
Python (codegen) and compiles it. Each `BytecodeInstance` that runs the module gets its own
bound functions: closures over that instance's globals and import adapters. Functions
run with raw register values; `call` converts from and to the Python values of the
runtime API, and `native_entry` wraps a function in the uniform native ABI so JIT-compiled
code (and anything else native) can call it.
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from typing import Sequence

from ..errors import ArgumentError
from ..frontend.cconv import Span
from ..runtime.vm import abi, nativelib, traps
from ..runtime.vm.bytecode import BytecodeInstance, InternalFunction, LoadedModule
from ..runtime.native.layout import TrapT
from . import codegen, frames, imports
from .dispatch import InterpDispatchRunner

_DEPTH_OFFSET = TrapT.depth.offset


class InterpreterBackend:
    """The reference interpreter: every op of the ISA with IREE's semantics, in Python."""

    name = "interp"

    def __init__(self, count_instructions: bool = False, cache_code: bool = False):
        self.count_instructions = count_instructions
        self.cache_code = cache_code  # keep the compiled Python in the code store (codegen.compile_module)

    def prepare(self, loaded: LoadedModule) -> "InterpExecutable":
        return InterpExecutable(loaded, self.count_instructions, self.cache_code)

    def dispatch_runner(self):
        """The HAL's runner for interpreted VMVX executables (see dispatch.py)."""
        return InterpDispatchRunner(_interpreted)


class _Bound:
    """One instance's functions (raw calling convention) and native trampolines."""

    __slots__ = ("functions", "trampolines")

    def __init__(self, functions):
        self.functions = functions
        self.trampolines: dict[int, object] = {}


class InterpExecutable:
    """A module translated to Python, shared by every context that instantiates it."""

    def __init__(self, loaded: LoadedModule, count_instructions: bool = False, cache_code: bool = False):
        frames.ensure_recursion_limit()
        self.loaded = loaded
        module = loaded.module
        self._codegen = codegen.ModuleCodegen(loaded.verified, [b.addr for b in loaded.rodata],
                                              count_blocks=count_instructions)
        self.generated = self._codegen.generate()
        self._bind = codegen.compile_module(self.generated, self, cache_code)
        self._bound: "weakref.WeakKeyDictionary[BytecodeInstance, _Bound]" = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._signatures = [s.cconv for s in module.signatures]
        self._names = [f"{module.name}.{module.display_name(i)}" for i in range(len(module.functions))]

    def instructions_executed(self) -> int:
        """Instructions run so far (block markers excluded) when built to count them."""
        cg = self._codegen
        return sum(n * size for n, size in zip(cg.block_counts, cg.block_sizes))

    # --- binding to instances ---------------------------------------------------------------

    def _bound_for(self, instance: BytecodeInstance) -> _Bound:
        bound = self._bound.get(instance)
        if bound is None:
            with self._lock:
                bound = self._bound.get(instance)
                if bound is None:
                    bound = _Bound(self._bind(self._environment(instance)))
                    self._bound[instance] = bound
        return bound

    def functions(self, instance: BytecodeInstance) -> tuple:
        """The instance's functions in ordinal order: `f(stack, *raw_args) -> raw results`."""
        return self._bound_for(instance).functions

    def _environment(self, instance: BytecodeInstance) -> dict:
        env = {}
        rw_bytes = memoryview(instance.rwdata).cast("B")
        for name, spec in self.generated.env_specs.items():
            kind = spec[0]
            if kind == "rwdata":
                env[name] = rw_bytes if spec[1] == "B" else rw_bytes.cast(codegen.VIEW_FORMATS[spec[1]])
            elif kind == "rwdata_size":
                env[name] = instance.loaded.module.global_bytes
            elif kind == "refs":
                env[name] = memoryview(instance.refs).cast("B").cast("Q")
            elif kind == "ref_count":
                env[name] = instance.loaded.module.global_refs
            elif kind == "resolved":
                env[name] = int(instance.imports[spec[1]] is not None)
            elif kind == "call":
                _, site, segments = spec
                env[name] = imports.adapter(site, instance.imports[site.callee], segments, _interpreted)
            else:
                raise AssertionError(f"unknown environment entry {spec!r}")
        return env

    # --- the Executable protocol ------------------------------------------------------------

    def call(self, instance: BytecodeInstance, ordinal: int, args: Sequence) -> list:
        """Runs function `ordinal` with Python values; returns its results as Python values."""
        cconv = self._signatures[ordinal]
        name = self._names[ordinal]
        abi.check_arity(name, cconv, args)
        if any(isinstance(a, Span) for a in cconv.args):
            raise ArgumentError(f"{name} has a variadic signature ({cconv}); bytecode functions cannot")
        raw = [abi.argument_slot(code, v, f"argument {i} of {name}") for i, (code, v) in enumerate(zip(cconv.args, args))]
        for code, r in zip(cconv.args, raw):
            if code == "r" and r:
                nativelib.fn.jv_retain(r)
        fn = self.functions(instance)[ordinal]
        with frames.invocation() as stk:
            out = fn(stk, *raw)
        codes = cconv.results
        if not codes:
            return []
        if len(codes) == 1:
            return [abi.from_slot(codes[0], out, owned=True)]
        return [abi.from_slot(c, r, owned=True) for c, r in zip(codes, out)]

    def native_entry(self, instance: BytecodeInstance, ordinal: int) -> tuple[int, int]:
        """(address, ctx) of `i32 fn(ctx, u64* args, u64* results, Trap*)` running the function."""
        bound = self._bound_for(instance)
        tramp = bound.trampolines.get(ordinal)
        if tramp is None:
            tramp = bound.trampolines[ordinal] = abi.NATIVE_FN(
                _trampoline(bound.functions[ordinal], self._signatures[ordinal]))
        return ctypes.cast(tramp, ctypes.c_void_p).value, instance.state_addr


def _interpreted(fn):
    """The raw interpreted function behind an import, when it is one (no marshalling needed)."""
    if isinstance(fn, InternalFunction):
        executable = fn.instance.loaded.executable
        if isinstance(executable, InterpExecutable):
            return executable.functions(fn.instance)[fn.ordinal]
    return None


def _trampoline(fn, cconv):
    """The native-ABI wrapper of raw function `fn`: borrowed ref arguments, owned results."""
    arg_codes = cconv.args
    result_codes = cconv.results
    nres = len(result_codes)

    def entry(ctx, args, results, trap):
        try:
            raw = []
            for i, code in enumerate(arg_codes):
                v = args[i]
                if code in ("i", "f"):
                    v &= 0xFFFFFFFF
                elif code == "r" and v:
                    nativelib.fn.jv_retain(v)
                raw.append(v)
            depth = ctypes.c_int32.from_address(trap + _DEPTH_OFFSET).value if trap else 0
            with frames.invocation(depth) as stk:
                out = fn(stk, *raw)
            if nres == 1:
                results[0] = out or 0
            elif nres:
                for k in range(nres):
                    results[k] = out[k] or 0
            return 0
        except BaseException as e:  # noqa: BLE001 - carried to the native caller
            return traps.park_exception(trap, e)
    return entry
