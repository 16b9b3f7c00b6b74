"""iree.runtime's parameter API: FileHandle, ParameterIndex, providers, archives.

Entries reference mapped files (or splat patterns); `create_io_parameters_module` serves
providers to programs through the `io_parameters` module. Metadata helpers read and write
the `TENSORv0:{json}` blobs iree.runtime attaches to numpy arrays.
"""

from __future__ import annotations

import json
import os

import numpy as np

from ...errors import ArgumentError
from ...runtime.modules.io_parameters import FileHandle as _FileHandle
from ...runtime.modules.io_parameters import IoParametersModule, ParameterEntry, archive_bytes, load_archive
from ...runtime.modules.io_parameters import ParameterIndex as _Index
from ...runtime.modules.io_parameters import ParameterProvider as _Provider
from ...runtime.modules.io_parameters import IO_PARAMETERS_MODULE_VERSION
from ...runtime.modules.io_parameters.formats import parse
from .vm import VmInstance, VmModule


class FileHandle:
    def __init__(self, handle: _FileHandle):
        self._handle = handle

    @staticmethod
    def wrap_memory(host_buffer, readable: bool = True, writable: bool = False) -> "FileHandle":
        return FileHandle(_FileHandle(host_buffer, readable, writable))

    @staticmethod
    def wrap_fd(fd: int, readable: bool = True, writable: bool = False) -> "FileHandle":
        return FileHandle(_FileHandle.open(f"/proc/self/fd/{fd}", readable, writable))

    def host_allocation(self) -> memoryview:
        return self._handle.view

    @property
    def is_host_allocation(self) -> bool:
        return True

    @property
    def is_async(self) -> bool:
        return False

    def __repr__(self):
        return repr(self._handle)


def _metadata(value) -> bytes:
    if value is None:
        return b""
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


class ParameterIndexEntry:
    def __init__(self, entry: ParameterEntry):
        self._entry = entry

    @property
    def key(self) -> str:
        return self._entry.key

    @property
    def length(self) -> int:
        return self._entry.length

    @property
    def metadata(self) -> bytes:
        return self._entry.metadata

    @property
    def is_file(self) -> bool:
        return self._entry.is_file

    @property
    def is_splat(self) -> bool:
        return self._entry.is_splat

    @property
    def file_storage(self):
        if not self.is_file:
            raise ArgumentError(f"parameter '{self.key}' is not stored in a file")
        return FileHandle(self._entry.handle), self._entry.offset

    @property
    def file_view(self) -> memoryview:
        if not self.is_file:
            raise ArgumentError(f"parameter '{self.key}' is not stored in a file")
        return self._entry.view()

    @property
    def splat_pattern(self) -> bytes:
        if not self.is_splat:
            raise ArgumentError(f"parameter '{self.key}' is not a splat")
        return self._entry.splat

    def __repr__(self):
        where = f"{self._entry.handle!r}:{self._entry.offset}" if self.is_file else f"splat({self._entry.splat!r})"
        return f"<ParameterIndexEntry '{self.key}' {where}:{self.length}>"


class ParameterProvider:
    def __init__(self, provider: _Provider):
        self._provider = provider


class ParameterIndex:
    def __init__(self):
        self._index = _Index()

    def __len__(self) -> int:
        return len(self._index)

    def __getitem__(self, i: int) -> ParameterIndexEntry:
        return ParameterIndexEntry(self._index[i])

    def reserve(self, new_capacity: int) -> None:
        pass

    def items(self) -> list:
        return [(e.key, ParameterIndexEntry(e)) for e in self._index.entries]

    def add_splat(self, key: str, pattern, total_length: int, *, metadata=None) -> None:
        raw = np.asarray(pattern).tobytes() if not isinstance(pattern, (bytes, bytearray)) else bytes(pattern)
        self._index.add(ParameterEntry(key, int(total_length), _metadata(metadata), splat=raw))

    def add_from_file_handle(self, key: str, file_handle: FileHandle, length: int, *, offset: int = 0,
                             metadata=None) -> None:
        self._index.add(ParameterEntry(key, int(length), _metadata(metadata), handle=file_handle._handle,
                                       offset=int(offset)))

    def add_buffer(self, key: str, buffer, *, readable: bool = True, writable: bool = False, metadata=None) -> None:
        """An entry over `buffer`'s memory (kept alive by the index, not copied)."""
        handle = _FileHandle(buffer, readable, writable)
        self._index.add(ParameterEntry(key, handle.length, _metadata(metadata), handle=handle))

    def load_from_file_handle(self, file_handle: FileHandle, format: str) -> None:
        parse(file_handle._handle, format, self._index)

    def load(self, file_path, format: str | None = None, readable: bool = True, writable: bool = False,
             mmap: bool | None = None, *, mode: str | None = None) -> None:
        """Adds the archive's entries: mapped (default), or read into memory (`mmap=False`)."""
        if mmap is not None and mode is not None:
            raise ArgumentError("mmap and mode are mutually exclusive")
        load_archive(self._index, os.fspath(file_path), format, readable, writable,
                     map_file=mmap is not False and mode not in ("preload",))

    def create_provider(self, *, scope: str = "", max_concurrent_operations=None) -> ParameterProvider:
        return ParameterProvider(_Provider(self._index, scope))

    def create_archive_file(self, file_path, file_offset: int = 0, target_index: "ParameterIndex | None" = None):
        with open(os.fspath(file_path), "wb") as f:
            f.write(b"\0" * file_offset + archive_bytes(self._index.entries))
        target = target_index if target_index is not None else ParameterIndex()
        load_archive(target._index, os.fspath(file_path), "irpa")
        return target


