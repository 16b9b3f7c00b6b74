"""The BytecodeModuleDef FlatBuffer schema (bytecode 17.0), declared once.

The reader walks files with it and the module writer builds files from it, so a field's slot
is written down in exactly one place. A union takes two slots, its type tag then its value,
as the FlatBuffers format lays them out.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .flatbuf import Table, union_tables


@dataclass(frozen=True)
class Field:
    """One field of a FlatBuffer table, in declaration order."""

    name: str
    kind: str  # scalar kind ("u32", ...), "string", "bytes", "table", "tables", "structs", "unions"
    sub: object = None  # TableSchema, struct layout, or {tag: TableSchema} for unions
    default: object = None


@dataclass(frozen=True)
class TableSchema:
    """A FlatBuffer table's fields and their vtable slots."""

    name: str
    fields: tuple[Field, ...]
    slots: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        slot = 0
        for f in self.fields:
            self.slots[f.name] = slot
            slot += 2 if f.kind == "unions" or f.kind == "union" else 1

    def slot(self, name: str) -> int:
        return self.slots[name]


def _table(name: str, *fields: Field) -> TableSchema:
    return TableSchema(name, tuple(fields))


ATTR = _table("AttrDef", Field("key", "string"), Field("value", "string"))
TYPE = _table("TypeDef", Field("full_name", "string"))
SIGNATURE = _table("FunctionSignatureDef",
                   Field("calling_convention", "string"), Field("attrs", "tables", ATTR))
DEPENDENCY = _table("ModuleDependencyDef", Field("name", "string"),
                    Field("minimum_version", "u32", default=0), Field("flags", "u32", default=1))
IMPORT = _table("ImportFunctionDef", Field("full_name", "string"),
                Field("signature", "table", SIGNATURE), Field("flags", "u32", default=1))
EXPORT = _table("ExportFunctionDef", Field("local_name", "string"),
                Field("internal_ordinal", "i32", default=0))
UNCOMPRESSED = _table("UncompressedDataDef")
RODATA = _table("RodataSegmentDef",
                Field("compression_type", "union", {1: UNCOMPRESSED}),
                Field("embedded_data", "bytes"),
                Field("external_data_offset", "u64", default=0),
                Field("external_data_length", "u64", default=0))
RWDATA = _table("RwdataSegmentDef", Field("byte_size", "i32", default=0))
MODULE_STATE = _table("ModuleStateDef", Field("global_bytes_capacity", "i32", default=0),
                      Field("global_ref_count", "i32", default=0))

# struct FunctionDescriptor: offset, length, requirements, reserved, block_count,
# i32_register_count, ref_register_count.
FUNCTION_DESCRIPTOR = struct.Struct("<iiIhhhh")
# struct BytecodeLocationDef: bytecode_offset, location.
BYTECODE_LOCATION = struct.Struct("<ii")

CALL_SITE_LOC = _table("CallSiteLocDef", Field("callee", "i32", default=0),
                       Field("caller", "i32", default=0))
FILE_LINE_COL_LOC = _table("FileLineColLocDef", Field("filename", "string"),
                           Field("line", "i32", default=0), Field("column", "i32", default=0))
FUSED_LOC = _table("FusedLocDef", Field("metadata", "string"), Field("locations", "scalars", "i32"))
NAME_LOC = _table("NameLocDef", Field("name", "string"), Field("child_location", "i32", default=0))
LOCATION_TYPES = {1: CALL_SITE_LOC, 2: FILE_LINE_COL_LOC, 3: FUSED_LOC, 4: NAME_LOC}

FUNCTION_SOURCE_MAP = _table("FunctionSourceMapDef", Field("local_name", "string"),
                             Field("locations", "structs", BYTECODE_LOCATION))
DEBUG_DATABASE = _table("DebugDatabaseDef",
                        Field("location_table", "unions", LOCATION_TYPES),
                        Field("functions", "tables", FUNCTION_SOURCE_MAP))

BYTECODE_MODULE = _table(
    "BytecodeModuleDef",
    Field("name", "string"),
    Field("version", "u32", default=0),
    Field("requirements", "u32", default=0),
    Field("attrs", "tables", ATTR),
    Field("types", "tables", TYPE),
    Field("dependencies", "tables", DEPENDENCY),
    Field("imported_functions", "tables", IMPORT),
    Field("exported_functions", "tables", EXPORT),
    Field("function_signatures", "tables", SIGNATURE),
    Field("rodata_segments", "tables", RODATA),
    Field("rwdata_segments", "tables", RWDATA),
    Field("module_state", "table", MODULE_STATE),
    Field("function_descriptors", "structs", FUNCTION_DESCRIPTOR),
    Field("bytecode_version", "u32", default=0),
    Field("bytecode_data", "bytes"),
    Field("debug_database", "table", DEBUG_DATABASE),
)

FILE_IDENTIFIER = b"IREE"


def read(table: Table | None, schema: TableSchema) -> dict | None:
    """Reads a table into a dict of plain values; byte vectors stay zero-copy memoryviews.

    A union reads as (tag, dict) and a vector of unions as a list of those; `<name>__present`
    records whether an optional scalar was written and `<name>__offset` where a byte vector
    starts inside the FlatBuffer.
    """
    if table is None:
        return None
    out: dict = {}
    for f in schema.fields:
        slot = schema.slots[f.name]
        kind = f.kind
        if kind == "string":
            out[f.name] = table.string(slot, f.name)
        elif kind == "bytes":
            start, count = table.vector_span(slot, 1, f.name)
            out[f.name] = None if start is None else table.fb.data[start:start + count]
            out[f.name + "__offset"] = start or 0
        elif kind == "table":
            out[f.name] = read(table.table(slot, f.name), f.sub)
        elif kind == "tables":
            out[f.name] = [read(t, f.sub) for t in table.tables(slot, f.name)]
        elif kind == "structs":
            out[f.name] = table.structs(slot, f.sub, f.name)
        elif kind == "scalars":
            out[f.name] = table.scalars(slot, f.sub, f.name)
        elif kind == "union":
            tag = table.scalar(slot, "u8", 0)
            value = table.table(slot + 1, f.name) if tag else None
            out[f.name] = (tag, read(value, f.sub[tag]) if tag in f.sub else None)
        elif kind == "unions":
            out[f.name] = [(tag, read(t, f.sub[tag]) if tag in f.sub else None)
                           for tag, t in union_tables(table, slot, slot + 1, f.name)]
        else:
            out[f.name] = table.scalar(slot, kind, f.default)
            out[f.name + "__present"] = table.has(slot)
    return out
