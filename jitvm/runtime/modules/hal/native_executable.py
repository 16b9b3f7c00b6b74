"""hal.executable for llvm-cpu libraries (`embedded-elf-*`, `system-elf-*`), and their dispatch.

An embedded ELF is loaded by jitvm's own loader (hal.elf); a system ELF is a platform shared
object, written to a temporary file and opened with the system loader (ctypes.CDLL), the file
removed once open. Either way the library is queried and verified as IREE does (hal.library)
and its exports become the executable's functions, in table order.

Dispatching is TEMPORARY in this phase: `SerialLibraryRunner` calls the export once per
workgroup through ctypes (GIL released during each call), z outermost and x innermost as
IREE's inline executor does, with denormals flushed. The next phase hands a `LibraryDispatch`
to the native executor, which walks the grid on its threads with no Python per workgroup.

What that executor must offer (the contract `SerialLibraryRunner.run` implements now): given
the export's function address, the environment's address, an ExeDispatchState filled as
below and the grid (x, y, z with z < 2**16), run `int fn(env, dispatch_state, workgroup_state)`
for every workgroup id, each worker with an ExeWorkgroupState of its own (ids, processor_id,
its own zeroed local memory of `export.local_memory_size` bytes), with denormals flushed
(FTZ/DAZ, FPCR.FZ) on every worker thread; stop claiming work at the first nonzero return
and report the lowest failing linear index and its code (what a serial loop reports);
exports flagged DISPATCH_FLAG_SEQUENTIAL run on one thread. The dispatch state's
workgroup_size is (1, 1, 1) and max_concurrency the worker count (1 here, as local-sync).
For command-buffer replay the binding pointer array is patched per execution from the
binding table's slot bases, as PreparedDispatch.views does for VMVX.
"""

from __future__ import annotations

import ctypes
import os
import struct
import tempfile
from dataclasses import dataclass
from functools import lru_cache

from ....errors import FormatError, UnsupportedError
from ...exec.fpu import denormals_flushed
from ...vm.objects import VmBuffer
from . import elf as elf_loader
from .errors import hal_error
from .executable import EntryPoint, HalExecutable
from .library import DispatchStateT, Export, Library, WorkgroupStateT, check_constants


@dataclass(frozen=True)
class LibraryDispatch:
    """One dispatch of a library export, everything its workgroups need.

    `binding_ptrs`/`binding_lengths` are ctypes arrays (void*, size_t) of `export.binding_count`
    entries; `constants` the address of `export.constant_count` u32s (0 when none). All of it
    stays valid until the runner returns."""

    library: Library
    export: Export
    workgroup_count: tuple[int, int, int]
    constants: int
    binding_ptrs: object
    binding_lengths: object


@lru_cache(maxsize=None)
def _sched_getcpu():
    try:
        fn = ctypes.CDLL(None).sched_getcpu
    except (OSError, AttributeError):
        return lambda: 0
    fn.restype = ctypes.c_int
    fn.argtypes = []
    return lambda: max(0, fn())


class SerialLibraryRunner:
    """Temporary: one ctypes call per workgroup on the calling thread (IREE's local-sync order)."""

    def run(self, d: LibraryDispatch) -> None:
        e = d.export
        cx, cy, cz = d.workgroup_count
        cz &= 0xFFFF  # the dispatch state holds z as uint16, as IREE's does
        state = DispatchStateT()
        state.workgroup_size_x = state.workgroup_size_y = state.workgroup_size_z = 1  # static dispatch config
        state.constant_count = e.constant_count
        state.workgroup_count_x, state.workgroup_count_y, state.workgroup_count_z = cx, cy, cz
        state.max_concurrency = 1
        state.binding_count = e.binding_count
        state.constants = d.constants or None
        state.binding_ptrs = ctypes.addressof(d.binding_ptrs)
        state.binding_lengths = ctypes.addressof(d.binding_lengths)
        # 64-byte aligned as IREE's workers' local memory is (the code may load it with aligned
        # vector instructions; ctypes buffers are only 16-byte aligned)
        local = VmBuffer.allocate(e.local_memory_size, 64) if e.local_memory_size else None
        wg = WorkgroupStateT()
        wg.processor_id = _sched_getcpu()()
        wg.local_memory = local.data_address if local is not None else None
        wg.local_memory_size = e.local_memory_size
        fn = d.library._fns[e.ordinal]
        env, ds, ws = d.library.environment_address, ctypes.addressof(state), ctypes.addressof(wg)
        with denormals_flushed():
            for z in range(cz):
                wg.workgroup_id_z = z
                for y in range(cy):
                    wg.workgroup_id_y = y
                    for x in range(cx):
                        wg.workgroup_id_x = x
                        rc = fn(env, ds, ws)
                        if rc:
                            raise hal_error("INTERNAL", f"executable entry point {e.name} returned catastrophic "
                                                        f"error {rc} (workgroup {x}, {y}, {z})")


