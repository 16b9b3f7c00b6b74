"""The VM objects of iree.runtime: instances, modules, functions, contexts, variant lists.

A VmModule is either a bytecode module (read and verified once; prepared for the
instance's backend when first added to a context) or a native module made per context
(hal, io_parameters, a PyModuleInterface's). A VmContext is a jitvm Context: modules
resolve their imports by name against the modules added before them, with signature
checks and optional imports as IREE resolves them.
"""

from __future__ import annotations

import enum
import itertools
import os
import weakref

from ...errors import STATUS_CODES, ArgumentError, NotFoundError, Trap
from ...frontend.cconv import Span, parse_cconv
from ...frontend.module import load_module
from ...runtime.modules import HalModule, register_hal_types
from ...runtime.modules.hal.executable import Prefetch
from ...runtime.vm.bytecode import LoadedModule
from ...runtime.vm.context import Context
from ...runtime.vm.interface import NativeModule, PythonFunction
from ...runtime.native import layout
from ...runtime.vm.objects import Ref, VmList
from ...runtime.vm.objects import VmBuffer as _VmBuffer
from ...verify import verify_module
from ...verify.embedded import embedded_modules
from .. import get_backend, lazy_jit
from .hal import HalBufferView
from .refs import RefBacked, VmRef, api_class, unwrap, wrap


class Linkage(enum.IntEnum):
    INTERNAL = 0
    IMPORT = 1
    EXPORT = 2
    IMPORT_OPTIONAL = 3
    EXPORT_OPTIONAL = 4


class VmInstance:
    """Owns nothing but the backend modules are prepared with (JITVM_BACKEND: jit or interp;
    the JIT compiles each function when first called, in JITVM_TIER's tier: lower.lazy)."""

    def __init__(self):
        register_hal_types()
        name = os.environ.get("JITVM_BACKEND", "jit")
        self.backend = lazy_jit() if name == "jit" else get_backend(name)


@api_class("vm.buffer")
class VmBuffer(RefBacked):
    def __init__(self, length: int, alignment: int = 0, mutable: bool = True):
        access = layout.BUFFER_ORIGIN_HOST | (layout.BUFFER_MUTABLE if mutable else 0)
        super().__init__(_VmBuffer.allocate(int(length), alignment or 16, access))

    def __len__(self) -> int:
        return self._ref.length

    def tobytes(self) -> bytes:
        return self._ref.tobytes()


def _format_variant(value) -> str:
    if isinstance(value, float):
        return f"{value:f}"
    if value is None:
        return "None"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, VmList):
        return "List[" + ", ".join(_format_variant(v) for v in value) + "]"
    payload = value.payload
    shape = getattr(payload, "shape", None)
    if shape is not None and value.type_name == "hal.buffer_view":
        return f"HalBufferView({'x'.join(map(str, shape))}:0x{payload.element_type:08x})"
    return f"<{value.type_name}>"


@api_class("vm.list")
class VmVariantList(RefBacked):
    """A list of variants (values and refs)."""

    def __init__(self, capacity: int = 0):
        super().__init__(VmList.allocate(None, int(capacity)))

    @property
    def _list(self) -> VmList:
        return self._ref

    def __len__(self) -> int:
        return len(self._list)

    @property
    def size(self) -> int:
        return len(self._list)

    def push_int(self, value: int) -> None:
        self._list.append(int(value), "i64")

    def push_float(self, value: float) -> None:
        self._list.append(float(value), "f64")

    def push_ref(self, ref) -> None:
        self._list.append(unwrap(ref))

    def push_list(self, value: "VmVariantList") -> None:
        self._list.append(value._ref)

    def _get(self, index: int):
        try:
            return self._list.get(index)
        except IndexError as e:
            raise IndexError(str(e)) from None

    def get_variant(self, index: int):
        value = self._get(index)
        return value if value is None or isinstance(value, (int, float)) else wrap(value)

    def get_as_ref(self, index: int) -> VmRef:
        value = self._get(index)
        if value is None or isinstance(value, (int, float)):
            raise ArgumentError(f"list element {index} is not a ref")
        return VmRef(value)

    def get_as_object(self, index: int, clazz=None):
        ref = self.get_as_ref(index)
        return wrap(ref.__jitvm_ref__, as_object=True) if clazz is None else ref.deref(clazz)

    def get_as_list(self, index: int) -> "VmVariantList":
        return self.get_as_ref(index).deref(VmVariantList)

    def __repr__(self):
        return f"<VmVariantList({len(self)}): [{', '.join(_format_variant(v) for v in self._list)}]>"


