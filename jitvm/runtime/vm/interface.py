"""Functions and modules as a context sees them, and native modules written in Python.

A `Function` can be called two ways: from Python with plain values (`call`), and from
native code through the uniform ABI of runtime.vm.abi (`native_entry`). Native modules are
Python classes whose methods are declared with IREE calling-convention strings.
"""

from __future__ import annotations

import ctypes
from typing import Callable, ClassVar, Sequence

from ...errors import Error
from ...frontend.cconv import CallingConvention, parse_cconv
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

    def __init__(self, name: str, cconv: str | CallingConvention, impl: Callable, attrs=(),
                 native_fast_path: Callable[[], int] | None = None):
        self.name = name
        self.cconv = parse_cconv(cconv, name) if isinstance(cconv, str) else cconv
        self.impl = impl
        self.attrs = tuple(attrs)
        # Returns the address of a native function with the same convention that handles the
        # ordinary case itself and calls its ctx (this function's trampoline) for the rest.
        self.native_fast_path = native_fast_path
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
        python = ctypes.cast(self._trampoline, ctypes.c_void_p).value
        fast = self.native_fast_path() if self.native_fast_path is not None else 0
        return (fast, python) if fast else (python, 0)


def export(name: str, cconv: str, native_fast_path: Callable[[], int] | None = None):
    """Declares a NativeModule method as the export `name` with calling convention `cconv`
    (and the native fast path compiled code calls instead: `PythonFunction`)."""
    def mark(method):
        method.__vm_export__ = (name, cconv, native_fast_path)
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

    Methods marked with @export become the module's functions. `ref_types` lists the
    NativeObject classes the module defines, registered so modules may name them.
    """

    name: ClassVar[str] = ""
    version: ClassVar[int] = 0
    ref_types: ClassVar[tuple] = ()

    def __init__(self):
        self._functions: dict[str, PythonFunction] = {}
        for cls in reversed(type(self).__mro__):
            for attr, value in vars(cls).items():
                spec = getattr(value, "__vm_export__", None)
                if spec:
                    fname, cconv, fast = spec
                    self._functions[fname] = PythonFunction(f"{self.name}.{fname}", cconv,
                                                            getattr(self, attr), native_fast_path=fast)

    @classmethod
    def register_types(cls) -> None:
        for t in cls.ref_types:
            register_type(t.type_name)

    def lookup(self, name: str) -> Function | None:
        return self._functions.get(name)

    def export_names(self) -> list[str]:
        return list(self._functions)