SERIAL_RUNNER = SerialLibraryRunner()


class LibraryExecutable(HalExecutable):
    """A loaded llvm-cpu library; function ids are export indices."""

    def __init__(self, library: Library, executable_format: str, runner=SERIAL_RUNNER):
        self.library = library
        self.format = executable_format
        self.exports = library.exports
        self.entries = [EntryPoint(e.name, None, e.local_memory_size, e.constant_count, e.binding_count)
                        for e in library.exports]
        self.runner = None  # no VMVX-style runner: recorded dispatches are never replayed natively here
        self.library_runner = runner

    def lookup(self, name: str) -> int:
        for e in self.exports:
            if e.name == name:
                return e.ordinal
        raise hal_error("NOT_FOUND", f"export '{name}' not found in library '{self.library.name}' "
                                     f"(exports: {', '.join(self.entry_names())})")

    def entry(self, function_id: int) -> EntryPoint:
        if not 0 <= function_id < len(self.entries):
            raise hal_error("OUT_OF_RANGE", f"function id {function_id} out of range (count: {len(self.entries)})")
        return self.entries[function_id]

    def entry_names(self) -> list[str]:
        return [e.name for e in self.exports]

    def dispatch(self, function_id: int, count: tuple[int, int, int], constants: int,
                 bindings: list[tuple[int, int]]) -> None:
        """Runs export `function_id` over `count` workgroups; `bindings` are (address, length)."""
        e = self.exports[function_id]
        n = max(1, len(bindings))
        ptrs = (ctypes.c_void_p * n)(*[a for a, _ in bindings])
        lengths = (ctypes.c_size_t * n)(*[length for _, length in bindings])
        self.library_runner.run(LibraryDispatch(self.library, e, count, constants, ptrs, lengths))

    def on_destroy(self) -> None:
        self.library.close()


# --- creating -----------------------------------------------------------------------------


def load_embedded(data: bytes, constants: bytes | None, origin: str) -> Library:
    parsed = elf_loader.read_elf(data, origin)
    image = elf_loader.load(parsed)
    try:
        return Library(image.address(elf_loader.QUERY_SYMBOL), origin, constants, image.readable, image,
                       image.close)
    except BaseException:
        image.close()
        raise


_FOOTER = struct.Struct("<8sIIQQQQ")  # IREE's optional system-library footer (debug database)
_FOOTER_MAGIC = b"IREEDBG\0"


def system_library_bytes(data: bytes, origin: str) -> bytes:
    """The shared object in `data`, without IREE's optional trailing debug-database footer."""
    if len(data) >= _FOOTER.size and data[-_FOOTER.size:][:8] == _FOOTER_MAGIC:
        _, _, _, _, lib_size, dbg_off, dbg_size = _FOOTER.unpack_from(data, len(data) - _FOOTER.size)
        body = len(data) - _FOOTER.size
        if lib_size > body or dbg_off + dbg_size > body:
            raise FormatError(f"{origin}: the system library footer references bytes beyond the "
                              f"{body}-byte library")
        return data[:lib_size]
    return data


def load_system(data: bytes, constants: bytes | None, origin: str) -> Library:
    lib_bytes = system_library_bytes(bytes(data), origin)
    parsed = elf_loader.read_elf(lib_bytes, origin, need_dynamic=False)
    host = elf_loader.host_machine()
    if parsed.machine is not host:
        raise UnsupportedError(f"{origin}: is an {parsed.machine.name} library; this host is "
                               f"{host.name if host else 'not supported'}")
    fd, path = tempfile.mkstemp(prefix="jitvm-executable-", suffix=".so")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(lib_bytes)
        try:
            handle = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        except OSError as e:
            raise UnsupportedError(f"{origin}: the system loader refused the library: {e}") from None
    finally:
        os.unlink(path)
    try:
        query = getattr(handle, elf_loader.QUERY_SYMBOL)
    except AttributeError:
        _dlclose(handle)
        raise FormatError(f"{origin}: does not export `{elf_loader.QUERY_SYMBOL}` (not an IREE executable "
                          f"library)") from None
    address = ctypes.cast(query, ctypes.c_void_p).value
    try:
        return Library(address, origin, constants, None, handle, lambda: _dlclose(handle))
    except BaseException:
        _dlclose(handle)
        raise


def _dlclose(handle) -> None:
    try:
        import _ctypes

        _ctypes.dlclose(handle._handle)
    except (ImportError, AttributeError, OSError):
        pass


def create_library_executable(loader: str, executable_format: str, data: bytes, constants: bytes | None,
                              policy) -> LibraryExecutable:
    origin = f"<{executable_format} executable>"
    if policy is not None:
        policy.check_loadable(executable_format, origin)
    load = load_embedded if loader == "embedded-elf" else load_system
    library = load(data, constants, origin)
    try:
        check_constants(library)
    except BaseException:
        library.close()
        raise
    return LibraryExecutable(library, executable_format)
