"""Reading parameter archives into an index: `.irpa`, `.safetensors` and `.gguf`, as IREE does.

The format comes from the file's extension (or a bare extension given as the format).
Every entry references the mapped file; nothing is copied. Malformed files raise
jitvm.Trap with the status IREE's parsers return.
"""

from __future__ import annotations

import json
import struct
from pathlib import PurePath

from .index import FileHandle, ParameterEntry, ParameterIndex, _error

IRPA_MAGIC = 0x41505249  # "IRPA"
_IRPA_PREFIX = struct.Struct("<IHHQQQ")  # magic, version major/minor, header size, next header, flags
_IRPA_V0 = struct.Struct("<Q" + "QQ" * 3)  # entry count; entry, metadata, storage segments
_ENTRY = struct.Struct("<QIQQQQQQ")  # size, type, flags, name range, metadata range, minimum alignment
_SPLAT = struct.Struct("<Q16sB")
_DATA = struct.Struct("<QQ")
ENTRY_ALIGNMENT = 16
ENTRY_SKIP, ENTRY_SPLAT, ENTRY_DATA = 0, 1, 2


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def parse_irpa(handle: FileHandle, index: ParameterIndex, base: int = 0) -> None:
    data = handle.view
    n = len(data)
    if n < base + _IRPA_PREFIX.size:
        raise _error("INVALID_ARGUMENT", "not enough bytes for a valid IRPA header; file may be empty or truncated")
    magic, major, minor, header_size, next_header, _flags = _IRPA_PREFIX.unpack_from(data, base)
    if magic != IRPA_MAGIC:
        raise _error("INVALID_ARGUMENT", f"IRPA file magic missing or invalid {magic:08X}; expected {IRPA_MAGIC:08X}")
    if header_size > n:
        raise _error("OUT_OF_RANGE", f"file buffer underrun parsing header of reported size {header_size} "
                                     f"(only {n} bytes available)")
    if next_header and n < base + next_header + _IRPA_PREFIX.size:
        raise _error("OUT_OF_RANGE", f"file buffer underrun verifying linked header at offset {base + next_header}")
    if major != 0:
        raise _error("UNIMPLEMENTED", f"IRPA major version {major}.{minor} not supported by this runtime")
    if minor > 0:
        raise _error("UNIMPLEMENTED", f"IRPA version {major}.{minor} not supported (major supported 0.0)")
    if header_size < _IRPA_PREFIX.size + _IRPA_V0.size or base + _IRPA_PREFIX.size + _IRPA_V0.size > n:
        raise _error("INVALID_ARGUMENT", "IRPA v0 header truncated")
    count, *ranges = _IRPA_V0.unpack_from(data, base + _IRPA_PREFIX.size)
    segments = {}
    for name, (offset, length) in zip(("entry", "metadata", "storage"), zip(ranges[::2], ranges[1::2])):
        if base + offset + length > n:
            raise _error("OUT_OF_RANGE", f"file segment out of range ({base + offset} to {base + offset + length - 1} "
                                         f"for {length} bytes) verifying {name} segment")
        segments[name] = (base + offset, length)
    meta_at, meta_len = segments["metadata"]
    store_at, store_len = segments["storage"]

    def metadata(offset: int, length: int, what: str) -> bytes:
        if offset + length > meta_len:
            raise _error("OUT_OF_RANGE", f"metadata segment reference out of range resolving {what}")
        return bytes(data[meta_at + offset:meta_at + offset + length])

    at, remaining = segments["entry"]
    for _ in range(count):
        if remaining < _ENTRY.size:
            raise _error("OUT_OF_RANGE", "entry table truncated; insufficient bytes for base entry header")
        size, kind, _flags, name_off, name_len, meta_off, meta_len_e, _align_req = _ENTRY.unpack_from(data, at)
        if size < _ENTRY.size or remaining < size:
            raise _error("OUT_OF_RANGE", "entry table truncated; insufficient bytes for sized header")
        body = at + _ENTRY.size
        at, remaining = at + _align(size, ENTRY_ALIGNMENT), remaining - _align(size, ENTRY_ALIGNMENT)
        key = metadata(name_off, name_len, "entry name").decode("utf-8", "replace")
        meta = metadata(meta_off, meta_len_e, "entry metadata")
        if kind == ENTRY_SKIP:
            continue
        if kind == ENTRY_SPLAT:
            if size < _ENTRY.size + _SPLAT.size:
                raise _error("OUT_OF_RANGE", "splat entry length underflow")
            length, pattern, pattern_length = _SPLAT.unpack_from(data, body)
            if pattern_length > 16:
                raise _error("INVALID_ARGUMENT", f"splat pattern length {pattern_length} out of bounds 16")
            index.add(ParameterEntry(key, length, meta, splat=pattern[:pattern_length]))
        elif kind == ENTRY_DATA:
            if size < _ENTRY.size + _DATA.size:
                raise _error("OUT_OF_RANGE", "data entry length underflow")
            offset, length = _DATA.unpack_from(data, body)
            if offset + length > store_len:
                raise _error("OUT_OF_RANGE", f"storage segment reference out of range ({offset} to "
                                             f"{offset + length - 1} for {length} bytes, segment_size={store_len})")
            index.add(ParameterEntry(key, length, meta, handle=handle, offset=store_at + offset))
        else:
            raise _error("UNIMPLEMENTED", f"parser does not support entry type {kind}")
    if next_header:
        parse_irpa(handle, index, base + next_header)