class VmFunction:
    """A function of a module (not bound to a context: VmContext.invoke runs it in one)."""

    def __init__(self, module: "VmModule", name: str, ordinal: int, cconv: str, attrs, linkage=Linkage.EXPORT):
        self._module = module
        self.name = name
        self.ordinal = ordinal
        self.cconv = cconv
        self.reflection = dict(attrs)
        self.linkage = linkage

    @property
    def module_name(self) -> str:
        return self._module.name

    def __repr__(self):
        return f"<VmFunction {self.name}({self.cconv}), reflection = {self.reflection}>"


class VmModule:
    """A module that contexts instantiate: bytecode, or native (made per context)."""

    def __init__(self, name: str, version: int, exports, bytecode=None, factory=None, keepalive=None,
                 destroy_callback=None):
        self._name = name
        self._version = version
        self._exports = list(exports)  # (name, ordinal, cconv, attrs)
        self._bytecode = bytecode  # a verified BytecodeModule
        self._factory = factory  # context -> ModuleInstance, for native modules
        self._loaded: dict[int, LoadedModule] = {}
        self._keepalive = keepalive
        if destroy_callback is not None:
            weakref.finalize(self, destroy_callback)

    # --- construction (IREE's static constructors) ---------------------------------------------

    @staticmethod
    def _from_source(instance: VmInstance, source, destroy_callback=None, keepalive=None) -> "VmModule":
        verified = verify_module(load_module(source))
        m = verified.module
        exports = [(e.name, e.internal_ordinal, m.signatures[e.internal_ordinal].cconv.text,
                    m.signatures[e.internal_ordinal].attrs) for e in m.exports]
        return VmModule(m.name, m.version, exports, bytecode=verified, keepalive=keepalive,
                        destroy_callback=destroy_callback)

    @staticmethod
    def mmap(instance: VmInstance, filepath, destroy_callback=None) -> "VmModule":
        """The module in a file, memory-mapped (rodata stays a view of the file)."""
        return VmModule._from_source(instance, os.fspath(filepath), destroy_callback)

    @staticmethod
    def copy_buffer(instance: VmInstance, buffer) -> "VmModule":
        return VmModule._from_source(instance, bytes(memoryview(buffer).cast("B")))

    @staticmethod
    def from_buffer(instance: VmInstance, buffer, warn_if_copy: bool = True) -> "VmModule":
        """The module in `buffer`, used in place (no copy), kept alive by the module."""
        return VmModule._from_source(instance, memoryview(buffer).cast("B"), keepalive=buffer)

    from_flatbuffer = from_buffer

    @staticmethod
    def wrap_buffer(instance: VmInstance, buffer, destroy_callback=None, close_buffer: bool = False) -> "VmModule":
        return VmModule._from_source(instance, memoryview(buffer).cast("B"), destroy_callback, keepalive=buffer)

    @staticmethod
    def resolve_module_dependency(instance: VmInstance, name: str, minimum_version: int) -> "VmModule":
        raise NotFoundError(f"no built-in module named '{name}' (create it: create_hal_module, "
                            f"create_io_parameters_module, PyModuleInterface)")

    @staticmethod
    def native(name: str, version: int, factory, exports) -> "VmModule":
        """A native module: `factory(context)` makes its instance in each context."""
        return VmModule(name, version, exports, factory=factory)

    # --- queries ---------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._name

    @property
    def version(self) -> int:
        return self._version

    @property
    def function_names(self) -> list[str]:
        return [e[0] for e in self._exports]

    @property
    def stashed_flatbuffer_blob(self):
        return None

    def lookup_function(self, name: str, linkage=Linkage.EXPORT) -> VmFunction | None:
        for fname, ordinal, cconv, attrs in self._exports:
            if fname == name:
                return VmFunction(self, fname, ordinal, cconv, attrs)
        return None

    def __repr__(self):
        return f"<VmModule {self.name} : [{', '.join(self.function_names)}]>"

    # --- instantiation ----------------------------------------------------------------------------

    def _instantiate(self, context: Context, backend):
        if self._factory is not None:
            return context.add(self._factory(context))
        loaded = self._loaded.get(id(backend))
        prefetch = None
        if loaded is None:
            hal = context.module("hal")
            loader = getattr(getattr(hal, "device", None), "loader", None)
            if loader is not None and getattr(backend, "name", None) == "jit":
                prefetch = Prefetch([bytes(d) for _o, d in embedded_modules(self._bytecode.module)], loader)
            loaded = self._loaded[id(backend)] = LoadedModule(self._bytecode, backend)
        instance = context.add(loaded)
        if prefetch is not None:
            prefetch.join()
        return instance


