"""The one way native code enters this process: IR text or object code in an MCJIT engine.

Every engine gets a target machine of its own, for the host: MCJIT takes ownership of its
machine and frees it when the engine is disposed, so a machine shared between engines (or
with the compiler's cached ones) would be freed twice. A `JitModule` keeps its engine, and
so its code, alive for as long as it is referenced.

Symbols are process-wide (runtime.native.symtab, handed to LLVM's table when llvmlite is
first needed): code compiled later links against what earlier modules `export` and what
`provide` registers (libc, libm, Python callbacks).

Object code alone (the code store's) is mapped by jitvm's own loader (runtime.native.objload)
without LLVM; what that loader does not understand goes through MCJIT.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from typing import Iterable, Mapping

import llvmlite

from . import cache, clib, objload, offload, symtab, target as targets

STATS: Counter = Counter()  # runtime_compiled, runtime_cache_hits: the runtime's own native code
RUNTIME_KEYS: set[str] = set()  # the code-store keys of the runtime code this process loaded (bundles need them)
_lock = threading.Lock()  # one engine at a time: loads come from several threads, LLVM's global context is shared


def bindings():
    """llvmlite's bindings, imported when first needed, with jitvm's symbols handed to LLVM."""
    binding = targets.binding()
    symtab.attach(binding.add_symbol)
    return binding


class JitModule:
    """Code compiled or linked into this process, alive as long as this object: an MCJIT
    `engine`, or an image jitvm's loader `mapped` (runtime.native.objload.Image)."""

    def __init__(self, engine=None, mapped: objload.Image | None = None):
        self.engine = engine
        self.mapped = mapped

    def address(self, name: str) -> int:
        """The address of function `name`."""
        addr = self.mapped.symbols.get(name) if self.mapped else self.engine.get_function_address(name)
        if not addr:
            raise KeyError(f"symbol {name} not found in compiled code")
        return addr

    def global_address(self, name: str) -> int:
        """The address of global variable `name`."""
        addr = self.mapped.symbols.get(name) if self.mapped else self.engine.get_global_value_address(name)
        if not addr:
            raise KeyError(f"global {name} not found in compiled code")
        return addr

    def function(self, name: str, prototype):
        """Function `name` as a ctypes callable of `prototype` (a CFUNCTYPE)."""
        return prototype(self.address(name))


def jit_module(ir: str | llvmlite.binding.ModuleRef | None = None, objects: Iterable[bytes] = (), *, opt: int = 2,
               export: Iterable[str] = (), cached: bool = True) -> JitModule:
    """`ir` (text or a parsed module, verified here) and/or object files, compiled at
    optimisation level `opt` for the host and finalized; the functions named in `export`
    become symbols later modules link against. IR text is compiled once per host and LLVM
    and its object code kept in the code store (runtime.native.cache): later processes map
    it instead of compiling it (`cached=False` always compiles)."""
    host = targets.host()
    objects = list(objects)
    if isinstance(ir, str) and cached:
        objects.append(_object_code(ir, host, opt))
        ir = None
    mapped = objload.load(objects) if ir is None else None
    code = JitModule(mapped=mapped) if mapped is not None else _mcjit(ir, objects, host, opt)
    provide({name: code.address(name) for name in export})
    return code


def _mcjit(ir, objects: list[bytes], host, opt: int) -> JitModule:
    """`ir` and `objects` linked by an MCJIT engine of their own."""
    llvm = bindings()
    with _lock:
        if ir is None:
            mod = llvm.parse_assembly(f'target triple = "{host.triple}"\n')
        else:
            mod = llvm.parse_assembly(ir) if isinstance(ir, str) else ir
            mod.triple = host.triple
            mod.verify()
        engine = llvm.create_mcjit_compiler(mod, targets.new_machine(host, opt))
        for obj in objects:
            engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
    return JitModule(engine)


def runtime_key(ir: str, host, opt: int) -> str:
    """The code store's key of runtime IR text `ir` compiled for `host` at `opt`."""
    h = hashlib.sha256()
    for part in ("runtime-ir-1", llvmlite.__version__, targets.llvm_version(), host.triple,
                 host.cpu, host.features, str(opt), ir):
        h.update(part.encode())
        h.update(b"\0")
    return "rt" + h.hexdigest()


# Quick start (`quick_start`): runtime code missing from the store is compiled with fast
# instruction selection (4-6x sooner; host calls some 20-40% slower) and its `opt` build
# left for later: PENDING_RUNTIME holds (ir, opt), which a detached tier-up (lower.handoff)
# compiles into the store as the process ends, so the next process maps the optimised code.
QUICK_OPT = 0
_quick = False
PENDING_RUNTIME: dict[str, tuple[str, int]] = {}  # key of the optimised build -> (ir, opt)


def quick_start(on: bool = True) -> None:
    """Whether runtime code missing from the store starts on the quick build (see above)."""
    global _quick
    _quick = on


def _object_code(ir: str, host, opt: int) -> bytes:
    """The host object code of `ir` at `opt`: from the code store, else compiled and stored
    (under quick start, the quick build stands in until a later process)."""
    key = runtime_key(ir, host, opt)
    hit = cache.load(key)
    if hit is None and _quick and opt > QUICK_OPT:
        PENDING_RUNTIME[key] = (ir, opt)
        opt, key = QUICK_OPT, runtime_key(ir, host, QUICK_OPT)
        hit = cache.load(key)
    RUNTIME_KEYS.add(key)
    if hit is not None:
        STATS["runtime_cache_hits"] += 1
        return hit[0][0]
    STATS["runtime_compiled"] += 1
    obj = compile_object(ir, host, opt)
    cache.store(key, [obj], {"what": "runtime code"})
    return obj


def compile_object(ir: str, host, opt: int) -> bytes:
    """Object code of runtime IR text `ir` for `host` at `opt` (what the store keeps): from
    the JIT's compile worker when there is one (runtime.native.offload), else compiled here."""
    obj = offload.compile_runtime(ir, opt) if host == targets.host() else None
    return obj if obj is not None else compile_here(ir, host, opt)


def compile_here(ir: str, host, opt: int) -> bytes:
    """`compile_object` in this process (what a compile worker runs for it)."""
    llvm = bindings()
    with _lock:
        mod = llvm.parse_assembly(ir)
        mod.triple = host.triple
        mod.verify()
        return targets.new_machine(host, opt).emit_object(mod)


def provide(symbols: Mapping[str, int]) -> None:
    """Makes each name resolve to its address in code compiled or loaded from now on."""
    symtab.add(symbols)


def libc(names: Iterable[str]) -> dict[str, int]:
    """The addresses of the C library's functions `names` (for `provide`)."""
    return {name: clib.address(name) for name in names}
