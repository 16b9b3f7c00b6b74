"""`jitvm.load`: open a .vmfb and call its functions with numpy arrays, like iree.runtime.

Loading is load_module -> verify_module -> LoadedModule(backend) -> a Context holding the
native modules the program needs (hal, plus check/vmvx/io_parameters when imported) and the
modules themselves, whose `__init` runs right away. Functions take and return numpy arrays
and Python scalars (one result unwrapped, several as a tuple, none as None), marshalled by
their `iree.abi.declaration` reflection or, without it, by their VM signature
(jitvm.api.module). `jitvm.runtime` (jitvm.api.dropin) is the iree.runtime-compatible API.
"""

from __future__ import annotations

import os

from ..errors import ArgumentError
from ..fallback_interp import InterpreterBackend
from ..frontend.module import load_module
from ..lower import handoff
from ..lower.backend import JitBackend
from ..lower.llvm import compile_pool
from ..runtime.exec.dispatch import runner_for
from ..runtime.modules import CheckModule, HalModule, VmvxModule, register_hal_types
from ..runtime.modules.hal.device import HalDevice
from ..runtime.modules.hal.executable import Prefetch
from ..runtime.modules.hal.formats import FormatPolicy
from ..runtime.vm import heap
from ..runtime.vm.bytecode import LoadedModule
from ..runtime.vm.context import Context
from ..runtime.vm.interface import ModuleInstance
from ..verify import verify_module
from ..verify.embedded import embedded_modules
from ..runtime.native import cache, memory
from .compiled import open_bundle
from .module import Function, Module
from .parameters import providers as parameter_providers
from .paths import resolve_path
from . import tier_worker

handoff.use_worker(tier_worker.__name__)  # detached tier-ups run in this layer's worker

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


def _jit_backend(threads: int | None = None, tier: str | None = None):
    """The shared JIT backend; one per explicit thread count (None: JITVM_THREADS or all cores)
    and tier (None: everything compiled at load with the full pipeline; see lower.lazy)."""
    key = "jit" if threads is None and tier is None else ("jit", threads, tier)
    if key not in _backends:
        _backends[key] = JitBackend(threads=threads, tier=tier)
    return _backends[key]


TIERS = ("auto", "baseline", "full")


def _check_tier(tier) -> str:
    """`tier=` or, without it, JITVM_TIER, else "auto"."""
    tier = tier if tier is not None else os.environ.get("JITVM_TIER") or "auto"
    if tier not in TIERS:
        raise ArgumentError(f"unknown tier {tier!r}; choose one of {', '.join(TIERS)}")
    return tier


def lazy_jit(threads: int | None = None):
    """The shared JIT of JITVM_TIER's tier (default "auto"): what the drop-in API
    (jitvm.api.dropin) prepares modules with, as `load` does without `tier=`."""
    return _jit_backend(threads, _check_tier(None))


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


DRIVERS = ("local-sync", "local-task")


def _native_modules(loader: EmbeddedLoader, trace, devices=None, providers=None):
    factories = {"hal": lambda: HalModule(loader, trace_sink=trace, devices=devices), "check": CheckModule,
                 "vmvx": VmvxModule}
    if providers:
        from ..runtime.modules.io_parameters import IoParametersModule

        factories["io_parameters"] = lambda: IoParametersModule(providers)
    return factories


def _drivers(driver) -> list[str]:
    """`driver=` as a list of device names: one device each (None: one local-task device)."""
    names = [driver] if driver is None or isinstance(driver, str) else list(driver)
    out = []
    for name in names:
        name = "local-task" if name is None else name.split("://", 1)[0]
        if name not in DRIVERS:
            raise ArgumentError(f"unknown driver {name!r}; this runtime provides {', '.join(DRIVERS)}")
        out.append(name)
    return out or ["local-task"]