_context_ids = itertools.count(1)


def _vm_value(code, value, what: str):
    if isinstance(code, Span):
        raise ArgumentError(f"{what}: variadic arguments cannot be passed through a variant list")
    if code == "r":
        if value is None or not isinstance(value, (int, float)):
            return value
        raise Trap(STATUS_CODES["FAILED_PRECONDITION"], f"{what}: expected a ref, got {type(value).__name__} "
                                                        f"(iree.runtime: FAILED_PRECONDITION, a RuntimeError)")
    if code in "iI" and not isinstance(value, int):
        raise ArgumentError(f"{what}: expected an integer, got {type(value).__name__}")
    if not isinstance(value, (int, float)):
        raise ArgumentError(f"{what}: expected a {'float' if code in 'fF' else 'value'}, got a ref")
    return value


_RESULT_TYPES = {"i": "i32", "I": "i64", "f": "f32", "F": "f64"}


class VmContext:
    """Module instances in one context; `invoke` calls a function of one of them."""

    def __init__(self, instance: VmInstance, modules=None):
        self._instance = instance
        self._context = Context()
        self._modules: dict[int, object] = {}  # id(VmModule) -> its ModuleInstance here
        self._vm_modules: list[VmModule] = []
        self.context_id = next(_context_ids)
        if modules is not None:
            self.register_modules(modules)

    def register_modules(self, modules) -> None:
        for m in modules:
            if not isinstance(m, VmModule):
                raise ArgumentError(f"register_modules takes VmModules, got {type(m).__name__}")
            self._modules[id(m)] = m._instantiate(self._context, self._instance.backend)
            self._vm_modules.append(m)

    def _instance_of(self, function: VmFunction):
        inst = self._modules.get(id(function._module))
        if inst is None:
            inst = self._context.module(function.module_name)
        if inst is None:
            raise NotFoundError(f"module '{function.module_name}' is not in this context")
        fn = inst.lookup(function.name)
        if fn is None:
            raise NotFoundError(f"module '{function.module_name}' has no function '{function.name}'")
        return fn

    def invoke(self, function: VmFunction, inputs: VmVariantList, outputs: VmVariantList) -> None:
        """Calls `function` with the values of `inputs`, appending its results to `outputs`."""
        fn = self._instance_of(function)
        cconv = fn.cconv
        values = [inputs._list.get(i) for i in range(len(inputs))]
        if len(values) != len(cconv.args):
            raise ArgumentError(f"input list and function mismatch; expected {len(cconv.args)} arguments but "
                                f"passed {len(values)}")
        args = [_vm_value(code, v, f"argument {i} of {fn.name}") for i, (code, v) in enumerate(zip(cconv.args, values))]
        results = fn.call(args)
        for code, value in zip(cconv.results, results):
            if code == "r":
                outputs._list.append(value)
            else:
                outputs._list.append(value, _RESULT_TYPES[code])

    def close(self) -> None:
        self._context.close()


