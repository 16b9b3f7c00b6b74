"""Every op, any operands: the parser reads back exactly what the disassembler prints.

Hypothesis draws operands for each op of the ISA table (registers up to the encoding's
limits, move bits, extreme and NaN constants, strings with quotes, empty and long lists,
branch tables), renders the instruction with jitvm's disassembler and parses the line with
the assembler's matcher for that op; the operands must come back unchanged, and the encoder
must produce the same bytes from both.
"""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given, settings, strategies as st

from jitvm.frontend import isa
from jitvm.frontend.asm.forms import MATCHERS, Label, Symbol
from jitvm.frontend.asm.source import Cursor
from jitvm.frontend.decode import Instruction
from jitvm.frontend.disasm import IMPORT_BIT, Names, Renderer
from jitvm.frontend.asm.encode import encode_function, reg
from jitvm.frontend.asm.writer import FunctionDef, ModuleBuilder

OPS = [op for op in isa.OPS.values() if not (op.opset == isa.CORE and op.code == isa.BLOCK_MARKER)]
BLOCK_PCS = {0: 0, 17: 1, 40: 2}
FUNCS = [0, 1, IMPORT_BIT | 0, IMPORT_BIT | 1]


def context() -> tuple[ModuleBuilder, Names]:
    b = ModuleBuilder("m")
    for t in ("i32", "!vm.buffer", "!hal.device", "!vm.list<!vm.list<?>>", "f64"):
        b.type_ordinal(t)
    b.add_import("hal.device.query", "0rr_iI")
    b.add_import("m.shadow", "0CiD_i")  # an import that looks like an internal name
    b.add_function(FunctionDef("f0", "0v_v"))
    b.add_function(FunctionDef("m:1", "0v_v"))
    names = Names("m", tuple(b.types), ("hal.device.query", "m.shadow"), ("f0", None), (1, 20, 300))
    return b, names


BUILDER, NAMES = context()


def registers(bank: str, move: bool):
    if bank == "ref":
        return st.builds(lambda i, m: reg("ref", i, m), st.integers(0, 0x3FFF), st.booleans() if move else st.just(False))
    if bank == "any":
        return st.one_of(registers("i32", False), registers("ref", True))
    top = 0x7FFE if bank in ("i64", "f64") else 0x7FFF
    return st.builds(lambda i: reg(bank, i), st.integers(0, top))


def remaps():
    return st.lists(st.tuples(registers("any", True), registers("any", True)), max_size=4).map(tuple)


def strings():
    text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30)
    return text.map(lambda s: s.encode("utf-8"))


IMMEDIATES = {
    "i32": st.integers(-(1 << 31), (1 << 31) - 1),
    "i64": st.integers(-(1 << 63), (1 << 63) - 1),
    "f32": st.floats(width=32),
    "f64": st.floats(),
}


def field_values(f: isa.Field):
    k = f.kind
    if k == isa.REG:
        return registers(f.bank, f.move)
    if k == isa.IMM:
        return IMMEDIATES[f.bank]
    if k == isa.GLOBAL:
        return st.integers(0, 0xFFFFFFFF)
    if k == isa.RODATA:
        return st.integers(0, 2)
    if k == isa.FUNC:
        return st.sampled_from(FUNCS)
    if k == isa.TYPE:
        return st.integers(0, len(NAMES.types) - 1)
    if k == isa.STRING:
        return strings()
    if k == isa.TARGET:
        return st.sampled_from(sorted(BLOCK_PCS))
    if k == isa.REMAP:
        return remaps()
    if k == isa.REGS:
        return st.lists(registers(f.bank, f.bank in ("any", "ref")), max_size=5).map(tuple)
    if k == isa.SEGMENTS:
        return st.lists(st.integers(0, 0xFFFF), max_size=5).map(tuple)
    if k == isa.CASES:
        return st.lists(st.tuples(st.sampled_from(sorted(BLOCK_PCS)), remaps()), max_size=4).map(tuple)
    raise AssertionError(k)


def resolve(f: isa.Field, value):
    """Parser output -> operand values (symbols and labels as the builder resolves them)."""
    if isinstance(value, Symbol):
        return BUILDER._resolve_callee(value, BUILDER._function_lookup())
    if isinstance(value, Label):
        return {f"bb{b}": pc for pc, b in BLOCK_PCS.items()}[value.name]
    if f.kind == isa.CASES:
        return tuple((resolve(isa.Field("t", isa.TARGET), t), r) for t, r in value)
    return value


def same(f: isa.Field, a, b) -> bool:
    if f.kind == isa.IMM and f.bank in ("f32", "f64") and math.isnan(a):
        return math.isnan(b) and math.copysign(1, a) == math.copysign(1, b)
    return a == b and type(a) is type(b)


@settings(max_examples=1500, deadline=None)
@given(st.data())
def test_parse_reads_back_what_the_disassembler_prints(data):
    op = data.draw(st.sampled_from(OPS))
    args = tuple(data.draw(field_values(f), label=f.name) for f in op.fields)
    line = Renderer(NAMES, BLOCK_PCS).instruction(Instruction(0, 0, op, args))
    parsed = MATCHERS[op.mnemonic].parse(Cursor(line, 1, "<test>"), BUILDER)
    back = tuple(resolve(f, v) for f, v in zip(op.fields, parsed))
    for f, a, b in zip(op.fields, args, back):
        assert same(f, a, b), f"{line!r}: {f.name} {a!r} came back as {b!r}"
    if not any(f.kind == isa.IMM and f.bank in ("f32", "f64") and math.isnan(a) for f, a in zip(op.fields, args)):
        assert encode_function([Instruction(0, 0, op, back)]) == encode_function([Instruction(0, 0, op, args)])


@pytest.mark.parametrize("value, text", [(float("nan"), "nan"), (-float("nan"), "-nan"), (float("inf"), "inf"),
                                         (-0.0, "-0"), (struct.unpack("<f", b"\x01\x00\x00\x00")[0], None)])
def test_float_constants_keep_their_bits(value, text):
    op = isa.op("const.f32")
    line = Renderer(NAMES, BLOCK_PCS).instruction(Instruction(0, 0, op, (value, reg("f32", 3))))
    if text is not None:
        assert line == f"%i3 = vm.const.f32 {text}"
    parsed = MATCHERS[op.mnemonic].parse(Cursor(line, 1, "<test>"), BUILDER)
    assert struct.pack("<f", parsed[0]) == struct.pack("<f", value)
