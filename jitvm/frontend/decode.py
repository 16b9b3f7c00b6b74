"""Function bytecode -> instructions with typed operands, driven by the ISA table.

Decoding checks only that every byte read lies inside the function and that opcodes exist;
whether the operands make sense (register ranges, banks, targets) is the verifier's job.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

from ..errors import DecodeError
from . import isa
from .floatbits import f32_from_bits
from .isa import Op

REF_BIT = 0x8000
MOVE_BIT = 0x4000
I32_MASK = 0x7FFF
REF_MASK = 0x3FFF

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_IMM = {"i32": struct.Struct("<i"), "i64": struct.Struct("<q"), "f32": struct.Struct("<f"),
        "f64": struct.Struct("<d")}


class Reg(NamedTuple):
    """A register operand. `index` is masked for its bank; `raw` keeps the encoded u16."""

    bank: str  # "i32", "i64", "f32", "f64" or "ref"
    index: int
    move: bool
    raw: int

    @property
    def is_ref(self) -> bool:
        return self.bank == "ref"


def _new_reg(bank: str, raw: int) -> Reg:
    if bank == "ref":
        return Reg("ref", raw & REF_MASK, bool(raw & MOVE_BIT), raw)
    return Reg(bank, raw & I32_MASK, False, raw)


class _Registers(dict):
    """One bank's registers by encoded u16, each made once: a function names few registers
    many times, and a Reg is immutable. At most LIMIT are kept (random bytes, as a fuzzer
    feeds, would otherwise fill all 65,536)."""

    LIMIT = 4096

    def __init__(self, bank: str):
        super().__init__()
        self.bank = bank

    def __missing__(self, raw: int) -> Reg:
        reg = _new_reg(self.bank, raw)
        if len(self) < self.LIMIT:
            self[raw] = reg
        return reg


_REGS = {bank: _Registers(bank) for bank in ("i32", "i64", "f32", "f64", "ref")}
_ANY = {False: _REGS["i32"], True: _REGS["ref"]}


def make_reg(bank: str, raw: int) -> Reg:
    return _REGS[bank][raw] if bank in _REGS else _new_reg(bank, raw)


def any_reg(raw: int) -> Reg:
    """A register from an untyped list: the high bit says ref or not."""
    return _REGS["ref" if raw & REF_BIT else "i32"][raw]


@dataclass(frozen=True, slots=True)
class Instruction:
    """One decoded instruction: its op and an operand per field."""

    pc: int  # offset of the first opcode byte within the function
    size: int
    op: Op
    args: tuple  # one value per op.fields entry

    def __getitem__(self, name: str):
        return self.args[self.op.index(name)]


class _Reader:
    __slots__ = ("data", "pc", "end", "where", "start")

    def __init__(self, data: bytes, where: str):
        self.data = data
        self.pc = 0
        self.end = len(data)
        self.where = where
        self.start = 0

    def fail(self, what: str) -> DecodeError:
        return DecodeError(f"{self.where}: {what} in the instruction at pc {self.start}")

    def need(self, n: int, what: str) -> int:
        pc = self.pc
        if pc + n > self.end:
            raise self.fail(f"{what} needs {n} bytes at pc {pc} but the function ends at {self.end}")
        self.pc = pc + n
        return pc

    def u16(self, what: str) -> int:
        return _U16.unpack_from(self.data, self.need(2, what))[0]

    def u32(self, what: str) -> int:
        return _U32.unpack_from(self.data, self.need(4, what))[0]

    def align2(self) -> None:
        self.pc += self.pc & 1

    def u16_list(self, what: str) -> tuple[int, ...]:
        self.align2()
        count = self.u16(what)
        at = self.need(2 * count, f"{what} of {count} entries")
        return struct.unpack_from(f"<{count}H", self.data, at)


def _read_reg(bank):
    regs = _REGS[bank]
    unpack = _U16.unpack_from

    def read(r: _Reader):
        pc = r.pc
        if pc + 2 > r.end:
            r.need(2, "register")  # raises
        r.pc = pc + 2
        return regs[unpack(r.data, pc)[0]]
    return read


def _read_imm(bank):
    s = _IMM[bank]
    if bank == "f32":  # read as bits: a signalling NaN must survive (frontend.floatbits)
        u32 = struct.Struct("<I")

        def read_f32(r: _Reader):
            return f32_from_bits(u32.unpack_from(r.data, r.need(4, "f32 constant"))[0])
        return read_f32

    def read(r: _Reader):
        return s.unpack_from(r.data, r.need(s.size, f"{bank} constant"))[0]
    return read


def _read_u32(what):
    def read(r: _Reader):
        return r.u32(what)
    return read


def _read_string(r: _Reader) -> bytes:
    n = r.u16("string length")
    at = r.need(n, f"string of {n} bytes")
    return bytes(r.data[at:at + n])


def _read_remap(r: _Reader) -> tuple[tuple[Reg, Reg], ...]:
    r.align2()
    count = r.u16("remap list")
    at = r.need(4 * count, f"remap list of {count} pairs")
    raw = struct.unpack_from(f"<{2 * count}H", r.data, at)
    return tuple([(any_reg(raw[2 * i]), any_reg(raw[2 * i + 1])) for i in range(count)])


def _read_regs(bank):
    if bank == "any":
        def read(r: _Reader):
            return tuple([any_reg(x) for x in r.u16_list("register list")])
    else:
        regs = _REGS[bank]

        def read(r: _Reader):
            return tuple([regs[x] for x in r.u16_list("register list")])
    return read


def _read_segments(r: _Reader) -> tuple[int, ...]:
    return r.u16_list("segment sizes")


def _read_cases(r: _Reader) -> tuple[tuple[int, tuple], ...]:
    count = r.u16("branch table size")
    return tuple((r.u32("case target"), _read_remap(r)) for _ in range(count))


def _field_reader(f: isa.Field):
    k = f.kind
    if k == isa.REG:
        return _read_reg(f.bank)
    if k == isa.IMM:
        return _read_imm(f.bank)
    if k in (isa.GLOBAL, isa.RODATA, isa.FUNC, isa.TYPE, isa.TARGET):
        return _read_u32(k)
    if k == isa.STRING:
        return _read_string
    if k == isa.REMAP:
        return _read_remap
    if k == isa.REGS:
        return _read_regs(f.bank)
    if k == isa.SEGMENTS:
        return _read_segments
    if k == isa.CASES:
        return _read_cases
    raise AssertionError(f"no reader for field kind {k}")


_READERS: dict[Op, tuple] = {op: tuple(_field_reader(f) for f in op.fields) for op in isa.OPS.values()}
# (op, its readers) by opcode, as isa.CORE_OPS and isa.EXT_OPS: no Op hashed per instruction
_CORE = [None if op is None else (op, _READERS[op]) for op in isa.CORE_OPS]
_EXT = {prefix: [None if op is None else (op, _READERS[op]) for op in table] for prefix, table in isa.EXT_OPS.items()}


def _instruction(pc: int, size: int, op: Op, args: tuple) -> Instruction:
    """Instruction(pc, size, op, args) without the frozen class's four object.__setattr__
    calls (decoding makes thousands: ResNet-50-style's 5,500 took 17 ms)."""
    i = _new_instruction(Instruction)
    _set_pc(i, pc)
    _set_size(i, size)
    _set_op(i, op)
    _set_args(i, args)
    return i


_new_instruction = object.__new__
_set_pc, _set_size, _set_op, _set_args = (getattr(Instruction, f).__set__ for f in ("pc", "size", "op", "args"))


def decode_one(r: _Reader) -> Instruction:
    start = r.start = r.pc
    code = r.data[r.need(1, "opcode")]
    entry = _CORE[code]
    if entry is None:
        table = _EXT.get(code)
        if table is None:
            raise r.fail(f"unknown opcode 0x{code:02X}")
        ext = r.data[r.need(1, "extension opcode")]
        entry = table[ext]
        if entry is None:
            raise r.fail(f"unknown {isa.SET_OF_PREFIX[code].upper()} opcode 0x{ext:02X}")
    op, readers = entry
    args = tuple([read(r) for read in readers])
    return _instruction(start, r.pc - start, op, args)


def decode_function(code, where: str = "function") -> list[Instruction]:
    """Decodes a whole function body; raises DecodeError naming the pc on malformed bytes."""
    r = _Reader(bytes(code), where)
    out = []
    while r.pc < r.end:
        out.append(decode_one(r))
    return out