def _normalize_cconv(cconv: str) -> str:
    return cconv if "_" in cconv else cconv + "_v"


class _PyModule(NativeModule):
    """One context's instance of a PyModuleInterface: its exports call the user's methods
    on the state object the constructor made for this context."""

    def __init__(self, iface: "PyModuleInterface"):
        super().__init__()
        self.name = iface.name
        self.state = iface._ctor(iface)
        for fname, cconv, fn in iface._exports:
            self._functions[fname] = PythonFunction(f"{iface.name}.{fname}", cconv, self._bind(fn, cconv))
        iface._live += 1
        self._iface = iface

    def _bind(self, fn, cconv: str):
        parsed = parse_cconv(cconv)

        def call(*args):
            py_args = [wrap(a) if code == "r" else a for code, a in zip(parsed.args, args)]
            out = fn(self.state, *py_args)
            if len(parsed.results) == 1:
                return unwrap(out) if parsed.results[0] == "r" else out
            if not parsed.results:
                return None
            return [unwrap(v) if code == "r" else v for code, v in zip(parsed.results, out)]
        return call

    def close(self) -> None:
        self._iface._live -= 1


class PyModuleInterface:
    """A native module written in Python: `export` its functions, `create` the VmModule;
    each context it joins calls `ctor(iface)` for a state object its exports receive."""

    def __init__(self, module_name: str, ctor):
        self.name = module_name
        self._ctor = ctor
        self._exports: list[tuple[str, str, object]] = []
        self._module_ref = None
        self._created = False
        self._live = 0

    def export(self, name: str, cconv: str, callable) -> None:
        if self._created:
            raise ArgumentError("cannot export functions after the module was created")
        cconv = _normalize_cconv(cconv)
        parse_cconv(cconv, f"export {name}")
        self._exports.append((name, cconv, callable))

    def create(self) -> VmModule:
        if self._created:
            raise ArgumentError("PyModuleInterface.create() may only be called once")
        self._created = True
        module = VmModule.native(self.name, 0, lambda context: _PyModule(self),
                                 [(n, i, c, ()) for i, (n, c, _f) in enumerate(self._exports)])
        self._module_ref = weakref.ref(module)
        return module

    @property
    def initialized(self) -> bool:
        return self._created

    @property
    def destroyed(self) -> bool:
        return self._created and (self._module_ref() is None) and self._live == 0

    def __repr__(self):
        return f"<PyModuleInterface '{self.name}' initialized={self.initialized}>"


def create_hal_module(instance: VmInstance, device=None, devices=None, debug_sink=None) -> VmModule:
    """The hal module over `device` (or `devices`, for programs that use several)."""
    chosen = list(devices) if devices else [device] if device is not None else None
    if not chosen:
        raise ArgumentError("create_hal_module needs a device (or devices)")
    refs = [d.__jitvm_ref__ for d in chosen]
    loader = refs[0].payload.loader
    sink = None if debug_sink is None else getattr(debug_sink, "buffer_view_trace_callback", None)

    def factory(context):
        return HalModule(loader, trace_sink=_trace(sink), devices=[_own(r) for r in refs])
    prototype = HalModule(loader, devices=[_own(r) for r in refs])
    exports = [(n, i, f.cconv.text, ()) for i, (n, f) in enumerate(sorted(prototype._functions.items()))]
    return VmModule.native("hal", prototype.version, factory, exports)


def _own(ref: Ref) -> Ref:
    return Ref.wrap(ref.addr)


def _trace(callback):
    if callback is None:
        return None
    return lambda key, views: callback(key, [HalBufferView._wrap(v.ref()) for v in views])
