"""hal.executable for llvm-cpu libraries (`embedded-elf-*`, `system-elf-*`), and their dispatch.

An embedded ELF is loaded by jitvm's own loader (hal.elf); a system ELF is a platform shared
object, written to a temporary file and opened with the system loader (ctypes.CDLL), the file
removed once open. Either way the library is queried and verified as IREE does (hal.library)
and its exports become the executable's functions, in table order.

Dispatches run on the native executor (runtime.exec.library): the export's workgroups on
the grid walker and the pool, as VMVX entries run, with no Python per dispatch when a
command buffer is replayed (hal.prepared) and none per workgroup ever. The executable's
runner is the host backend's native one, or the process's shared one when the backend has
none (the interpreter's).
"""

from __future__ import annotations

import ctypes
import os
import struct

from ....errors import FormatError, UnsupportedError
from ...exec.library import DISPATCH_FLAG_SEQUENTIAL, LibraryDispatch, LibraryEntry
from ...exec.runner import shared_runner
from .errors import hal_error
from .executable import EntryPoint, HalExecutable
from .library import Library, check_constants


class LibraryExecutable(HalExecutable):
    """A loaded llvm-cpu library; function ids are export indices."""

    is_library = True

    def __init__(self, library: Library, executable_format: str, runner=None):
        self.library = library
        self.format = executable_format
        self.exports = library.exports
        self.entries = [EntryPoint(e.name, None, e.local_memory_size, e.constant_count, e.binding_count)
                        for e in library.exports]
        self.library_entries = [LibraryEntry(e.name, e.function, library.environment_address, e.local_memory_size,
                                             e.constant_count, e.binding_count, bool(e.flags & DISPATCH_FLAG_SEQUENTIAL),
                                             library)
                                for e in library.exports]
        self.runner = runner if callable(getattr(runner, "run_library", None)) else shared_runner()

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
        self.runner.run_library(LibraryDispatch(self.library_entries[function_id], count, constants, tuple(bindings)))

    def on_destroy(self) -> None:
        self.library.close()


# --- creating -----------------------------------------------------------------------------


def load_embedded(data: bytes, constants: bytes | None, origin: str) -> Library:
    from . import elf as elf_loader  # the ELF reader only for programs with llvm-cpu executables

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
    from . import elf as elf_loader  # the ELF reader only for programs with llvm-cpu executables

    lib_bytes = system_library_bytes(bytes(data), origin)
    parsed = elf_loader.read_elf(lib_bytes, origin, need_dynamic=False)
    host = elf_loader.host_machine()
    if parsed.machine is not host:
        raise UnsupportedError(f"{origin}: is an {parsed.machine.name} library; this host is "
                               f"{host.name if host else 'not supported'}")
    import tempfile  # here: only a system-library executable needs it

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
                              policy, runner=None) -> LibraryExecutable:
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
    return LibraryExecutable(library, executable_format, runner)