def load(source, backend: str = "jit", *, threads: int | None = None, trace=None,
         verify_features: int | None = None, driver=None, parameters=None, compiled=None, tier=None) -> Module:
    """Loads a module from a path, `example:NAME` or bytes, instantiated in a fresh context.

    `source` may also be a list: bytecode modules (and native module instances) that import
    from each other, added to one context in order; the last is returned and `.modules`
    names them all. `driver` is "local-task" (default) or "local-sync" (one thread per
    dispatch unless `threads` says otherwise), or a list of them for programs that use
    several devices. `parameters` are parameter archives: a path, "scope=path", a
    (scope, path) pair, a ParameterIndex or a list of those (see jitvm.api.parameters).
    `threads` is how many threads run a dispatch's workgroups under the JIT (default:
    JITVM_THREADS, else every core); results are identical for any count. The reference
    interpreter runs workgroups one after another whatever it says.
    `trace(key, arrays)` receives the tensors of `hal.buffer_view.trace` calls (modules
    compiled with --iree-flow-trace-dispatch-tensors); without it those calls do nothing.
    `compiled` names a bundle `jitvm compile` wrote for this module: its code is used instead
    of compiling, after checking it was made for these module bytes and this host.
    `tier` is how the JIT compiles (lower.lazy): each function when first called, "auto"
    (default, or JITVM_TIER) first with the quick baseline pipeline and again with the full
    one in the background once called again, "baseline" only quickly, "full" only fully
    (the first call waits for optimised code: what benchmarks want). With `compiled`, all
    of the bundle's optimised code is used as it is.
    """
    threads = _check_threads(threads)
    tier = _check_tier(tier)
    if backend == "jit" and compiled is None:
        compile_pool.offload_llvm(start_if_cold=True)  # LLVM's work on a helper worker, started early
    drivers = _drivers(driver)
    if threads is None and driver is not None and all(d == "local-sync" for d in drivers):
        threads = 1  # local-sync runs a dispatch on the calling thread
    sources = list(source) if isinstance(source, (list, tuple)) else [source]
    if not sources:
        raise ArgumentError("load() needs at least one module")
    parsed = [s if isinstance(s, ModuleInstance) else load_module(resolve_path(s) if isinstance(s, str) else s)
              for s in sources]
    bytecode = [m for m in parsed if not isinstance(m, ModuleInstance)]
    if compiled is not None and bytecode:  # before anything compiles: the runtime's own code is in it too
        cache.use(open_bundle(compiled, bytecode[-1]))
    heap.tune()  # freed call buffers stay in the heap for the next call
    be = get_backend(backend)
    if backend == "jit":  # the shared JIT of the tier chosen (a backend object is used as it is)
        be = _jit_backend(threads, None if compiled is not None else tier)
    elif threads is not None and getattr(be, "name", None) == "jit":
        be = _jit_backend(threads)
    register_hal_types()
    loader = EmbeddedLoader(be)
    verified = [verify_module(m, verify_features) for m in bytecode]
    # which executable variants the program gets (llvm-cpu first, JITVM_PREFER, CPU features)
    policy = FormatPolicy.for_program(bytecode[-1] if bytecode else None)
    prefetch = _prefetch([seg for m in bytecode for seg in embedded_modules(m)], loader) \
        if policy.picks_vmvx() else None
    loaded = {id(m): LoadedModule(v, be) for m, v in zip(bytecode, verified)}
    runner = runner_for(be)
    devices = [HalDevice.new(loader, runner, policy, device_id=d) for d in drivers]
    factories = _native_modules(loader, _trace_adapter(trace), devices, parameter_providers(parameters))
    provided = {m.name for m in parsed if isinstance(m, ModuleInstance)}
    wanted = [d.name for m in bytecode for d in m.dependencies] + \
        [i.module_name for m in bytecode for i in m.imports]
    context = Context()
    natives = {}
    for name in dict.fromkeys(wanted):
        if name in factories and name not in provided:
            natives[name] = context.add(factories[name]())
    siblings: dict[str, Module] = {}
    for m in parsed:
        instance = context.add(m if isinstance(m, ModuleInstance) else loaded[id(m)])
        if not isinstance(m, ModuleInstance):
            siblings[instance.name] = Module(context, instance, natives, siblings)
    if prefetch is not None:
        prefetch.join()  # the initializer created the executables (or they are loaded for later)
    if not siblings:
        raise ArgumentError("load() needs at least one bytecode module")
    memory.release()  # a quiet point: what compiling and linking touched of LLVM goes back
    return list(siblings.values())[-1]


def _prefetch(embedded, loader: EmbeddedLoader):
    """The JIT compiles the embedded executables while it compiles the host module."""
    if getattr(loader.backend, "name", None) != "jit":
        return None
    return Prefetch([bytes(data) for _ordinal, data in embedded], loader)


def _trace_adapter(trace):
    if trace is None:
        return None
    return lambda key, views: trace(key, [v.to_numpy() for v in views])


__all__ = ["BACKENDS", "DRIVERS", "TIERS", "EmbeddedLoader", "Function", "Module", "get_backend", "load"]
