"""Instructions -> the VM assembly text iree-dump-module prints and iree-as-module reads.

Each op's dump form is a template in the ISA table; this module only knows how to render
each *kind* of field, so no opcode is named here.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from . import isa
from .isa import IMPORT_BIT
from .cconv import VALUE_CODES
from .decode import Instruction, Reg


def reg_name(reg: Reg, allow_move: bool = True) -> str:
    if reg.bank == "ref":
        return f"%{'R' if reg.move and allow_move else 'r'}{reg.index}"
    if reg.bank in ("i64", "f64"):
        return f"%i{reg.index}:{reg.index + 1}"
    return f"%i{reg.index}"


def c_float(value: float, digits: int) -> str:
    """Formats like C's printf("%.<digits>g"), including glibc's nan/-nan/inf spellings."""
    if math.isnan(value):
        negative = struct.pack("<d", value)[7] & 0x80
        return "-nan" if negative else "nan"
    if math.isinf(value):
        return "-inf" if value < 0 else "inf"
    return f"%.{digits}g" % value


@dataclass(frozen=True)
class Names:
    """What the renderer needs to know about the module: types, functions, rodata, blocks."""

    module_name: str
    types: tuple[str, ...]
    import_names: tuple[str, ...]
    function_names: tuple[str | None, ...]
    rodata_sizes: tuple[int, ...]

    @classmethod
    def of(cls, module) -> "Names":
        return cls(module.name, module.types, tuple(i.name for i in module.imports),
                   tuple(module.function_name(i) for i in range(len(module.functions))),
                   tuple(r.length for r in module.rodata))

    def type_name(self, type_id: int) -> str:
        if 0 <= type_id < len(self.types):
            return self.types[type_id]
        return f"<type {type_id}>"

    def func_name(self, ordinal: int) -> str:
        if ordinal & IMPORT_BIT:
            index = ordinal & ~IMPORT_BIT
            if index < len(self.import_names) and self.import_names[index]:
                return self.import_names[index]
            return f"import:{index}"
        if ordinal < len(self.function_names) and self.function_names[ordinal]:
            return f"{self.module_name}.{self.function_names[ordinal]}"
        return f"{self.module_name}:{ordinal}"




def _compile(form: str, op: isa.Op):
    """Template -> list of literal strings and (field index or name, mode, spec) tuples."""
    parts = []
    for part in isa.form_parts(form):
        if isinstance(part, isa.FormField):
            name = part.name if part.name in ("mnemonic", "block") else op.index(part.name)
            part = (name, part.mode, part.spec)
        parts.append(part)
    return [p for p in parts if p != ""]


_TEMPLATES = {op: _compile(op.form, op) for op in isa.OPS.values()}


class Renderer:
    def __init__(self, names: Names, block_of_pc: dict[int, int]):
        self.names = names
        self.block_of_pc = block_of_pc

    def target(self, pc: int) -> str:
        block = self.block_of_pc.get(pc)
        return f"^bb{block}" if block is not None else f"^{pc:08X}"

    def remap(self, pairs) -> str:
        return ", ".join(f"{reg_name(s)}->{reg_name(d)}" for s, d in pairs)

    def field(self, f: isa.Field, value, spec: str | None) -> str:
        k = f.kind
        if k == isa.REG:
            return reg_name(value, f.move)
        if k == isa.IMM:
            if spec == "hex32":
                return f"0x{value & 0xFFFFFFFF:08X}"
            if spec == "hex64":
                return f"0x{value & 0xFFFFFFFFFFFFFFFF:016X}"
            if f.bank == "f32":
                return c_float(value, 9)
            if f.bank == "f64":
                return c_float(value, 17)
            return str(value)
        if k == isa.RODATA:
            if spec == "size":
                sizes = self.names.rodata_sizes
                return f"{sizes[value]}b" if value < len(sizes) else "?b"
            return str(value)
        if k == isa.GLOBAL:
            return str(value)
        if k == isa.FUNC:
            return self.names.func_name(value)
        if k == isa.TYPE:
            return self.names.type_name(value)
        if k == isa.STRING:
            return value.decode("utf-8", "replace")
        if k == isa.TARGET:
            return self.target(value)
        if k == isa.REMAP:
            return self.remap(value)
        if k == isa.REGS:  # lists name registers by number only, whatever their width
            return ", ".join(reg_name(r) if r.is_ref else f"%i{r.index}" for r in value)
        if k == isa.SEGMENTS:
            return ", ".join(str(v) for v in value)
        if k == isa.CASES:
            return "".join(f", {i}: {self.target(t)}({self.remap(r)})" for i, (t, r) in enumerate(value))
        raise AssertionError(k)

    def instruction(self, ins: Instruction) -> str:
        out: list[str] = []
        for part in _TEMPLATES[ins.op]:
            if isinstance(part, str):
                out.append(part)
                continue
            key, mode, spec = part
            if key == "mnemonic":
                out.append(ins.op.mnemonic)
                continue
            if key == "block":
                out.append(f"^bb{self.block_of_pc.get(ins.pc, '?')}")
                continue
            f = ins.op.fields[key]
            value = ins.args[key]
            text = self.field(f, value, spec)
            if mode == "prefix":
                out.append(f"{text} = " if value else "")
            elif mode == "suffix":
                out.append(f" {text}" if value else "")
            else:
                out.append(text)
        return "".join(out)


def block_starts(instructions) -> dict[int, int]:
    """pc of each block marker -> its block ordinal."""
    starts: dict[int, int] = {}
    for ins in instructions:
        if ins.op.code == isa.BLOCK_MARKER and ins.op.opset == isa.CORE:
            starts[ins.pc] = len(starts)
    return starts


def instruction_lines(names: Names, instructions) -> list[str]:
    """One line per instruction: block labels flush left, the rest indented two spaces."""
    r = Renderer(names, block_starts(instructions))
    lines = []
    for ins in instructions:
        text = r.instruction(ins)
        lines.append(text if ins.op.code == isa.BLOCK_MARKER and ins.op.opset == isa.CORE else "  " + text)
    return lines


def type_code_name(code: str) -> str:
    return VALUE_CODES[code]