def create_io_parameters_module(instance: VmInstance, *providers: ParameterProvider) -> VmModule:
    inner = [p._provider for p in providers]
    prototype = IoParametersModule(inner)
    exports = [(n, i, f.cconv.text, ()) for i, (n, f) in enumerate(sorted(prototype._functions.items()))]
    return VmModule.native("io_parameters", IO_PARAMETERS_MODULE_VERSION,
                           lambda context: IoParametersModule(inner), exports)


class SplatValue:
    def __init__(self, pattern, count):
        arr = np.asarray(pattern)
        if arr.size != 1:
            raise ArgumentError("SplatValue requires an array of a single element")
        self.pattern = pattern
        logical = count if isinstance(count, int) else int(np.prod(count))
        self.total_length = logical * arr.itemsize

    def __repr__(self):
        return f"SplatValue({self.pattern} of {self.total_length})"


def save_archive_file(entries: dict, file_path) -> None:
    """Writes an .irpa archive of `entries` (buffers, or SplatValues)."""
    index = ParameterIndex()
    for key, value in entries.items():
        if isinstance(value, SplatValue):
            index.add_splat(key, value.pattern, value.total_length)
        else:
            index.add_buffer(key, value)
    index.create_archive_file(os.fspath(file_path))


_METADATA_VERSION = "TENSORv0"
_DTYPE_NAMES = {np.dtype(n): n for n in ("float16", "float32", "float64", "int8", "uint8", "int16", "uint16",
                                         "int32", "uint32", "int64", "uint64", "bool", "complex64", "complex128")}


def parameter_index_add_numpy_ndarray(index: ParameterIndex, name: str, array: np.ndarray) -> None:
    """Adds `array` with metadata describing its dtype and shape."""
    dtype = array.dtype
    if dtype not in _DTYPE_NAMES:
        raise ArgumentError(f"Numpy dtype {dtype} not found.")
    desc = {"class_name": type(dtype).__name__, "is_complex": bool(np.issubdtype(dtype, np.complexfloating)),
            "is_floating_point": bool(np.issubdtype(dtype, np.floating)),
            "is_signed": bool(np.issubdtype(dtype, np.signedinteger)), "itemsize": dtype.itemsize}
    meta = {"type": "Tensor", "dtype": _DTYPE_NAMES[dtype], "shape": list(array.shape), "dtype_desc": desc}
    flat = array.copy() if array.ndim == 0 else np.ascontiguousarray(array).view(np.uint8)
    index.add_buffer(name, flat, metadata=f"{_METADATA_VERSION}:{json.dumps(meta)}")


def parameter_index_entry_as_numpy_flat_ndarray(entry: ParameterIndexEntry) -> np.ndarray:
    if entry.is_file:
        return np.asarray(entry.file_view)
    if entry.is_splat:
        return np.frombuffer(entry.splat_pattern, np.uint8).copy()
    raise ArgumentError(f"Unsupported ParameterIndexEntry: {entry}")


def parameter_index_entry_as_numpy_ndarray(entry: ParameterIndexEntry) -> np.ndarray:
    version, sep, body = entry.metadata.decode().partition(":")
    if not sep or version not in (_METADATA_VERSION, "PYTORCH"):
        raise ArgumentError(f'Invalid metadata for parameter index entry "{entry.key}"')
    d = json.loads(body)
    if d.get("type") != "Tensor":
        raise ArgumentError(f"Metadata for parameter entry {entry.key} is not a Tensor")
    names = {v: k for k, v in _DTYPE_NAMES.items()}
    if d.get("dtype") not in names:
        raise ArgumentError(f"Unsupported dtype for parameter entry {entry.key}")
    return parameter_index_entry_as_numpy_flat_ndarray(entry).view(names[d["dtype"]]).reshape(d["shape"])
