"""`jitvm.Module` and `jitvm.Function`: a loaded module's exports as Python callables.

Functions with `iree.abi.declaration` reflection marshal by it (numpy arrays and scalars in,
numpy out); functions without it (ONNX imports carry none) marshal by their VM signature:
arrays and numpy scalars become buffer views, Python lists VM lists, buffer-view results
come back as arrays. Coarse-fences (async-external) functions are waited for, unless the
caller passes its own wait and signal fences after the inputs.
"""

from __future__ import annotations

from ..errors import ArgumentError, NotFoundError
from ..runtime.modules.hal.fence import HalFence, wait_all
from . import marshal
from .declaration import Declaration, parse_declaration
from .entry import native_entry
from .plan import DECLINED, CallPlan


class Module:
    """A loaded module: exported functions are attributes (and items), listed by `exports`."""

    def __init__(self, context, instance, natives: dict, siblings: dict | None = None):
        self._context = context
        self._instance = instance
        self._natives = natives
        self._siblings = siblings if siblings is not None else {}
        self._functions: dict[str, Function] = {}

    @property
    def name(self) -> str:
        return self._instance.name

    @property
    def exports(self) -> list[str]:
        return [n for n in self._instance.export_names() if not n.startswith("__")]

    @property
    def backend(self) -> str:
        """The name of the backend actually running the module ("jit" or "interp")."""
        return getattr(self._instance.loaded.backend, "name", type(self._instance.loaded.backend).__name__)

    @property
    def hal(self):
        return self._natives.get("hal")

    @property
    def modules(self) -> dict[str, "Module"]:
        """Every module of the context loaded with this one, by name (this one included)."""
        return dict(self._siblings) or {self.name: self}

    def function(self, name: str) -> "Function":
        fn = self._functions.get(name)
        if fn is None:
            vm_fn = self._instance.lookup(name)
            if vm_fn is None:
                raise NotFoundError(f"module '{self.name}' has no exported function '{name}' "
                                    f"(exports: {', '.join(self.exports) or 'none'})")
            fn = self._functions[name] = Function(self, vm_fn)
        return fn

    def __getattr__(self, name: str) -> "Function":
        if name.startswith("_"):
            raise AttributeError(name)
        fn = self.function(name)
        self.__dict__[name] = fn  # `m.name` from now on without Python (no attribute of the class has it)
        return fn

    def __getitem__(self, name: str) -> "Function":
        return self.function(name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.exports))

    def __repr__(self):
        return f"<jitvm.Module '{self.name}' exports={self.exports}>"

    def close(self) -> None:
        """Runs `__deinit` and releases module state; the module is unusable afterwards."""
        self._context.close()


class Function:
    """A callable export, marshalled by its reflection or else by its VM signature."""

    native_entry = True  # whether a plan's call may become a native entry (False: CallPlan.direct; A/B tests)

    def __init__(self, module: Module, vm_function):
        self.module = module
        self.vm_function = vm_function
        self.name = vm_function.name
        self.cconv = vm_function.cconv
        self.declaration: Declaration | None = parse_declaration(vm_function.attr("iree.abi.declaration"))
        # coarse-fences functions (async-external) take a wait and a signal fence after their inputs
        self.fenced = vm_function.attr("iree.abi.model") == "coarse-fences" and len(self.cconv.args) >= 2
        expected = len(self.cconv.args) - (2 if self.fenced else 0)
        if self.declaration is not None and len(self.declaration.inputs) != expected:
            self.declaration = None  # a declaration that does not describe the VM signature is ignored
        self._plan: CallPlan | None = None  # the native call (jitvm.api.plan), built on the first call
        # The plan's call (CallPlan.direct) once built; before, the call that builds it; None: no
        # plan, or the native entry calls the plan (then __call__ is what the entry declines).
        self._direct = self._first_call if self.declaration is not None else None

    def _first_call(self, args):
        """Builds the plan (None when the native path cannot take this function), then calls.
        With a native entry (jitvm.api.entry), the function becomes an instance of a class of
        its own whose `__call__` is that builtin: `f(x)` then runs no Python at all."""
        self._plan = CallPlan.build(self)
        self._direct = self._plan.direct if self._plan is not None else None
        builtin = native_entry(self._plan, Function.__call__.__get__(self), self.name) \
            if self._plan is not None and self.native_entry else None
        if builtin is None:
            return self._direct(args) if self._direct is not None else DECLINED
        # What the builtin declines goes to Function.__call__, marshalled in Python at once.
        self._direct = None
        self.__class__ = type(type(self).__name__, (type(self),), {"__slots__": (), "__call__": builtin,
                                                                 "__module__": __name__})
        return builtin(*args)

    @property
    def reflected(self) -> bool:
        return self.declaration is not None

    @property
    def inputs(self) -> int:
        """How many values a caller passes (without the fences of a coarse-fences function)."""
        return len(self.cconv.args) - (2 if self.fenced else 0)

    @property
    def signature(self) -> str:
        if self.declaration is not None:
            return self.declaration.text
        return f"{self.name} {self.cconv.text}"

    def __call__(self, *args):
        direct = self._direct
        if direct is not None:
            out = direct(args)
            if out is not DECLINED:
                return out
        fences = None
        if self.fenced and len(args) == self.inputs + 2:
            args, fences = args[:-2], [marshal.fence_argument(f, f"{self.name} {what} fence")
                                       for f, what in zip(args[-2:], ("wait", "signal"))]
        if len(args) != self.inputs:
            described = ", ".join(map(str, self.declaration.inputs)) if self.declaration else self.cconv.text
            raise ArgumentError(f"{self.name} takes {self.inputs} argument{'s' if self.inputs != 1 else ''} "
                                f"({described}), got {len(args)}")
        vm_args = self.vm_arguments(args)
        if not self.fenced:
            return _unwrap([marshal.result_value(r) for r in self.vm_function.call(vm_args)])
        if fences is not None:  # the caller's fences: it waits on its signal fence itself
            return _unwrap([marshal.result_value(r) for r in self.vm_function.call(vm_args + fences)])
        signal = HalFence.create()
        results = self.vm_function.call(vm_args + [None, signal])
        wait_all([signal], f"{self.name} (coarse-fences)")
        return _unwrap([marshal.result_value(r) for r in results])

    def vm_arguments(self, args) -> list:
        """The caller's values as VM values: by the declaration, else by the VM signature."""
        hal = self.module.hal
        if self.declaration is None:
            codes = [c if isinstance(c, str) else "span" for c in self.cconv.args]
            return [marshal.signature_argument(hal, value, code, f"argument {i} of {self.name}")
                    for i, (value, code) in enumerate(zip(args, codes))]
        return [self._argument(hal, i, value, d) for i, (value, d) in enumerate(zip(args, self.declaration.inputs))]

    def _argument(self, hal, index: int, value, decl):
        label = f"{self.name} argument {index} ({decl})"
        if decl.is_tensor:
            if hal is None:
                raise ArgumentError(f"{label}: the module has no hal module to hold arrays")
            return marshal.array_argument(hal, value, decl, label)
        if decl.is_scalar:
            return marshal.scalar_argument(value, decl, label)
        return marshal.signature_argument(hal, value, "r", label)  # lists, fences, buffer views ...

    def __repr__(self):
        return f"<jitvm.Function {self.signature}>"


def _unwrap(results: list):
    if not results:
        return None
    if len(results) == 1:
        return results[0]
    return tuple(results)
