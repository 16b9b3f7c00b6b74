"""Parameter indices: named byte ranges of mapped files (or splat patterns), and providers.

A file is mapped once (read-only unless opened writable) and every entry is a view of the
mapping: loading a parameter aliases those bytes, as IREE imports host allocations.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass

from ....errors import STATUS_CODES, Error, Trap
from ...vm.objects import address_of


def _error(status: str, message: str) -> Trap:
    return Trap(STATUS_CODES[status], message)


class FileHandle:
    """Host memory holding a file's bytes (a mapping or a caller's buffer), kept alive here."""

    def __init__(self, memory, readable: bool = True, writable: bool = False, keepalive=None, path: str | None = None):
        view = memoryview(memory).cast("B")
        if writable and view.readonly:
            raise Error("a writable file handle needs writable memory")
        self.view = view
        self.readable = readable
        self.writable = writable
        self.path = path
        self._keepalive = keepalive if keepalive is not None else memory

    @classmethod
    def open(cls, path: str, readable: bool = True, writable: bool = False, map_file: bool = True) -> "FileHandle":
        """The file at `path`, mapped (or read into memory when `map_file` is false)."""
        try:
            with open(path, "r+b" if writable else "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if not map_file or size == 0:
                    data = bytearray(f.read()) if writable else f.read()
                    return cls(data, readable, writable, path=path)
                access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
                mapping = mmap.mmap(f.fileno(), 0, access=access)
        except OSError as e:
            raise _error("NOT_FOUND", f"{path}: cannot open parameter file ({e.strerror or e})") from None
        return cls(mapping, readable, writable, keepalive=mapping, path=path)

    @property
    def length(self) -> int:
        return len(self.view)

    @property
    def address(self) -> int:
        return address_of(self.view)

    def __repr__(self):
        return f"FileHandle<{self.path or 'host_allocation'}:{self.length}>"


@dataclass(frozen=True)
class ParameterEntry:
    """One parameter: `length` bytes at `offset` of `handle`, or a repeated `splat` pattern."""

    key: str
    length: int
    metadata: bytes = b""
    handle: FileHandle | None = None
    offset: int = 0
    splat: bytes | None = None

    @property
    def is_file(self) -> bool:
        return self.handle is not None

    @property
    def is_splat(self) -> bool:
        return self.splat is not None

    def view(self) -> memoryview:
        """The entry's bytes (file entries only): a view of the mapping, no copy."""
        return self.handle.view[self.offset:self.offset + self.length]

    def read(self, offset: int, length: int) -> memoryview | bytes:
        """`length` bytes from `offset` inside the parameter (splats are expanded)."""
        if offset > self.length or length > self.length - offset:
            raise _error("OUT_OF_RANGE", f"parameter '{self.key}' range (offset={offset}, length={length}) "
                                         f"exceeds its {self.length} bytes")
        if self.splat is not None:
            unit = self.splat
            start = offset % len(unit)
            reps = (start + length + len(unit) - 1) // len(unit)
            return (unit * reps)[start:start + length]
        if not self.handle.readable:
            raise _error("PERMISSION_DENIED", f"parameter '{self.key}' is not readable")
        return self.view()[offset:offset + length]


class ParameterIndex:
    """Entries in the order they were added (duplicates allowed; lookups take the first)."""

    def __init__(self):
        self.entries: list[ParameterEntry] = []
        self._by_key: dict[str, ParameterEntry] = {}
        self.handles: list[FileHandle] = []

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, i: int) -> ParameterEntry:
        return self.entries[i]

    def add(self, entry: ParameterEntry) -> None:
        if entry.handle is not None and entry.offset + entry.length > entry.handle.length:
            raise _error("OUT_OF_RANGE", f"parameter '{entry.key}' (offset {entry.offset}, length {entry.length}) "
                                         f"extends past its {entry.handle.length}-byte file")
        if entry.splat is not None and not 1 <= len(entry.splat) <= 16:
            raise _error("INVALID_ARGUMENT", f"splat pattern of parameter '{entry.key}' must be 1 to 16 bytes")
        self.entries.append(entry)
        self._by_key.setdefault(entry.key, entry)
        if entry.handle is not None and all(h is not entry.handle for h in self.handles):
            self.handles.append(entry.handle)

    def lookup(self, key: str) -> ParameterEntry:
        entry = self._by_key.get(key)
        if entry is None:
            raise _error("NOT_FOUND", f"no parameter found in index with key '{key}'")
        return entry


class ParameterProvider:
    """An index served under a scope ("" serves unscoped parameters)."""

    def __init__(self, index: ParameterIndex, scope: str = ""):
        self.index = index
        self.scope = scope

    def handles(self, scope: str) -> bool:
        return scope == self.scope

