"""hal.executable: created by format; this file holds `vmvx-bytecode-fb`, an embedded VM module
run by jitvm (llvm-cpu libraries are hal.native_executable's).

The executable's bytes are themselves a .vmfb. It is loaded, verified and prepared with the
host module's backend (so the JIT compiles dispatches too), instantiated in its own context
next to the `vmvx` microkernel module, and given its executable constants through
`__set_constants` when it exports one, as IREE's VMVX loader does.
"""

from __future__ import annotations

import hashlib
import struct
import threading
import weakref
from dataclasses import dataclass
from typing import Protocol

from ...native import layout
from ...vm.context import Context
from ...vm.interface import Function
from ...vm.objects import NativeObject, VmBuffer
from ...exec.dispatch import VMVX_ENTRY_CCONV, DispatchRunner
from .errors import hal_error

from .formats import VMVX_FORMAT

LOCAL_MEMORY_PAGE = 4096


@dataclass(frozen=True)
class EntryPoint:
    """One export of the executable, in export order (its index is the function id)."""

    name: str
    function: Function | None  # None for exports that are not dispatch entry points
    local_memory_size: int  # bytes, whole pages
    constant_count: int
    binding_count: int


class HalExecutable(NativeObject):
    type_name = "hal.executable"
    is_library = False  # an llvm-cpu library (hal.native_executable) rather than a VMVX module

    def __init__(self, loaded, context: Context, entries: list[EntryPoint], runner: DispatchRunner):
        self.loaded = loaded
        self.context = context
        self.entries = entries
        self.runner = runner

    def lookup(self, name: str) -> int:
        for i, e in enumerate(self.entries):
            if e.name == name and e.function is not None:
                return i
        raise hal_error("NOT_FOUND", f"no exported function with the name `{name}` found in executable "
                                     f"'{self.loaded.name}' (exports: {', '.join(self.entry_names())})")

    def entry(self, function_id: int) -> EntryPoint:
        if not 0 <= function_id < len(self.entries) or self.entries[function_id].function is None:
            raise hal_error("OUT_OF_RANGE", f"function id {function_id} out of range (count: {len(self.entries)})")
        return self.entries[function_id]

    def entry_names(self) -> list[str]:
        return [e.name for e in self.entries if e.function is not None]

    def on_destroy(self) -> None:
        self.context.close()


# Loaded (verified + backend-prepared) executable modules, shared by every context that
# creates the same executable with the same backend.
_loaded_cache: "weakref.WeakValueDictionary[tuple, object]" = weakref.WeakValueDictionary()
_cache_lock = threading.Lock()


_pending: dict[tuple, threading.Event] = {}  # keys being loaded by a Prefetch


def _key(data: bytes, loader) -> tuple:
    return id(loader.backend), hashlib.sha256(data).digest()


def _load(data: bytes, loader):
    """The loaded executable module of `data`: from the cache, from a prefetch under way,
    or loaded now by `loader` (see `ExecutableLoader`)."""
    key = _key(data, loader)
    with _cache_lock:
        loaded = _loaded_cache.get(key)
        pending = _pending.get(key)
    if loaded is None and pending is not None:
        pending.wait()  # a prefetch of these bytes is under way
        with _cache_lock:
            loaded = _loaded_cache.get(key)
    if loaded is None:
        loaded = _load_now(key, data, loader)
    return loaded


def _load_now(key: tuple, data: bytes, loader):
    loaded = loader(data, f"<{VMVX_FORMAT} executable>")
    loaded._cache_backend = loader.backend  # keeps id(backend) meaningful while cached
    with _cache_lock:
        _loaded_cache[key] = loaded
    return loaded


class ExecutableLoader(Protocol):
    """What turns an executable's bytes into a loaded module: read, verified and prepared
    with the host module's backend. The API supplies it (the HAL decodes nothing itself)."""

    backend: object

    def __call__(self, data: bytes, origin: str): ...


