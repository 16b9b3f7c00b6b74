"""Instructions -> function bytecode: the exact inverse of `decode`, driven by the ISA table.

`encode_function(decode_function(code)) == code` for every well-formed function whose padding
bytes are zero. Each *kind* of operand field has one writer here; no opcode is named.
List alignment (REMAP/REGS/SEGMENTS) is relative to the start of the function, so a function
is always encoded as a whole, starting at pc 0.
"""

from __future__ import annotations

import struct

from ...errors import FormatError
from .. import isa
from ..floatbits import f32_to_bits
from ..decode import I32_MASK, MOVE_BIT, REF_BIT, REF_MASK, Instruction, Reg

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_IMM = {"i32": struct.Struct("<i"), "i64": struct.Struct("<q"), "f32": struct.Struct("<f"),
        "f64": struct.Struct("<d")}
_IMM_UNSIGNED = {"i32": struct.Struct("<I"), "i64": struct.Struct("<Q")}


class EncodeError(FormatError):
    """An operand that cannot be represented in the bytecode (out of range, wrong type)."""


def reg(bank: str, index: int, move: bool = False) -> Reg:
    """A register operand with its wire encoding (`raw`) computed from bank, index and move."""
    if bank == "ref":
        if not 0 <= index <= REF_MASK:
            raise EncodeError(f"ref register %r{index} is out of range (0..{REF_MASK})")
        return Reg("ref", index, move, REF_BIT | (MOVE_BIT if move else 0) | index)
    if not 0 <= index <= I32_MASK:
        raise EncodeError(f"register %i{index} is out of range (0..{I32_MASK})")
    return Reg(bank, index, False, index)


class _Writer:
    __slots__ = ("out",)

    def __init__(self):
        self.out = bytearray()

    def align2(self) -> None:
        if len(self.out) & 1:
            self.out.append(0)

    def u16(self, value: int, what: str) -> None:
        if not 0 <= value <= 0xFFFF:
            raise EncodeError(f"{what} {value} does not fit in 16 bits")
        self.out += _U16.pack(value)

    def u32(self, value: int, what: str) -> None:
        if not 0 <= value <= 0xFFFFFFFF:
            raise EncodeError(f"{what} {value} does not fit in 32 bits")
        self.out += _U32.pack(value)

    def u16_list(self, values, what: str) -> None:
        self.align2()
        self.u16(len(values), f"{what} length")
        for v in values:
            self.u16(v, what)


def _raw(r) -> int:
    if not isinstance(r, Reg):
        raise EncodeError(f"expected a register, got {r!r}")
    return r.raw


def _write_reg(w: _Writer, value) -> None:
    w.u16(_raw(value), "register")


def _write_imm(bank):
    signed, unsigned = _IMM[bank], _IMM_UNSIGNED.get(bank)
    if bank == "f32":
        def write_f32(w: _Writer, value) -> None:
            try:
                w.out += _U32.pack(f32_to_bits(value))
            except (struct.error, OverflowError, TypeError):
                raise EncodeError(f"{value!r} is not a valid f32 constant") from None
        return write_f32

    def write(w: _Writer, value) -> None:
        try:
            w.out += signed.pack(value)
        except struct.error:
            if unsigned is None:
                raise EncodeError(f"{value!r} is not a valid {bank} constant") from None
            try:  # unsigned spellings of the same bits (0xFFFFFFFF for -1)
                w.out += unsigned.pack(value)
            except struct.error:
                raise EncodeError(f"{value!r} does not fit in {bank}") from None
    return write


def _write_u32(what):
    def write(w: _Writer, value) -> None:
        w.u32(value, what)
    return write


def _write_string(w: _Writer, value) -> None:
    data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    w.u16(len(data), "string length")
    w.out += data


def _write_remap(w: _Writer, pairs) -> None:
    w.align2()
    w.u16(len(pairs), "remap list length")
    for src, dst in pairs:
        w.u16(_raw(src), "register")
        w.u16(_raw(dst), "register")


def _write_regs(w: _Writer, regs) -> None:
    w.u16_list([_raw(r) for r in regs], "register list")


def _write_segments(w: _Writer, sizes) -> None:
    w.u16_list(list(sizes), "segment size")


def _write_cases(w: _Writer, cases) -> None:
    w.u16(len(cases), "branch table size")
    for target, pairs in cases:
        w.u32(target, "case target")
        _write_remap(w, pairs)


_KIND_WRITERS = {
    isa.REG: lambda f: _write_reg,
    isa.IMM: lambda f: _write_imm(f.bank),
    isa.GLOBAL: lambda f: _write_u32("global ordinal"),
    isa.RODATA: lambda f: _write_u32("rodata ordinal"),
    isa.FUNC: lambda f: _write_u32("function ordinal"),
    isa.TYPE: lambda f: _write_u32("type ordinal"),
    isa.TARGET: lambda f: _write_u32("branch target"),
    isa.STRING: lambda f: _write_string,
    isa.REMAP: lambda f: _write_remap,
    isa.REGS: lambda f: _write_regs,
    isa.SEGMENTS: lambda f: _write_segments,
    isa.CASES: lambda f: _write_cases,
}

_WRITERS: dict[isa.Op, tuple] = {op: tuple(_KIND_WRITERS[f.kind](f) for f in op.fields)
                                 for op in isa.OPS.values()}


def encode_into(w: _Writer, op: isa.Op, args) -> None:
    writers = _WRITERS[op]
    if len(args) != len(writers):
        raise EncodeError(f"{op.mnemonic} takes {len(writers)} operands, got {len(args)}")
    w.out += op.encoded
    for write, value in zip(writers, args):
        write(w, value)


def encode_function(instructions) -> bytes:
    """Encodes instructions (anything with `.op` and `.args`) as one function body."""
    w = _Writer()
    for ins in instructions:
        encode_into(w, ins.op, ins.args)
    return bytes(w.out)


def instruction_pcs(instructions) -> list[int]:
    """The pc each instruction would be encoded at (operand values do not change sizes)."""
    w = _Writer()
    pcs = []
    for ins in instructions:
        pcs.append(len(w.out))
        encode_into(w, ins.op, ins.args)
    return pcs


def make(op_name: str, *args, pc: int = 0) -> Instruction:
    """An Instruction for `op_name` ("add.i32" or "vm.add.i32"), operands in wire order."""
    op = isa.op(op_name)
    return Instruction(pc, 0, op, tuple(args))
