"""Functions and modules as a context sees them, and native modules written in Python.

A `Function` can be called two ways: from Python with plain values (`call`), and from
native code through the uniform ABI of runtime.vm.abi (`native_entry`). Native modules are
Python classes whose methods are declared with IREE calling-convention strings, and whose
natively implemented functions (`NativeFunction`) compiled code and the interpreter call
directly.
"""

from __future__ import annotations

import ctypes
from typing import Callable, ClassVar, Sequence

from ...errors import Error
from ...frontend.cconv import CallingConvention, parse_cconv
from ..native.layout import TrapT
from . import abi, traps
from .objects import register_type


class Function:
    """A callable VM function bound to a context."""

    name: str  # full name as imports spell it: "hal.buffer.assert", "module.main"
    cconv: CallingConvention
    attrs: tuple[tuple[str, str], ...] = ()

    def call(self, args: Sequence) -> list:
        raise NotImplementedError

    def native_entry(self) -> tuple[int, int]:
        """(function address, ctx) callable as `i32 fn(ctx, args, results, trap)`."""
        raise NotImplementedError

    def attr(self, key: str) -> str | None:
        return next((v for k, v in self.attrs if k == key), None)

    def __repr__(self):
        return f"<{type(self).__name__} {self.name} {self.cconv.text}>"


class PythonFunction(Function):
    """A function implemented by a Python callable taking and returning plain values."""

    def __init__(self, name: str, cconv: str | CallingConvention, impl: Callable, attrs=()):
        self.name = name
        self.cconv = parse_cconv(cconv, name) if isinstance(cconv, str) else cconv
        self.impl = impl
        self.attrs = tuple(attrs)
        self._trampoline = None

    def call(self, args: Sequence) -> list:
        out = self.impl(*args)
        n = len(self.cconv.results)
        if n == 0:
            return []
        if n == 1:
            return [out]
        out = list(out)
        if len(out) != n:
            raise Error(f"{self.name} returned {len(out)} results, its convention {self.cconv.text} says {n}")
        return out

    def native_entry(self) -> tuple[int, int]:
        if self._trampoline is None:
            cconv = self.cconv
            unpack = abi.args_unpacker(cconv)

            def trampoline(ctx, args, results, trap):
                try:
                    abi.pack_results(cconv, self.call(unpack(args)), results)
                    return 0
                except BaseException as e:  # noqa: BLE001 - carried to the Python caller
                    return traps.park_exception(trap, e)

            self._trampoline = abi.NATIVE_FN(trampoline)
        return ctypes.cast(self._trampoline, ctypes.c_void_p).value, 0


class NativeFunction(Function):
    """A function implemented in native code with the uniform ABI: `address(ctx, args,
    results, trap)`. Python calls pack plain values; native callers (compiled code, the
    interpreter's import adapters) call `address` directly."""

    def __init__(self, name: str, cconv: str | CallingConvention, address: int, ctx: int = 0, attrs=()):
        self.name = name
        self.cconv = parse_cconv(cconv, name) if isinstance(cconv, str) else cconv
        self.address = address
        self.ctx = ctx
        self.attrs = tuple(attrs)
        self._fn = abi.NATIVE_FN(address)

    def call(self, args: Sequence) -> list:
        abi.check_arity(self.name, self.cconv, args)
        slots = abi.pack_args(self.cconv, args, self.name)
        results = abi.result_array(self.cconv)
        trap = TrapT()
        if self._fn(self.ctx, slots, results, ctypes.addressof(trap)):
            raise traps.take_exception(trap, traps.no_module_frame)
        return abi.unpack_results(self.cconv, results)

    def native_entry(self) -> tuple[int, int]:
        return self.address, self.ctx


def export(name: str, cconv: str):
    """Declares a NativeModule method as the export `name` with calling convention `cconv`."""
    def mark(method):
        method.__vm_export__ = (name, cconv)
        return method
    return mark


class ModuleInstance:
    """A module as instantiated in one context."""

    name: str
    version: int = 0

    def lookup(self, name: str) -> Function | None:
        raise NotImplementedError

    def export_names(self) -> list[str]:
        raise NotImplementedError

    def initialize(self) -> None:
        """Runs module initialization once every module of the context exists."""

    def close(self) -> None:
        """Releases what the instance holds (module state, globals)."""


class NativeModule(ModuleInstance):
    """Base of modules implemented in Python; instantiate one per context.

    Methods marked with @export become the module's functions, and so do the entries of
    `native_functions()` (natively implemented ones). `ref_types` lists the classes of the
    ref types the module defines, registered so modules may name them.
    """

    name: ClassVar[str] = ""
    version: ClassVar[int] = 0
    ref_types: ClassVar[tuple] = ()

    def __init__(self):
        self._functions: dict[str, Function] = {}
        for cls in reversed(type(self).__mro__):
            for attr, value in vars(cls).items():
                spec = getattr(value, "__vm_export__", None)
                if spec:
                    fname, cconv = spec
                    self._functions[fname] = PythonFunction(f"{self.name}.{fname}", cconv, getattr(self, attr))
        for fname, (cconv, address) in self.native_functions().items():
            self._functions[fname] = NativeFunction(f"{self.name}.{fname}", cconv, address)

    def native_functions(self) -> dict[str, tuple[str, int]]:
        """Functions implemented natively: name -> (calling convention, address)."""
        return {}

    @classmethod
    def register_types(cls) -> None:
        for t in cls.ref_types:
            register_type(t.type_name)

    def lookup(self, name: str) -> Function | None:
        return self._functions.get(name)

    def export_names(self) -> list[str]:
        return list(self._functions)
