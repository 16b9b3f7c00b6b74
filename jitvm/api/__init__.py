"""`jitvm.load`: open a .vmfb and call its functions with numpy arrays, like iree.runtime.

Loading is load_module -> verify_module -> LoadedModule(backend) -> a Context holding the
native modules the program needs (hal, plus check/vmvx when imported) and the module
itself, whose `__init` runs right away. Functions with `iree.abi.declaration` reflection
take and return numpy arrays and Python scalars (one result unwrapped, several as a tuple,
none as None); functions without it take and return raw VM values.
"""

from __future__ import annotations

from ..errors import ArgumentError
from ..fallback_interp import InterpreterBackend
from ..frontend.module import load_module
from ..lower.backend import JitBackend
from ..runtime.modules import CheckModule, HalModule, VmvxModule, register_hal_types
from ..runtime.modules.hal.executable import Prefetch
from ..runtime.modules.hal.formats import FormatPolicy
from ..runtime.modules.hal.fence import HalFence, Semaphore, wait_all
from ..runtime.vm import abi, heap
from ..runtime.vm.bytecode import LoadedModule
from ..runtime.vm.context import Context
from ..verify import verify_module
from ..verify.embedded import embedded_modules
from ..runtime.native import cache
from . import marshal
from .compiled import open_bundle
from .declaration import Declaration, parse_declaration

BACKENDS = ("jit", "interp")
_backends: dict = {}


def get_backend(name: str):
    """The shared backend object for `name` ("jit" or "interp"), or `name` itself when it
    is already a backend object."""
    if not isinstance(name, str):
        return name
    if name not in BACKENDS:
        raise ArgumentError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    if name == "jit":
        return _jit_backend()
    if name not in _backends:
        _backends[name] = InterpreterBackend()
    return _backends[name]


def _jit_backend(threads: int | None = None):
    """The shared JIT backend; one per explicit thread count (None: JITVM_THREADS or all cores)."""
    key = "jit" if threads is None else ("jit", threads)
    if key not in _backends:
        _backends[key] = JitBackend(threads=threads)
    return _backends[key]


def _check_threads(threads) -> int | None:
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ArgumentError(f"threads must be a positive integer, got {threads!r}")
    return threads


class EmbeddedLoader:
    """How the HAL loads an executable's bytes (a VMVX module): read, verified and prepared
    with the host module's backend, like the host module itself."""

    def __init__(self, backend):
        self.backend = backend

    def __call__(self, data: bytes, origin: str) -> LoadedModule:
        return LoadedModule(verify_module(load_module(data, origin=origin)), self.backend)


def _native_modules(loader: EmbeddedLoader, trace, policy: FormatPolicy | None = None):
    return {"hal": lambda: HalModule(loader, trace_sink=trace, policy=policy), "check": CheckModule,
            "vmvx": VmvxModule}


def load(source, backend: str = "jit", *, threads: int | None = None, trace=None,
         verify_features: int | None = None, compiled=None) -> "Module":
    """Loads a module from a path or bytes and instantiates it in a fresh context.

    `threads` is how many threads run a dispatch's workgroups under the JIT (default:
    JITVM_THREADS, else every core); results are identical for any count. The reference
    interpreter runs workgroups one after another whatever it says.
    `trace(key, arrays)` receives the tensors of `hal.buffer_view.trace` calls (modules
    compiled with --iree-flow-trace-dispatch-tensors); without it those calls do nothing.
    `compiled` names a bundle `jitvm compile` wrote for this module: its code is used instead
    of compiling, after checking it was made for these module bytes and this host.
    """
    threads = _check_threads(threads)
    module = load_module(source)
    if compiled is not None:  # before anything compiles: the runtime's own code is in the bundle too
        cache.use(open_bundle(compiled, module))
    heap.tune()  # freed call buffers stay in the heap for the next call
    be = get_backend(backend)
    if threads is not None and getattr(be, "name", None) == "jit":
        be = _jit_backend(threads)
    register_hal_types()
    verified = verify_module(module, verify_features)
    policy = FormatPolicy.for_program(module)  # which executable variants the program gets
    loader = EmbeddedLoader(be)
    prefetch = _prefetch(module, loader) if policy.picks_vmvx() else None
    loaded = LoadedModule(verified, be)
    wanted = [d.name for d in module.dependencies] + [i.module_name for i in module.imports]
    factories = _native_modules(loader, _trace_adapter(trace), policy)
    context = Context()
    natives = {}
    for name in dict.fromkeys(wanted):
        if name in factories:
            natives[name] = context.add(factories[name]())
    instance = context.add(loaded)
    if prefetch is not None:
        prefetch.join()  # the initializer created the executables (or they are loaded for later)
    return Module(context, instance, natives)