class Prefetch:
    """Loads (verifies, prepares: the JIT compiles) the modules embedded in a host module's
    rodata on a thread of its own, while the caller compiles the host module: the host's
    initializer then finds its executables loaded, or waits for them, instead of starting
    them only when the host is done (a ResNet's host module takes a second and a core
    idles meanwhile). A failure is dropped here: executable.create meets it again, where
    IREE raises it. `loaded` keeps the results alive until the host holds them."""

    def __init__(self, embedded: list[bytes], loader: ExecutableLoader):
        self.loaded: list = []
        jobs = []
        for data in embedded:
            key = _key(data, loader)
            with _cache_lock:
                if key in _pending or _loaded_cache.get(key) is not None:
                    continue
                _pending[key] = threading.Event()
            jobs.append((key, data))
        self._thread = None  # most modules embed nothing: no thread then
        if jobs:
            self._thread = threading.Thread(target=self._run, args=(jobs, loader), name="jitvm-prefetch",
                                            daemon=True)
            self._thread.start()

    def _run(self, jobs, loader) -> None:
        for key, data in jobs:
            try:
                self.loaded.append(_load_now(key, data, loader))
            except Exception:  # noqa: BLE001 - raised again by executable.create
                pass
            finally:
                with _cache_lock:
                    done = _pending.pop(key)
                done.set()

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()


def _int_attr(fn: Function, key: str) -> int:
    text = fn.attr(key)
    try:
        return int(text) if text else 0
    except ValueError:
        raise hal_error("INVALID_ARGUMENT", f"executable export {fn.name} has a non-numeric `{key}` "
                                            f"attribute {text!r}") from None


def create_vmvx_executable(data: bytes, constants: bytes | None, loader: ExecutableLoader, runner: DispatchRunner,
                           vmvx_module_factory) -> HalExecutable:
    """A `vmvx-bytecode-fb` executable: its module loaded by `loader`, instantiated beside
    the vmvx microkernels, constants set, entry points checked."""
    loaded = _load(data, loader)
    context = Context()
    try:
        context.add(vmvx_module_factory())
        instance = context.add(loaded)
        entries = []
        for export in loaded.module.exports:
            fn = instance.lookup(export.name)
            if export.name.startswith("__") and fn.cconv.text != VMVX_ENTRY_CCONV:
                # __set_constants and the like; `__builtin_fill_i64`-style kernels are entry points
                entries.append(EntryPoint(export.name, None, 0, 0, 0))
                continue
            if fn.cconv.text != VMVX_ENTRY_CCONV:
                raise hal_error("INVALID_ARGUMENT",
                                f"executable entry point {export.name} does not match the expected calling "
                                f"convention; expected '{VMVX_ENTRY_CCONV}' but got '{fn.cconv.text}', possible "
                                f"ABI version mismatch")
            pages = -(-_int_attr(fn, "local_memory") // LOCAL_MEMORY_PAGE)
            entries.append(EntryPoint(export.name, fn, pages * LOCAL_MEMORY_PAGE,
                                      _int_attr(fn, "constant_count"), _int_attr(fn, "binding_count")))
        _set_constants(instance, constants)
    except BaseException:
        context.close()
        raise
    return HalExecutable(loaded, context, entries, runner)


def _set_constants(instance, constants: bytes | None) -> None:
    setter = instance.lookup("__set_constants")
    count = len(constants) // 4 if constants else 0
    if setter is None:
        if count:
            raise hal_error("INVALID_ARGUMENT", f"executable has no executable-level constants but {count} "
                                                f"constants were provided")
        return
    if not count:
        raise hal_error("INVALID_ARGUMENT", "executable requires executable-level constants but none were provided")
    setter.call([VmBuffer.from_bytes(constants, access=layout.BUFFER_ORIGIN_HOST)])


def constants_from_buffer(buf: VmBuffer | None) -> bytes | None:
    if buf is None:
        return None
    if buf.length % 4:
        raise hal_error("INVALID_ARGUMENT", f"constant buffer data must contain 4-byte elements but data length "
                                            f"is {buf.length}")
    return buf.tobytes()


def pack_constants(values) -> bytes:
    return struct.pack(f"<{len(values)}I", *[v & 0xFFFFFFFF for v in values])
