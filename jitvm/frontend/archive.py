"""The .vmfb envelope: optional ZIP local header, size-prefixed FlatBuffer, external rodata.

iree-compile writes a ZIP whose single stored entry starts with a 4-byte length prefix and
the FlatBuffer; large constants follow the FlatBuffer at the next 64-byte boundary so they
can be mapped without copying. Opening a path memory-maps it: nothing past the FlatBuffer
is touched until someone reads a rodata segment.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from ..errors import FormatError
from .schema import FILE_IDENTIFIER

ZIP_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")
ZIP_LOCAL_SIGNATURE = 0x04034B50
SEGMENT_ALIGNMENT = 64


@dataclass(frozen=True)
class Archive:
    """Where things are inside one module file."""

    data: memoryview  # the whole file
    flatbuffer: memoryview  # the FlatBuffer proper (after the length prefix)
    flatbuffer_offset: int  # file offset of `flatbuffer`
    rodata_base: int  # file offset external rodata segments are relative to
    origin: str  # path or "<bytes>", for messages
    keepalive: object = None  # the mmap or bytes object that owns `data`

    def external(self, offset: int, length: int, what: str) -> memoryview:
        start = self.rodata_base + offset
        if offset < 0 or length < 0 or start + length > len(self.data):
            raise FormatError(
                f"{self.origin}: {what} (offset {offset}, {length} bytes after the rodata base "
                f"{self.rodata_base}) lies outside the {len(self.data)}-byte file")
        return self.data[start:start + length]


def _map(path: Path) -> tuple[memoryview, object]:
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                raise FormatError(f"{path}: the file is empty")
            mapping = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise FormatError(f"{path}: cannot open ({e.strerror or e})") from None
    return memoryview(mapping), mapping


def open_archive(source, origin: str | None = None) -> Archive:
    """Locates the FlatBuffer and the rodata base in a path (mapped) or a bytes-like object."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        data, keepalive = _map(path)
        origin = origin or str(path)
    else:
        try:
            data = memoryview(source).cast("B")
        except TypeError:
            raise FormatError(f"cannot read a module from a {type(source).__name__}") from None
        keepalive = source
        origin = origin or "<bytes>"
    return parse_archive(data, origin, keepalive)


def parse_archive(data: memoryview, origin: str, keepalive=None) -> Archive:
    start = 0
    if len(data) >= ZIP_LOCAL_HEADER.size and struct.unpack_from("<I", data, 0)[0] == ZIP_LOCAL_SIGNATURE:
        fields = ZIP_LOCAL_HEADER.unpack_from(data, 0)
        name_length, extra_length = fields[9], fields[10]
        start = ZIP_LOCAL_HEADER.size + name_length + extra_length
        if start > len(data):
            raise FormatError(
                f"{origin}: ZIP local header claims {name_length + extra_length} bytes of name and "
                f"extra fields but the file has only {len(data)} bytes")
    remaining = len(data) - start
    if remaining < 16:
        raise FormatError(
            f"{origin}: too short for a module ({remaining} bytes where a size-prefixed "
            f"FlatBuffer needs at least 16)")
    identifier = bytes(data[start + 8:start + 12])
    if identifier != FILE_IDENTIFIER:  # random bytes, another file type: say so, not a length complaint
        raise FormatError(
            f"{origin}: not a .vmfb (file identifier is {identifier!r}, expected {FILE_IDENTIFIER!r} at byte "
            f"{start + 8}: not an IREE VM module)")
    length = struct.unpack_from("<I", data, start)[0]
    if length > remaining - 4:
        raise FormatError(
            f"{origin}: FlatBuffer length prefix {length} exceeds the {remaining - 4} bytes present")
    fb_offset = start + 4
    if length < 8:
        raise FormatError(f"{origin}: FlatBuffer of {length} bytes is too short to hold a root table")
    rodata_base = (fb_offset + length + SEGMENT_ALIGNMENT - 1) & ~(SEGMENT_ALIGNMENT - 1)
    return Archive(data=data, flatbuffer=data[fb_offset:fb_offset + length],
                   flatbuffer_offset=fb_offset, rodata_base=rodata_base, origin=origin,
                   keepalive=keepalive)