def _prefetch(module, loader: EmbeddedLoader):
    """The JIT compiles the embedded executables while it compiles the host module."""
    if getattr(loader.backend, "name", None) != "jit":
        return None
    return Prefetch([bytes(data) for _ordinal, data in embedded_modules(module)], loader)


def _trace_adapter(trace):
    if trace is None:
        return None
    return lambda key, views: trace(key, [v.to_numpy() for v in views])


class Module:
    """A loaded module: exported functions are attributes (and items), listed by `exports`."""

    def __init__(self, context, instance, natives: dict):
        self._context = context
        self._instance = instance
        self._natives = natives
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

    def function(self, name: str) -> "Function":
        fn = self._functions.get(name)
        if fn is None:
            vm_fn = self._instance.lookup(name)
            if vm_fn is None:
                raise AttributeError(f"module '{self.name}' has no exported function '{name}' "
                                     f"(exports: {', '.join(self.exports) or 'none'})")
            fn = self._functions[name] = Function(self, vm_fn)
        return fn

    def __getattr__(self, name: str) -> "Function":
        if name.startswith("_"):
            raise AttributeError(name)
        return self.function(name)

    def __getitem__(self, name: str) -> "Function":
        try:
            return self.function(name)
        except AttributeError as e:
            raise KeyError(str(e)) from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.exports))

    def __repr__(self):
        return f"<jitvm.Module '{self.name}' exports={self.exports}>"

    def close(self) -> None:
        """Runs `__deinit` and releases module state; the module is unusable afterwards."""
        self._context.close()


class Function:
    """A callable export. Reflected functions marshal numpy; others take raw VM values."""

    def __init__(self, module: Module, vm_function):
        self.module = module
        self.vm_function = vm_function
        self.name = vm_function.name
        self.cconv = vm_function.cconv
        self.declaration: Declaration | None = parse_declaration(vm_function.attr("iree.abi.declaration"))
        # coarse-fences functions (async-external) take a wait and a signal fence after their inputs
        self.fenced = vm_function.attr("iree.abi.model") == "coarse-fences"
        expected = len(self.cconv.args) - (2 if self.fenced else 0)
        if self.declaration is not None and len(self.declaration.inputs) != expected:
            self.declaration = None  # a declaration that does not describe the VM signature is ignored
            self.fenced = False

    @property
    def reflected(self) -> bool:
        return self.declaration is not None

    @property
    def signature(self) -> str:
        if self.declaration is not None:
            return self.declaration.text
        return f"{self.name} {self.cconv.text}"

    def __call__(self, *args):
        if self.declaration is None:
            abi.check_arity(self.name, self.cconv, args)
            return _unwrap(self.vm_function.call(list(args)))
        decl = self.declaration
        if len(args) != len(decl.inputs):
            raise ArgumentError(f"{self.name} takes {len(decl.inputs)} argument"
                                f"{'s' if len(decl.inputs) != 1 else ''} "
                                f"({', '.join(map(str, decl.inputs))}), got {len(args)}")
        hal = self.module.hal
        vm_args = [self._argument(hal, i, value, d) for i, (value, d) in enumerate(zip(args, decl.inputs))]
        if self.fenced:
            return self._call_fenced(hal, vm_args)
        results = self.vm_function.call(vm_args)
        return _unwrap([marshal.result_value(r) for r in results])

    def _call_fenced(self, hal, vm_args):
        """Runs a coarse-fences function synchronously: nothing to wait on, then await its signal."""
        signal = HalFence.new([(Semaphore(0), 1)])
        results = self.vm_function.call(vm_args + [None, signal])
        wait_all([signal.payload], f"{self.name} (coarse-fences)")
        return _unwrap([marshal.result_value(r) for r in results])

    def _argument(self, hal, index: int, value, decl):
        label = f"{self.name} argument {index} ({decl})"
        if decl.is_tensor:
            if hal is None:
                raise ArgumentError(f"{label}: the module has no hal module to hold arrays")
            return marshal.array_argument(hal, value, decl, label)
        if decl.is_scalar:
            return marshal.scalar_argument(value, decl, label)
        return value  # refs and other types pass through as VM values

    def __repr__(self):
        return f"<jitvm.Function {self.signature}>"


def _unwrap(results: list):
    if not results:
        return None
    if len(results) == 1:
        return results[0]
    return tuple(results)
