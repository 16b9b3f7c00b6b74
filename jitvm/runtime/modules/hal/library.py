"""IREE's executable library ABI (runtime/src/iree/hal/local/executable_library.h), version 0.6.

An llvm-cpu executable, embedded ELF or system shared object alike, exports one function:

    const iree_hal_executable_library_header_t** query(uint32_t max_version,
                                                       const environment_v0_t* environment)

iree-compile 3.13 builds it as `return max_version == 6 ? &library_v0 : NULL` (seen in the
machine code it emits: `cmp edi, 6; cmove`), so the runtime asks for exactly version 6. The
library struct then lists the imports it wants, its exports (function pointers, per-export
attributes, names, optional tags, parameters and source locations), the count of
executable-level constants and embedded sources. Each export is called once per workgroup:

    int dispatch(const environment_v0_t*, const dispatch_state_v0_t*, const workgroup_state_v0_t*)

returning 0, or nonzero for a catastrophic failure.

Every struct is described once, in runtime.native.layout (Exe*), which the native executor's
code reads too (runtime.exec.library runs the exports' grids). The CPU feature bits of the
environment's processor data are IREE's encoding (runtime/src/iree/schemas/cpu_feature_bits.inl), filled from the
host features LLVM detects (on arm64 Linux: the kernel's hwcaps, as IREE), which name the
same features.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from ....errors import FormatError, UnsupportedError
from ...exec.library import DISPATCH_FLAG_SEQUENTIAL  # noqa: F401 - the ABI's flags, together
from ...exec.nativecode import native as native_executor
from ...native import hwcaps, layout, target
from .errors import hal_error

LIBRARY_VERSION = 6  # IREE_HAL_EXECUTABLE_LIBRARY_VERSION_0_6, what iree-base-runtime 3.13 asks for
LOCAL_MEMORY_PAGE = 4096  # IREE_HAL_EXECUTABLE_WORKGROUP_LOCAL_MEMORY_PAGE_SIZE
MAX_CONSTANT_COUNT = 64
MAX_BINDING_COUNT = 64
PROCESSOR_DATA_CAPACITY = len(layout.CTYPES["ExeProcessor"]().data)

DISPATCH_FLAG_WORKGROUP_SIZE_DYNAMIC = 1 << 1

SANITIZERS = {0: "none", 1: "address", 2: "memory", 3: "thread", 4: "undefined"}

# The ABI's structs are runtime.native.layout's Exe* (declared there once: the executor's
# native code reads the dispatch and workgroup states); the C header implies these sizes (its
# static_asserts bound them).
_SIZES = {"ExeLibraryHeader": 24, "ExeLibraryV0": 128, "ExeDispatchAttrs": 64, "ExeDispatchParameter": 8,
          "ExeEnvironment": 96, "ExeDispatchState": 48, "ExeWorkgroupState": 32}
assert all(layout.sizeof(name) == size for name, size in _SIZES.items()), _SIZES

HeaderT = layout.CTYPES["ExeLibraryHeader"]
LibraryV0T = layout.CTYPES["ExeLibraryV0"]
DispatchAttrsT = layout.CTYPES["ExeDispatchAttrs"]
EnvironmentT = layout.CTYPES["ExeEnvironment"]
DispatchStateT = layout.CTYPES["ExeDispatchState"]
WorkgroupStateT = layout.CTYPES["ExeWorkgroupState"]

QUERY_FN = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p)
DISPATCH_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


# --- processor data: IREE's CPU feature bits ------------------------------------------------

# (architecture, data field, bit, LLVM feature name) as IREE's cpu_feature_bits.inl numbers them.
CPU_FEATURE_BITS: tuple[tuple[str, int, int, str], ...] = (
    ("aarch64", 0, 0, "fp-armv8"), ("aarch64", 0, 1, "lse"), ("aarch64", 0, 2, "lse128"),
    ("aarch64", 0, 10, "fullfp16"), ("aarch64", 0, 11, "fp16fml"), ("aarch64", 0, 12, "dotprod"),
    ("aarch64", 0, 13, "i8mm"), ("aarch64", 0, 14, "bf16"),
    ("aarch64", 0, 20, "sve"), ("aarch64", 0, 21, "sve2"), ("aarch64", 0, 22, "sve2p1"),
    ("aarch64", 0, 23, "sve2-bitperm"), ("aarch64", 0, 24, "f32mm"), ("aarch64", 0, 25, "f64mm"),
    ("aarch64", 0, 30, "sme"), ("aarch64", 0, 31, "sme2"), ("aarch64", 0, 32, "sme2p1"),
    ("aarch64", 0, 33, "sme-f16f16"), ("aarch64", 0, 34, "sme-f64f64"), ("aarch64", 0, 35, "sme-i16i64"),
    ("x86_64", 0, 0, "sse3"), ("x86_64", 0, 1, "ssse3"), ("x86_64", 0, 2, "sse4.1"), ("x86_64", 0, 3, "sse4.2"),
    ("x86_64", 0, 4, "sse4a"),
    ("x86_64", 0, 10, "avx"), ("x86_64", 0, 11, "fma"), ("x86_64", 0, 12, "fma4"), ("x86_64", 0, 13, "xop"),
    ("x86_64", 0, 14, "f16c"), ("x86_64", 0, 15, "avx2"),
    ("x86_64", 0, 20, "avx512f"), ("x86_64", 0, 21, "avx512cd"), ("x86_64", 0, 22, "avx512vl"),
    ("x86_64", 0, 23, "avx512dq"), ("x86_64", 0, 24, "avx512bw"), ("x86_64", 0, 25, "avx512ifma"),
    ("x86_64", 0, 26, "avx512vbmi"), ("x86_64", 0, 27, "avx512vpopcntdq"), ("x86_64", 0, 28, "avx512vnni"),
    ("x86_64", 0, 29, "avx512vbmi2"), ("x86_64", 0, 30, "avx512bitalg"), ("x86_64", 0, 31, "avx512bf16"),
    ("x86_64", 0, 32, "avx512fp16"),
    ("x86_64", 0, 50, "amx-tile"), ("x86_64", 0, 51, "amx-int8"), ("x86_64", 0, 52, "amx-bf16"),
)


@lru_cache(maxsize=None)
def host_features() -> dict[str, bool]:
    """The host CPU's features: feature name -> present. On arm64 Linux the kernel's hwcaps, as
    IREE's runtime reads them; elsewhere LLVM's view (every feature LLVM knows), as the host
    target holds it (runtime.native.target: stored, so no process asks LLVM twice)."""
    arm64 = hwcaps.host_features()
    if arm64 is not None:
        return arm64
    return target.host_features()


@lru_cache(maxsize=None)
def host_processor_data() -> tuple[int, ...]:
    """The environment's processor data for this host: IREE's feature bits in field 0."""
    arch = target.host().arch
    arch = "aarch64" if arch == "arm64" else arch
    have = host_features()
    fields = [0] * PROCESSOR_DATA_CAPACITY
    for a, field, bit, name in CPU_FEATURE_BITS:
        if a == arch and have.get(name):
            fields[field] |= 1 << bit
    return tuple(fields)


def cpu_feature_value(key: str) -> int | None:
    """The `hal.cpu` device query (IREE's iree_cpu_lookup_data_by_key): 0/1 for a feature of
    this architecture's table, None for a key it does not list."""
    arch = target.host().arch
    arch = "aarch64" if arch == "arm64" else arch
    data = host_processor_data()
    for a, field, bit, name in CPU_FEATURE_BITS:
        if a == arch and name == key:
            return (data[field] >> bit) & 1
    return None


# --- the library ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Export:
    """One export of the library, in table order (its index is the HAL function id)."""

    ordinal: int
    name: str
    function: int  # address of the dispatch function
    flags: int
    local_memory_size: int  # bytes (whole pages)
    constant_count: int
    binding_count: int
    workgroup_size: tuple[int, int, int]
    parameter_count: int
    tag: str | None


class Library:
    """A queried executable library: its name, exports and the environment it runs with.

    `readable(address) -> int` is how many bytes of the library's tables may be read from
    `address` (what remains of an embedded ELF's mapped image there, 0 outside it); None
    trusts the platform loader's mapping.
    `keep` holds whatever keeps the code mapped (a LoadedElf, a CDLL).
    """

    def __init__(self, query_address: int, origin: str, constants: bytes | None,
                 readable: Callable[[int], int] | None, keep, close: Callable[[], None] | None = None):
        self.origin = origin
        self._readable = readable
        self._keep = keep
        self._close = close
        self._constants = (ctypes.c_uint32 * max(1, len(constants or b"") // 4)).from_buffer_copy(
            (constants or b"").ljust(4, b"\0"))
        self.constant_values = len(constants or b"") // 4
        env = self.environment = EnvironmentT()
        env.constants = ctypes.addressof(self._constants) if self.constant_values else None
        for i, v in enumerate(host_processor_data()):
            env.processor.data[i] = v
        self._import_arrays = None
        result = QUERY_FN(query_address)(LIBRARY_VERSION, ctypes.addressof(env))
        if not result:
            raise UnsupportedError(f"{origin}: the executable library does not support runtime version "
                                   f"{LIBRARY_VERSION} (IREE's executable library ABI 0.6, as iree-base-runtime "
                                   f"3.13); it was built by an incompatible IREE version")
        header_ptr = self._read(result, ctypes.c_void_p, "the library header pointer").value
        header = self._read(header_ptr, HeaderT, "the library header")
        if header.version != LIBRARY_VERSION:
            newer = "a newer" if header.version > LIBRARY_VERSION else "an older"
            raise UnsupportedError(f"{origin}: the library was built for executable library version "
                                   f"{header.version} ({newer} IREE); this runtime implements version "
                                   f"{LIBRARY_VERSION}")
        self.name = self._string(header.name, "the library name") if header.name else ""
        if header.features:
            raise UnsupportedError(f"{origin}: library '{self.name}' requires library features "
                                   f"{header.features:#x}, which this runtime does not provide")
        if header.sanitizer:
            raise UnsupportedError(f"{origin}: library '{self.name}' is built for the "
                                   f"{SANITIZERS.get(header.sanitizer, header.sanitizer)} sanitizer, which "
                                   f"this runtime does not host")
        self.v0 = self._read(result, LibraryV0T, "the v0 library struct")  # the header pointer leads it
        self._resolve_imports()
        self.exports = self._read_exports()
        self.required_constants = self.v0.constants.count
        self._fns = [DISPATCH_FN(e.function) for e in self.exports]

    # -- bounded reads of what the library points at --

    def _check(self, address: int, size: int, what: str) -> None:
        if not address or (self._readable is not None and self._readable(address) < size):
            raise FormatError(f"{self.origin}: {what} at {address or 0:#x} ({size} bytes) lies outside the "
                              f"loaded executable image")

    def _read(self, address: int, ctype, what: str):
        self._check(address, ctypes.sizeof(ctype), what)
        return ctype.from_address(address)

    def _array(self, address: int, ctype, count: int, what: str):
        self._check(address, ctypes.sizeof(ctype) * count, what)
        return (ctype * count).from_address(address)

    def _string(self, address: int, what: str) -> str:
        self._check(address, 1, what)
        if self._readable is None:
            return ctypes.string_at(address).decode("utf-8", "replace")  # the platform mapped it
        n = self._readable(address)
        raw = ctypes.string_at(address, n)
        end = raw.find(b"\0")
        if end < 0:
            raise FormatError(f"{self.origin}: {what} at {address:#x} is not NUL-terminated inside the image")
        return raw[:end].decode("utf-8", "replace")

    def _resolve_imports(self) -> None:
        table = self.v0.imports
        if not table.count:
            return
        names = self._array(table.symbols, ctypes.c_void_p, table.count, "the import table")
        symbols = [self._string(p, f"import {i}'s name") for i, p in enumerate(names)]
        required = [s for s in symbols if not s.startswith("?")]
        if required:
            raise UnsupportedError(f"{self.origin}: library '{self.name}' imports {', '.join(required)}, which "
                                   f"this runtime does not provide (it has no executable plugins)")
        # Weak imports stay unresolved (null), which libraries check before calling them.
        funcs = (ctypes.c_void_p * table.count)()
        contexts = (ctypes.c_void_p * table.count)()
        self._import_arrays = (funcs, contexts)
        env = self.environment
        env.import_thunk = native_executor().library_import_thunk  # fails every call: nothing is resolved
        env.import_funcs = ctypes.addressof(funcs)
        env.import_contexts = ctypes.addressof(contexts)

    def _read_exports(self) -> list[Export]:
        t = self.v0.exports
        if not t.count:
            return []
        if not t.attrs:
            raise FormatError(f"{self.origin}: library '{self.name}' has no dispatch attributes for its "
                              f"{t.count} exports")
        if not t.names:
            raise FormatError(f"{self.origin}: library '{self.name}' has no export names for its "
                              f"{t.count} exports")
        ptrs = self._array(t.ptrs, ctypes.c_void_p, t.count, "the export function table")
        attrs = self._array(t.attrs, DispatchAttrsT, t.count, "the dispatch attribute table")
        names = self._array(t.names, ctypes.c_void_p, t.count, "the export name table")
        tags = self._array(t.tags, ctypes.c_void_p, t.count, "the export tag table") if t.tags else None
        out = []
        for i in range(t.count):
            a = attrs[i]
            name = self._string(names[i], f"export {i}'s name") if names[i] else ""
            if not name:
                raise FormatError(f"{self.origin}: export {i} of library '{self.name}' has no name")
            if a.constant_count > MAX_CONSTANT_COUNT or a.binding_count > MAX_BINDING_COUNT:
                raise UnsupportedError(f"{self.origin}: export {name} needs {a.constant_count} constants and "
                                       f"{a.binding_count} bindings; the limits are {MAX_CONSTANT_COUNT} and "
                                       f"{MAX_BINDING_COUNT}")
            self._check(ptrs[i], 1, f"export {name}'s function")
            tag = self._string(tags[i], f"export {name}'s tag") if tags is not None and tags[i] else None
            out.append(Export(i, name, ptrs[i], a.flags, a.local_memory_pages * LOCAL_MEMORY_PAGE,
                              a.constant_count, a.binding_count,
                              (a.workgroup_size_x, a.workgroup_size_y, a.workgroup_size_z),
                              a.parameter_count, tag))
        return out

    # -- calling --

    @property
    def environment_address(self) -> int:
        return ctypes.addressof(self.environment)

    def call(self, ordinal: int, dispatch_state: int, workgroup_state: int) -> int:
        """Runs export `ordinal` for one workgroup (the structs' addresses); its return code."""
        return self._fns[ordinal](self.environment_address, dispatch_state, workgroup_state)

    def close(self) -> None:
        self._fns = []
        if self._close is not None:
            self._close()
            self._close = None
        self._keep = None


def check_constants(library: Library) -> None:
    """IREE's verification: the executable's constant count must match what was provided."""
    if library.required_constants != library.constant_values:
        raise hal_error("FAILED_PRECONDITION", f"executable requires {library.required_constants} constants but "
                                               f"caller provided {library.constant_values}; must match")
