"""Bytecode modules in the runtime: the loaded (shared) part and per-context instances.

A `LoadedModule` holds what every context shares: the verified module, its rodata as
read-only buffers over the mapped file, and the backend's executable (interpreter plan or
compiled code). A `BytecodeInstance` is one context's copy: the native ModuleState with
globals and the resolved import table, which both backends read directly.
"""

from __future__ import annotations

import ctypes
import weakref
from typing import Protocol, Sequence

from ...errors import Error
from ...verify.model import VerifiedModule
from . import abi, traps
from ..native import layout
from ..native.layout import ImportT, ModuleStateT
from .interface import Function, ModuleInstance
from .objects import VmBuffer, address_of, release

MAX_GLOBAL_BYTES = 1 << 30
MAX_GLOBAL_REFS = 1 << 20


class Executable(Protocol):
    """A backend's form of one module: how to run its internal functions."""

    def call(self, instance: "BytecodeInstance", ordinal: int, args: Sequence) -> list:
        """Runs internal function `ordinal` with Python values; raises jitvm.Trap."""

    def native_entry(self, instance: "BytecodeInstance", ordinal: int) -> tuple[int, int]:
        """(address, ctx) of the function under the uniform native ABI."""


class Backend(Protocol):
    name: str

    def prepare(self, loaded: "LoadedModule") -> Executable:
        """Builds the executable form of a verified module (once, shared by contexts)."""


class LoadedModule:
    """A verified bytecode module ready to be instantiated in contexts."""

    def __init__(self, verified: VerifiedModule, backend: Backend):
        self.verified = verified
        self.module = verified.module
        self.name = verified.name
        self.backend = backend
        access = layout.BUFFER_ORIGIN_MODULE  # read-only
        self.rodata = [VmBuffer.wrap_memory(address_of(seg.data), seg.length, access, None)
                       for seg in self.module.rodata]
        self.executable = backend.prepare(self)

    def instantiate(self, context) -> "BytecodeInstance":
        return BytecodeInstance(self, context)


_instances: "weakref.WeakValueDictionary[int, BytecodeInstance]" = weakref.WeakValueDictionary()


def instance_of_state(addr: int) -> "BytecodeInstance | None":
    return _instances.get(addr)


def describe_frame(state_addr: int, function: int, pc: int):
    """(module, function, pc, source location) for a native frame in a trap record."""
    inst = instance_of_state(state_addr)
    if inst is None:
        return ("?", f"function {function}", pc, None)
    m = inst.loaded.module
    name = m.display_name(function) if 0 <= function < len(m.functions) else f"function {function}"
    return (inst.name, name, pc, m.source_location(function, pc) if 0 <= function < len(m.functions) else None)


class BytecodeInstance(ModuleInstance):
    """One context's instance of a bytecode module: module state plus resolved imports."""

    def __init__(self, loaded: LoadedModule, context):
        m = loaded.module
        self.loaded = loaded
        self.context = context
        self.name = m.name
        self.version = m.version
        if not 0 <= m.global_bytes <= MAX_GLOBAL_BYTES or not 0 <= m.global_refs <= MAX_GLOBAL_REFS:
            raise Error(f"{m.name}: module state of {m.global_bytes} bytes and {m.global_refs} refs is too large")
        self.imports: list[Function | None] = [context.resolve_import(imp) for imp in m.imports]

        st = self.state = ModuleStateT()
        self.rwdata = (ctypes.c_uint64 * max(1, (m.global_bytes + 7) // 8))()  # 8-byte aligned, zeroed
        self.refs = (ctypes.c_void_p * max(1, m.global_refs))()
        self.rodata_table = (ctypes.c_void_p * max(1, len(loaded.rodata)))(*[b.addr for b in loaded.rodata])
        self.import_table = (ImportT * max(1, len(m.imports)))()
        self.function_table = (ctypes.c_void_p * max(1, len(m.functions)))()
        st.rwdata, st.rwdata_size = ctypes.addressof(self.rwdata), m.global_bytes
        st.refs, st.ref_count = ctypes.addressof(self.refs), m.global_refs
        st.rodata, st.rodata_count = ctypes.addressof(self.rodata_table), len(loaded.rodata)
        st.imports, st.import_count = ctypes.addressof(self.import_table), len(m.imports)
        st.functions, st.function_count = ctypes.addressof(self.function_table), len(m.functions)
        self.state_addr = ctypes.addressof(st)
        _instances[self.state_addr] = self
        self._native_imports_ready = False
        self._exports = {e.name: e.internal_ordinal for e in m.exports}

    # --- imports -------------------------------------------------------------------------------

    def prepare_native_imports(self) -> None:
        """Fills the native import table (needed once native code runs in this instance)."""
        if self._native_imports_ready:
            return
        for i, fn in enumerate(self.imports):
            slot = self.import_table[i]
            if fn is not None:
                slot.fn, slot.ctx = fn.native_entry()
                slot.resolved = 1
        self._native_imports_ready = True

    # --- functions -----------------------------------------------------------------------------

    def function(self, ordinal: int) -> "InternalFunction":
        return InternalFunction(self, ordinal)

    def lookup(self, name: str) -> Function | None:
        ordinal = self._exports.get(name)
        return None if ordinal is None else InternalFunction(self, ordinal, name)

    def export_names(self) -> list[str]:
        return list(self._exports)

    def call(self, ordinal: int, args: Sequence) -> list:
        return self.loaded.executable.call(self, ordinal, args)

    def initialize(self) -> None:
        fn = self.lookup("__init")
        if fn is not None:
            fn.call([])

    def close(self) -> None:
        fn = self.lookup("__deinit")
        try:
            if fn is not None:
                fn.call([])
        finally:
            for i in range(len(self.refs)):
                addr, self.refs[i] = self.refs[i] or 0, None
                release(addr)

    def __del__(self):
        refs = getattr(self, "refs", None)
        if refs is not None:
            for i in range(len(refs)):
                addr, refs[i] = refs[i] or 0, None
                try:
                    release(addr)
                except Exception:
                    pass


class InternalFunction(Function):
    """An internal function of a bytecode instance (exports are internal functions too)."""

    def __init__(self, instance: BytecodeInstance, ordinal: int, export_name: str | None = None):
        m = instance.loaded.module
        self.instance = instance
        self.ordinal = ordinal
        self.local_name = export_name or m.display_name(ordinal)
        self.name = f"{instance.name}.{self.local_name}"
        sig = m.signatures[ordinal]
        self.cconv = sig.cconv
        self.attrs = sig.attrs

    def call(self, args: Sequence) -> list:
        abi.check_arity(self.name, self.cconv, args)
        return self.instance.call(self.ordinal, list(args))

    def native_entry(self) -> tuple[int, int]:
        return self.instance.loaded.executable.native_entry(self.instance, self.ordinal)


def raise_native_trap(record, ) -> None:
    """Turns a nonzero-status trap record into the exception it describes."""
    raise traps.take_exception(record, describe_frame)
