"""A FlatBuffer builder driven by the table declarations in `schema`.

Values are plain Python: a dict per table (field name -> value), lists for vectors, tuples
for structs, (tag, dict) for unions. Slots, kinds and defaults come from the same `Field`
declarations the reader uses, so writer and reader cannot disagree about a field.

The buffer is built back to front, as FlatBuffers are: an object must exist before anything
that points at it, and offsets point forward. Byte blobs (bytecode, embedded rodata) are
serialized first so they land at the end of the buffer and the metadata a loader reads first
stays together at the front.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ...errors import FormatError
from ..flatbuf import SCALAR_FORMATS
from ..schema import TableSchema

_SCALARS = {kind: struct.Struct(fmt) for kind, fmt in SCALAR_FORMATS.items()}
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U16 = struct.Struct("<H")
MAX_BUFFER = 0x7FFFFFFF  # offsets are 32-bit; FlatBuffers keep sizes below 2 GiB


@dataclass(frozen=True)
class Aligned:
    """A byte vector whose first element must sit at a multiple of `alignment`."""

    data: object  # bytes-like
    alignment: int = 16


class _Builder:
    """Back-to-front buffer: `size` bytes written so far, objects named by distance from the end."""

    def __init__(self):
        self.chunks: list[bytes] = []
        self.size = 0
        self.minalign = 4
        self.vtables: dict[bytes, int] = {}

    def prepend(self, data) -> int:
        if data:
            self.chunks.append(bytes(data))
            self.size += len(data)
        if self.size > MAX_BUFFER:
            raise FormatError("module metadata exceeds the 2 GiB a FlatBuffer can address; "
                              "store large constants as external rodata")
        return self.size

    def pad_for(self, following: int, alignment: int) -> None:
        """Pads so that after prepending `following` more bytes the position is aligned."""
        self.minalign = max(self.minalign, alignment)
        pad = (-(self.size + following)) % alignment
        if pad:
            self.prepend(bytes(pad))

    def vector(self, payload: bytes, count: int, alignment: int) -> int:
        """A vector: u32 count then `payload`, payload aligned to `alignment`."""
        self.pad_for(len(payload), max(alignment, 4))
        self.prepend(payload)
        return self.prepend(_U32.pack(count))

    def byte_vector(self, data, alignment: int = 1, terminator: bool = False) -> int:
        view = memoryview(data).cast("B") if not isinstance(data, (bytes, bytearray)) else data
        payload = bytes(view) + (b"\0" if terminator else b"")
        self.pad_for(len(payload), max(alignment, 4))
        self.prepend(payload)
        return self.prepend(_U32.pack(len(view)))

    def offset_vector(self, refs: list[int]) -> int:
        """A vector of uoffsets to objects already in the buffer."""
        self.pad_for(4 * len(refs), 4)
        n = len(refs)
        # Element i ends up at distance size + 4 * (n - i) from the end.
        payload = b"".join(_U32.pack(self.size + 4 * (n - i) - ref) for i, ref in enumerate(refs))
        self.prepend(payload)
        return self.prepend(_U32.pack(n))

    def table(self, fields: list[tuple[int, str, object]]) -> int:
        """A table from (slot, kind, value) where kind is a scalar kind or "offset" (a ref)."""
        layout = []  # (slot, size, kind, value), largest first so no interior padding is needed
        for slot, kind, value in fields:
            size = 4 if kind == "offset" else _SCALARS[kind].size
            layout.append((slot, size, kind, value))
        layout.sort(key=lambda x: -x[1])
        align = max([4] + [size for _, size, _, _ in layout])
        positions = {}
        table_size = 4  # the soffset to the vtable comes first
        for slot, size, _, _ in layout:
            at = (table_size + size - 1) // size * size
            positions[slot] = at
            table_size = at + size
        nslots = 1 + max([slot for slot, *_ in layout], default=-1)
        vtable = bytearray(_U16.pack(4 + 2 * nslots) + _U16.pack(table_size))
        for s in range(nslots):
            vtable += _U16.pack(positions.get(s, 0))
        vtable = bytes(vtable)

        vt_ref = self.vtables.get(vtable)
        if vt_ref is None:
            self.pad_for(len(vtable), 2)
            vt_ref = self.prepend(vtable)
            self.vtables[vtable] = vt_ref
        self.pad_for(table_size, align)
        table_ref = self.size + table_size
        body = bytearray(table_size)
        # The vtable sits closer to the end than the table: a negative soffset.
        _I32.pack_into(body, 0, vt_ref - table_ref)
        for slot, size, kind, value in layout:
            at = positions[slot]
            if kind == "offset":
                _U32.pack_into(body, at, (table_ref - at) - value)
            else:
                _SCALARS[kind].pack_into(body, at, value)
        return self.prepend(body)

    def finish(self, root: int, identifier: bytes) -> bytes:
        """root uoffset + file identifier in front; returns the finished buffer.

        The buffer will be stored after a 4-byte size prefix at an aligned file offset, and
        IREE checks alignment on absolute addresses, so prefix + buffer is what gets aligned.
        """
        self.pad_for(8 + 4, self.minalign)
        self.prepend(identifier)
        self.prepend(_U32.pack(self.size + 4 - root))
        out = b"".join(reversed(self.chunks))
        assert len(out) == self.size
        return out


class _Serializer:
    def __init__(self, builder: _Builder):
        self.b = builder
        self.blobs: dict[int, int] = {}  # id(value dict) and field -> ref, for pre-built blobs

    def blobs_first(self, value: dict, schema: TableSchema) -> None:
        """Serializes every byte-vector field of the tree so blobs end up last in the file."""
        for f in schema.fields:
            v = value.get(f.name)
            if v is None:
                continue
            if f.kind == "bytes":
                self.blobs[id(v)] = self._bytes(v)
            elif f.kind == "table":
                self.blobs_first(v, f.sub)
            elif f.kind == "tables":
                for item in v:
                    self.blobs_first(item, f.sub)
            elif f.kind == "union" and v[1] is not None:
                self.blobs_first(v[1], f.sub[v[0]])

    def _bytes(self, v) -> int:
        if isinstance(v, Aligned):
            return self.b.byte_vector(v.data, v.alignment)
        return self.b.byte_vector(v, 1)

    def table(self, value: dict, schema: TableSchema) -> int:
        unknown = set(value) - {f.name for f in schema.fields}
        if unknown:
            raise FormatError(f"{schema.name} has no field(s) {sorted(unknown)}")
        entries: list[tuple[int, str, object]] = []
        for f in schema.fields:
            v = value.get(f.name)
            if v is None:
                continue
            slot = schema.slot(f.name)
            kind = f.kind
            if kind == "string":
                entries.append((slot, "offset", self.b.byte_vector(v.encode("utf-8"), 1, terminator=True)))
            elif kind == "bytes":
                ref = self.blobs.get(id(v))
                entries.append((slot, "offset", ref if ref is not None else self._bytes(v)))
            elif kind == "table":
                entries.append((slot, "offset", self.table(v, f.sub)))
            elif kind == "tables":
                refs = [self.table(item, f.sub) for item in v]
                entries.append((slot, "offset", self.b.offset_vector(refs)))
            elif kind == "structs":
                payload = b"".join(f.sub.pack(*item) for item in v)
                entries.append((slot, "offset", self.b.vector(payload, len(v), 4)))
            elif kind == "scalars":
                s = _SCALARS[f.sub]
                payload = b"".join(s.pack(x) for x in v)
                entries.append((slot, "offset", self.b.vector(payload, len(v), s.size)))
            elif kind == "union":
                tag, sub = v
                if tag:
                    entries.append((slot, "u8", tag))
                    entries.append((slot + 1, "offset", self.table(sub, f.sub[tag])))
            elif kind == "unions":
                refs = [self.table(sub, f.sub[tag]) for tag, sub in v]
                entries.append((slot + 1, "offset", self.b.offset_vector(refs)))
                entries.append((slot, "offset", self.b.vector(bytes(tag for tag, _ in v), len(v), 1)))
            else:
                if v != f.default:
                    entries.append((slot, kind, v))
        return self.b.table(entries)


def build(value: dict, schema: TableSchema, identifier: bytes) -> bytes:
    """Serializes `value` as the root table of a FlatBuffer with a file identifier."""
    b = _Builder()
    s = _Serializer(b)
    s.blobs_first(value, schema)
    root = s.table(value, schema)
    return b.finish(root, identifier)
