"""Helpers for the verifier tests: find an instruction, locate an operand's bytes, patch a copy.

Negative tests break one rule at a known place in a real module; these helpers find that
place with the decoder (instruction pc, then the operand's offset by the ISA's encoding
rules) so a test names the instruction it breaks instead of a magic file offset.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from jitvm.frontend import isa
from jitvm.frontend.decode import decode_function
from jitvm.frontend.flatbuf import FlatBuffer
from jitvm.frontend.module import BytecodeModule, load_module
from jitvm.frontend import schema
from jitvm.fuzz.mutation import descriptor_table_offset

_FIXED = {isa.REG: 2, isa.GLOBAL: 4, isa.RODATA: 4, isa.FUNC: 4, isa.TYPE: 4, isa.TARGET: 4}
_IMM = {"i32": 4, "i64": 8, "f32": 4, "f64": 8}


def _field_size(f: isa.Field, value, at: int) -> tuple[int, int]:
    """(padding before, bytes) of one encoded field starting at function offset `at`."""
    if f.kind in _FIXED:
        return 0, _FIXED[f.kind]
    if f.kind == isa.IMM:
        return 0, _IMM[f.bank]
    if f.kind == isa.STRING:
        return 0, 2 + len(value)
    pad = at & 1
    if f.kind in (isa.REGS, isa.SEGMENTS):
        return pad, 2 + 2 * len(value)
    if f.kind == isa.REMAP:
        return pad, 2 + 4 * len(value)
    if f.kind == isa.CASES:
        size, pos = 2, at + 2
        for _, remap in value:
            pos += 4
            p = pos & 1
            size += 4 + p + 2 + 4 * len(remap)
            pos += p + 2 + 4 * len(remap)
        return 0, size
    raise AssertionError(f.kind)


def field_offset(ins, name: str) -> int:
    """Function-relative offset of the first byte of operand `name` (after any alignment)."""
    at = ins.pc + len(ins.op.encoded)
    for f, value in zip(ins.op.fields, ins.args):
        pad, size = _field_size(f, value, at)
        if f.name == name:
            return at + pad
        at += pad + size
    raise KeyError(name)


@dataclass
class Located:
    """An instruction of a module file, with what is needed to patch its bytes."""

    path: Path | None  # None when the module came from bytes
    module: BytecodeModule
    ordinal: int
    index: int
    ins: object
    instructions: list

    def file_offset(self, pc: int) -> int:
        d = self.module.functions[self.ordinal]
        return self.module.bytecode_file_offset + d.bytecode_offset + pc

    def operand_offset(self, name: str) -> int:
        return self.file_offset(field_offset(self.ins, name))


def instructions(module: BytecodeModule, ordinal: int) -> list:
    return decode_function(module.function_bytes(ordinal))


def find(source, predicate) -> Located:
    """The first instruction of the module (a path or bytes) for which predicate(module, ins) holds."""
    is_bytes = isinstance(source, (bytes, bytearray))
    path = None if is_bytes else Path(source)
    m = load_module(bytes(source) if is_bytes else path.read_bytes(), "<bytes>" if is_bytes else str(path))
    for ordinal in range(len(m.functions)):
        ins_list = instructions(m, ordinal)
        for index, ins in enumerate(ins_list):
            if predicate(m, ins):
                return Located(path, m, ordinal, index, ins, ins_list)
    raise LookupError(f"{path or 'module'}: no instruction matches")


def patch(data: bytes, offset: int, new: bytes) -> bytes:
    return data[:offset] + new + data[offset + len(new):]


def u16(v: int) -> bytes:
    return struct.pack("<H", v)


def u32(v: int) -> bytes:
    return struct.pack("<I", v)


def i32(v: int) -> bytes:
    return struct.pack("<i", v)


DESCRIPTOR_FIELDS = {"bytecode_offset": (0, "<i"), "bytecode_length": (4, "<i"), "requirements": (8, "<I"),
                     "reserved": (12, "<h"), "block_count": (14, "<h"), "i32_register_count": (16, "<h"),
                     "ref_register_count": (18, "<h")}


def patch_descriptor(data: bytes, module: BytecodeModule, ordinal: int, name: str, value: int) -> bytes:
    offset, fmt = DESCRIPTOR_FIELDS[name]
    at = descriptor_table_offset(module) + schema.FUNCTION_DESCRIPTOR.size * ordinal + offset
    return patch(data, at, struct.pack(fmt, value))


# --- FlatBuffer locations: where a table field, string or vector count sits in the file ----

def _root(module: BytecodeModule):
    return FlatBuffer(module.archive.flatbuffer).root()


def _file(module: BytecodeModule, fb_pos: int) -> int:
    return module.archive.flatbuffer_offset + fb_pos


def root_field_offset(module: BytecodeModule, name: str) -> int:
    """File offset of a scalar field of the root table (it must be present in the file)."""
    pos = _root(module).field(schema.BYTECODE_MODULE.slot(name))
    assert pos, f"{name} is not written in this module"
    return _file(module, pos)


def vector_count_offset(module: BytecodeModule, name: str, element_size: int = 4) -> int:
    """File offset of the u32 element count of a root vector field."""
    start, _ = _root(module).vector_span(schema.BYTECODE_MODULE.slot(name), element_size, name)
    return _file(module, start - 4)


def _element(module: BytecodeModule, vector: str, index: int):
    return _root(module).tables(schema.BYTECODE_MODULE.slot(vector), vector)[index]


def element_field_offset(module: BytecodeModule, vector: str, index: int, sub: schema.TableSchema,
                         name: str) -> int:
    """File offset of scalar field `name` of table `vector[index]`."""
    pos = _element(module, vector, index).field(sub.slot(name))
    assert pos, f"{vector}[{index}].{name} is not written in this module"
    return _file(module, pos)


def element_string_offset(module: BytecodeModule, vector: str, index: int, sub: schema.TableSchema,
                          name: str) -> int:
    """File offset of the first character of string field `name` of table `vector[index]`."""
    table = _element(module, vector, index)
    start, _ = table.vector_span(sub.slot(name), 1, name)
    return _file(module, start)


def state_field_offset(module: BytecodeModule, name: str) -> int:
    state = _root(module).table(schema.BYTECODE_MODULE.slot("module_state"), "module_state")
    pos = state.field(schema.MODULE_STATE.slot(name))
    assert pos, f"module_state.{name} is not written in this module"
    return _file(module, pos)
