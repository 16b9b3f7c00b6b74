"""Writing the .vmfb envelope the way iree-compile does: a ZIP64 archive of stored entries.

Entry `module.fb` holds the size-prefixed FlatBuffer, padded to 64 bytes; the rodata base is
the 64-byte boundary after it, and each external rodata segment is its own entry whose
contents start at the segment's alignment relative to that base (so the FlatBuffer's
`external_data_offset`s are plain offsets from the base). Local headers carry a padding
extra field that puts the contents exactly where they belong, then the ZIP64 sizes; CRCs
are computed while streaming and patched into the local headers afterwards, so a segment of
any size passes through in chunks and is never held whole in memory.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterable

from ...errors import Error
from ..archive import SEGMENT_ALIGNMENT

_LOCAL = struct.Struct("<IHHHHHIIIHH")  # signature ... file name length, extra field length
_EXTRA_HEADER = struct.Struct("<HH")
_ZIP64_LOCAL = struct.Struct("<HHQQ")  # id 1, size 16, uncompressed, compressed
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_ZIP64_CENTRAL = struct.Struct("<HHQQQ")  # id 1, size 24, uncompressed, compressed, header offset
_EOCD64 = struct.Struct("<IQHHIIQQQQ")
_EOCD64_LOCATOR = struct.Struct("<IIQI")
_EOCD = struct.Struct("<IHHHHIIH")

VERSION_ZIP64 = 0x2D  # 4.5
DATE_1980_01_01 = 0x21
PADDING_EXTRA_ID = 0xCAFE
MODULE_ENTRY = "module.fb"
_CRC_OFFSET = 14  # of the crc32 field in a local header


class ArchiveWriteError(Error):
    """The output cannot be written (I/O failure, a segment shorter or longer than declared)."""


def min_header_length(name: str) -> int:
    """Local header + name + padding extra header + ZIP64 extra: the least a header takes."""
    return _LOCAL.size + len(name.encode()) + _EXTRA_HEADER.size + _ZIP64_LOCAL.size


def align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


@dataclass(frozen=True)
class Entry:
    """One external file: where its header and contents go relative to the rodata base."""

    name: str
    length: int
    header_offset: int
    content_offset: int
    chunks: Callable[[], Iterable]  # yields bytes-like pieces totalling `length`


def plan_entries(files) -> list[Entry]:
    """Lays out (name, length, alignment, chunks) files after the rodata base, in order."""
    out = []
    tail = 0
    for name, length, alignment, chunks in files:
        if alignment < 1 or alignment & (alignment - 1) or alignment > SEGMENT_ALIGNMENT:
            raise ArchiveWriteError(f"{name}: alignment {alignment} must be a power of two up to "
                                    f"{SEGMENT_ALIGNMENT}")
        content = align(tail + min_header_length(name), alignment)
        out.append(Entry(name, length, tail, content, chunks))
        tail = content + length
    return out


class _Sink:
    """A seekable binary output with the position relative to where writing started."""

    def __init__(self, f: BinaryIO):
        self.f = f
        self.origin = f.tell()

    def tell(self) -> int:
        return self.f.tell() - self.origin

    def write(self, data) -> None:
        self.f.write(data)

    def zeros_to(self, position: int) -> None:
        gap = position - self.tell()
        if gap < 0:
            raise AssertionError("archive layout went backwards")
        self.f.write(bytes(gap))

    def patch(self, position: int, data: bytes) -> None:
        end = self.f.tell()
        self.f.seek(self.origin + position)
        self.f.write(data)
        self.f.seek(end)


def _local_header(sink: _Sink, name: str, content_at: int, length: int) -> None:
    encoded = name.encode()
    padding = content_at - sink.tell() - min_header_length(name)
    extra = _EXTRA_HEADER.size + padding + _ZIP64_LOCAL.size
    sink.write(_LOCAL.pack(0x04034B50, VERSION_ZIP64, 0, 0, 0, DATE_1980_01_01, 0,
                           0xFFFFFFFF, 0xFFFFFFFF, len(encoded), extra))
    sink.write(encoded)
    sink.write(_EXTRA_HEADER.pack(PADDING_EXTRA_ID, padding))
    sink.write(bytes(padding))
    sink.write(_ZIP64_LOCAL.pack(1, 16, length, length))


def _stream(sink: _Sink, name: str, length: int, chunks: Iterable) -> int:
    crc = 0
    written = 0
    for piece in chunks:
        view = memoryview(piece).cast("B")
        crc = zlib.crc32(view, crc)
        sink.write(view)
        written += len(view)
    if written != length:
        raise ArchiveWriteError(f"{name}: {written} bytes written where {length} were declared")
    return crc


def write_archive(f: BinaryIO, flatbuffer: bytes, entries: list[Entry]) -> None:
    """Writes module.fb, then every external entry at its planned place, then the directory."""
    sink = _Sink(f)
    records = []  # (name, header offset, length, crc)

    module_at = align(min_header_length(MODULE_ENTRY), SEGMENT_ALIGNMENT)
    padded = align(4 + len(flatbuffer), SEGMENT_ALIGNMENT) - 4
    contents = struct.pack("<I", padded) + flatbuffer + bytes(padded - len(flatbuffer))
    crc = zlib.crc32(contents)
    _local_header(sink, MODULE_ENTRY, module_at, len(contents))
    sink.patch(_CRC_OFFSET, struct.pack("<I", crc))
    sink.write(contents)
    records.append((MODULE_ENTRY, 0, len(contents), crc))

    base = align(sink.tell(), SEGMENT_ALIGNMENT)
    for e in entries:
        header_at = base + e.header_offset
        sink.zeros_to(header_at)
        _local_header(sink, e.name, base + e.content_offset, e.length)
        crc = _stream(sink, e.name, e.length, e.chunks())
        sink.patch(header_at + _CRC_OFFSET, struct.pack("<I", crc))
        records.append((e.name, header_at, e.length, crc))

    directory_at = sink.tell()
    for name, header_at, length, crc in records:
        encoded = name.encode()
        sink.write(_CENTRAL.pack(0x02014B50, 0x031E, VERSION_ZIP64, 0, 0, 0, DATE_1980_01_01, crc,
                                 0xFFFFFFFF, 0xFFFFFFFF, len(encoded), _ZIP64_CENTRAL.size, 0, 0, 0, 0,
                                 0xFFFFFFFF))
        sink.write(encoded)
        sink.write(_ZIP64_CENTRAL.pack(1, 24, length, length, header_at))
    directory_end = sink.tell()
    count = len(records)
    sink.write(_EOCD64.pack(0x06064B50, _EOCD64.size - 12, VERSION_ZIP64, VERSION_ZIP64, 0, 0, count, count,
                            directory_end - directory_at, directory_at))
    sink.write(_EOCD64_LOCATOR.pack(0x07064B50, 0, directory_end, 1))
    sink.write(_EOCD.pack(0x06054B50, 0, 0, count, count, directory_end - directory_at, 0xFFFFFFFF, 0))
