"""A bounds-checked FlatBuffer reader.

The Python `flatbuffers` runtime trusts its input; jitvm reads untrusted files, so every offset
read here is checked against the buffer before it is followed. Offsets between objects are
unsigned and point forward, so walking a FlatBuffer always terminates. What is read is held to
the rules IREE's loader (flatcc's verifier) applies: tables and vectors 4-byte aligned, a
field inside its table's declared size, a string followed by its zero terminator.
"""

from __future__ import annotations

import struct
from ..errors import FormatError

_U8 = struct.Struct("<B")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")

SCALAR_FORMATS = {
    "bool": "<?", "u8": "<B", "i8": "<b", "u16": "<H", "i16": "<h", "u32": "<I", "i32": "<i",
    "u64": "<Q", "i64": "<q", "f32": "<f", "f64": "<d",
}
SCALAR_SIZES = {kind: struct.calcsize(fmt) for kind, fmt in SCALAR_FORMATS.items()}


class FlatBuffer:
    """A view of one FlatBuffer inside a larger buffer (the file, possibly mmapped)."""

    __slots__ = ("data", "size", "where")

    def __init__(self, data: memoryview, where: str = "FlatBuffer"):
        self.data = data
        self.size = len(data)
        self.where = where

    def fail(self, what: str, at: int) -> FormatError:
        return FormatError(f"{self.where}: {what} (at byte {at} of {self.size})")

    def check(self, pos: int, length: int, what: str) -> None:
        if pos < 0 or length < 0 or pos + length > self.size:
            raise self.fail(f"{what} of {length} bytes runs outside the buffer", pos)

    def u8(self, pos: int) -> int:
        self.check(pos, 1, "u8")
        return self.data[pos]

    def u16(self, pos: int) -> int:
        self.check(pos, 2, "u16")
        return _U16.unpack_from(self.data, pos)[0]

    def u32(self, pos: int) -> int:
        self.check(pos, 4, "u32")
        return _U32.unpack_from(self.data, pos)[0]

    def i32(self, pos: int) -> int:
        self.check(pos, 4, "i32")
        return _I32.unpack_from(self.data, pos)[0]

    def scalar(self, pos: int, kind: str):
        fmt = struct.Struct(SCALAR_FORMATS[kind])
        self.check(pos, fmt.size, kind)
        return fmt.unpack_from(self.data, pos)[0]

    def deref(self, pos: int, what: str) -> int:
        """Follows the forward uoffset stored at `pos`."""
        target = pos + self.u32(pos)
        if target >= self.size:
            raise self.fail(f"{what} points past the end of the buffer", pos)
        return target

    def root(self) -> "Table":
        return Table(self, self.deref(0, "root table offset"), "root")


class Table:
    """One table: its position and its vtable, both validated on construction."""

    __slots__ = ("fb", "pos", "vtable", "vtable_size", "size", "name")

    def __init__(self, fb: FlatBuffer, pos: int, name: str):
        self.fb = fb
        self.pos = pos
        self.name = name
        if pos & 3:
            raise fb.fail(f"{name} is not 4-byte aligned", pos)
        vtable = pos - fb.i32(pos)
        fb.check(vtable, 4, f"vtable of {name}")
        if vtable & 1:
            raise fb.fail(f"vtable of {name} is not 2-byte aligned", vtable)
        vtable_size = fb.u16(vtable)
        if vtable_size < 4 or vtable_size & 1:
            raise fb.fail(f"vtable of {name} has invalid size {vtable_size}", vtable)
        fb.check(vtable, vtable_size, f"vtable of {name}")
        self.size = fb.u16(vtable + 2)
        fb.check(pos, self.size, f"{name} (its declared size)")
        self.vtable = vtable
        self.vtable_size = vtable_size

    def field(self, index: int, size: int = 4) -> int:
        """Absolute position of field `index` (`size` bytes, inside the table's declared
        size), or 0 when it is absent."""
        entry = 4 + 2 * index
        if entry >= self.vtable_size:
            return 0
        offset = self.fb.u16(self.vtable + entry)
        if offset == 0:
            return 0
        if offset + size > self.size:
            raise self.fb.fail(f"field {index} of {self.name} ({size} bytes at offset {offset}) lies outside the "
                               f"table's {self.size} bytes", self.pos)
        return self.pos + offset

    def scalar(self, index: int, kind: str, default=0):
        pos = self.field(index, SCALAR_SIZES[kind])
        return default if pos == 0 else self.fb.scalar(pos, kind)

    def has(self, index: int) -> bool:
        return self.field(index, 1) != 0

    def string(self, index: int, what: str) -> str | None:
        start, count = self.vector_span(index, 1, what)
        if start is None:
            return None
        if start + count >= self.fb.size or self.fb.data[start + count] != 0:
            raise self.fb.fail(f"{self.name}.{what} is not zero-terminated", start + count)
        try:
            return bytes(self.fb.data[start:start + count]).decode("utf-8")
        except UnicodeDecodeError as e:
            raise self.fb.fail(f"{self.name}.{what} is not valid UTF-8 ({e.reason})", e.start)

    def bytes(self, index: int, what: str) -> memoryview | None:
        """A [ubyte] vector or a string, as a zero-copy view."""
        start, count = self.vector_span(index, 1, what)
        if start is None:
            return None
        return self.fb.data[start:start + count]

    def table(self, index: int, what: str) -> "Table | None":
        pos = self.field(index)
        if pos == 0:
            return None
        return Table(self.fb, self.fb.deref(pos, f"{self.name}.{what}"), f"{self.name}.{what}")

    def tables(self, index: int, what: str) -> list["Table"]:
        start, count = self.vector_span(index, 4, what)
        if start is None:
            return []
        fb = self.fb
        return [Table(fb, fb.deref(start + 4 * i, f"{what}[{i}]"), f"{what}[{i}]") for i in range(count)]

    def structs(self, index: int, layout: struct.Struct, what: str) -> list[tuple]:
        start, count = self.vector_span(index, layout.size, what)
        if start is None:
            return []
        return list(layout.iter_unpack(self.fb.data[start:start + count * layout.size]))

    def scalars(self, index: int, kind: str, what: str) -> list:
        return [v[0] for v in self.structs(index, struct.Struct(SCALAR_FORMATS[kind]), what)]

    def vector_span(self, index: int, element_size: int, what: str) -> tuple[int | None, int]:
        """(position of the first element, element count) of a vector field, or (None, 0)."""
        pos = self.field(index)
        if pos == 0:
            return None, 0
        vec = self.fb.deref(pos, f"{self.name}.{what}")
        if vec & 3:
            raise self.fb.fail(f"vector {self.name}.{what} is not 4-byte aligned", vec)
        count = self.fb.u32(vec)
        self.fb.check(vec + 4, count * element_size, f"vector {self.name}.{what} ({count} elements)")
        return vec + 4, count


def union_tables(table: Table, type_index: int, value_index: int, what: str) -> list[tuple[int, Table | None]]:
    """A vector of unions: parallel vectors of type tags and table offsets; tag 0 means NONE."""
    tags = table.scalars(type_index, "u8", f"{what}_type")
    start, count = table.vector_span(value_index, 4, what)
    if len(tags) != count:
        raise table.fb.fail(f"{what}: {len(tags)} type tags for {count} values", table.pos)
    fb = table.fb
    out: list[tuple[int, Table | None]] = []
    for i, tag in enumerate(tags):
        if tag == 0:
            out.append((0, None))
        else:
            out.append((tag, Table(fb, fb.deref(start + 4 * i, f"{what}[{i}]"), f"{what}[{i}]")))
    return out