def parse_safetensors(handle: FileHandle, index: ParameterIndex) -> None:
    data = handle.view
    if len(data) < 8:
        raise _error("OUT_OF_RANGE", "insufficient capacity for safetensors header length")
    (header_length,) = struct.unpack_from("<Q", data, 0)
    if header_length > len(data) - 8:
        raise _error("OUT_OF_RANGE", f"insufficient capacity for safetensors header data ({header_length} bytes)")
    try:
        header = json.loads(bytes(data[8:8 + header_length]))
    except (UnicodeDecodeError, ValueError) as e:
        raise _error("INVALID_ARGUMENT", f"safetensors header is not valid JSON: {e}") from None
    if not isinstance(header, dict):
        raise _error("INVALID_ARGUMENT", "safetensors header must be a JSON object")
    base = 8 + header_length
    available = len(data) - base
    for key, value in header.items():
        if key == "__metadata__":
            continue
        offsets = value.get("data_offsets") if isinstance(value, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)):
            raise _error("INVALID_ARGUMENT", f"failed to parse entry data offsets of '{key}'")
        begin, end = offsets
        if not 0 <= begin <= end <= available:
            raise _error("INVALID_ARGUMENT", f"entry '{key}' has data offsets outside of the available data "
                                             f"(begin={begin}, end={end}, available={available})")
        index.add(ParameterEntry(key, end - begin, b"", handle=handle, offset=base + begin))


GGUF_MAGIC = 0x46554747  # "GGUF"
GGUF_VERSIONS = (2, 3)
GGUF_DEFAULT_ALIGNMENT = 32
# ggml tensor type -> (block size in elements, bytes per block), as IREE's parser knows them
GGML_TYPES = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
              9: (32, 40), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210),
              15: (256, 292), 16: (1, 1), 17: (1, 2), 18: (1, 4)}
_GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
GGUF_STRING, GGUF_ARRAY = 8, 9


class _Reader:
    def __init__(self, data: memoryview):
        self.data = data
        self.at = 0

    def take(self, fmt: str):
        size = struct.calcsize("<" + fmt)
        if self.at + size > len(self.data):
            raise _error("OUT_OF_RANGE", f"file buffer underrun parsing {size} byte value")
        value = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += size
        return value[0] if len(value) == 1 else value

    def string(self) -> str:
        n = self.take("Q")
        if self.at + n > len(self.data):
            raise _error("OUT_OF_RANGE", f"file buffer underrun parsing {n} byte string")
        text = bytes(self.data[self.at:self.at + n]).decode("utf-8", "replace")
        self.at += n
        return text

    def value(self, kind: int):
        if kind in _GGUF_SCALARS:
            return self.take(_GGUF_SCALARS[kind])
        if kind == GGUF_STRING:
            return self.string()
        if kind == GGUF_ARRAY:
            element, count = self.take("I"), self.take("Q")
            return [self.value(element) for _ in range(count)]
        raise _error("INVALID_ARGUMENT", f"unsupported GGUF metadata value type {kind}")


def parse_gguf(handle: FileHandle, index: ParameterIndex) -> None:
    r = _Reader(handle.view)
    magic = r.take("I")
    if magic != GGUF_MAGIC:
        raise _error("INVALID_ARGUMENT", f"GGUF magic mismatch; expected {GGUF_MAGIC:08X} but got {magic:08X}")
    version = r.take("I")
    if version not in GGUF_VERSIONS:
        raise _error("UNIMPLEMENTED", f"GGUF format version {version} is unsupported; expected version "
                                      f"{GGUF_VERSIONS[0]}-{GGUF_VERSIONS[-1]}")
    tensor_count, kv_count = r.take("Q"), r.take("Q")
    alignment = GGUF_DEFAULT_ALIGNMENT
    for _ in range(kv_count):
        key, kind = r.string(), r.take("I")
        value = r.value(kind)
        if key == "general.alignment":
            if kind != 4:
                raise _error("INVALID_ARGUMENT", "general.alignment metadata value must be uint32")
            alignment = value
    tensors = []
    for _ in range(tensor_count):
        name, dims = r.string(), r.take("I")
        shape = [r.take("Q") for _ in range(dims)]
        ggml_type, offset = r.take("I"), r.take("Q")
        tensors.append((name, shape, ggml_type, offset))
    base = _align(r.at, alignment)
    available = len(handle.view) - base
    for name, shape, ggml_type, begin in tensors:
        if ggml_type not in GGML_TYPES:
            raise _error("UNIMPLEMENTED", f"GGML tensor type {ggml_type} not supported")
        block, block_bytes = GGML_TYPES[ggml_type]
        count = 1
        for d in shape:
            count *= d
        size = count * block_bytes // block
        if begin + size > available:
            raise _error("INVALID_ARGUMENT", f"entry has data offsets outside of the available data "
                                             f"(begin={begin}, end={begin + size}, available={available})")
        index.add(ParameterEntry(name, size, b"", handle=handle, offset=base + begin))


PARSERS = {"irpa": parse_irpa, "safetensors": parse_safetensors, "gguf": parse_gguf}


def parse(handle: FileHandle, format_or_path: str, index: ParameterIndex) -> None:
    """Adds the entries of `handle` in the format named by `format_or_path`'s extension."""
    path = PurePath(format_or_path)
    extension = (path.suffix[1:] if path.suffix else path.name).lower()
    parser = PARSERS.get(extension)
    if parser is None:
        raise _error("UNIMPLEMENTED", f"unsupported file format `{extension}`; ensure the extension matches one of "
                                      f"the supported formats: [.irpa, .gguf, .safetensors]")
    parser(handle, index)


def load_archive(index: ParameterIndex, path: str, format: str | None = None, readable: bool = True,
                 writable: bool = False, map_file: bool = True) -> None:
    """Adds the entries of the archive at `path` (format from its extension unless given)."""
    parse(FileHandle.open(path, readable, writable, map_file), format or path, index)


def open_index(path: str, format: str | None = None) -> ParameterIndex:
    index = ParameterIndex()
    load_archive(index, path, format)
    return index
