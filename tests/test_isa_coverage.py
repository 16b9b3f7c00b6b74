"""The ISA table reaches every consumer, and its semantic attributes agree with the ops.

Per opcode of frontend.isa: the decoder reads it back from its bytes, the disassembler renders
every operand, the assembler parses it, the verifier checks every operand, the interpreter
has a handler and the JIT a lowering. The attributes (kind, traps, terminator, access, call)
are checked against what the names and operands say independently, so a row that declares
the wrong width or forgets that an op traps fails here rather than in a backend.
"""

from __future__ import annotations

from jitvm.fallback_interp import registry as interp_registry
from jitvm.frontend import isa
from jitvm.frontend.asm.encode import encode_function, reg
from jitvm.frontend.asm.forms import MATCHERS
from jitvm.frontend.decode import Instruction, decode_function
from jitvm.frontend.disasm import Names, Renderer
from jitvm.lower.emit import registry as lower_registry
from jitvm.verify.calls import LAYOUTS, OWNED_FIELDS, RULES
from jitvm.verify.operands import CHECK_BY_KIND, PLANS

OPS = list(isa.OPS.values())
NAMES = Names("m", ("!vm.buffer",), ("m.imported",), ("f",), (16,))
KINDS = {isa.ARITH, isa.CAST, isa.COMPARE, isa.CONST, isa.SELECT, isa.GLOBALS, isa.BUFFERS, isa.LISTS,
         isa.REFS, isa.CONTROL, isa.CALLS, isa.DEBUG}


def _sample(f: isa.Field):
    """One valid-looking operand of field `f` (lists hold one entry, so they render)."""
    bank = "i32" if f.bank in (None, "any") else f.bank
    return {
        isa.REG: lambda: reg(bank, 2),
        isa.IMM: lambda: 7.0 if bank in ("f32", "f64") else 7,
        isa.STRING: lambda: b"s",
        isa.REMAP: lambda: ((reg("i32", 1), reg("i32", 3)),),
        isa.REGS: lambda: (reg(bank, 2),),
        isa.SEGMENTS: lambda: (1,),
        isa.CASES: lambda: ((0, ()),),
    }.get(f.kind, lambda: 0)()


def _instruction(op: isa.Op) -> Instruction:
    return Instruction(0, 0, op, tuple(_sample(f) for f in op.fields))


# --- every consumer -----------------------------------------------------------------------------

def test_every_op_decodes_from_its_bytes():
    wrong = []
    for op in OPS:
        ins = _instruction(op)
        (back,) = decode_function(encode_function([ins]))
        if back.op is not op or back.args != ins.args:
            wrong.append(op.name)
    assert not wrong


def test_every_op_has_a_dump_form_naming_all_its_operands():
    renderer = Renderer(NAMES, {0: 0})
    for op in OPS:
        named = {p.name for p in isa.form_parts(op.form) if isinstance(p, isa.FormField)}
        assert {f.name for f in op.fields} <= named, op.name
        line = renderer.instruction(_instruction(op))
        assert line == "^bb0:" if op.name == "block" else op.mnemonic in line, (op.name, line)


def test_every_op_has_an_assembler_form():
    assert sorted(MATCHERS) == sorted(op.mnemonic for op in OPS if op.name != "block")


def test_every_op_has_verifier_rules():
    """Each operand is checked by a field rule or by the signature rules of `calls`."""
    for op in OPS:
        planned = {f.name for _, f, _ in PLANS[op]}
        owned = OWNED_FIELDS.get(op, frozenset())
        for f in op.fields:
            assert f.kind in CHECK_BY_KIND, (op.name, f.kind)
            checked = f.name in planned or f.name in owned
            assert checked or f.kind in (isa.IMM, isa.STRING), f"{op.mnemonic} operand {f.name!r} is unchecked"
        if op in RULES:
            assert owned <= {f.name for f in op.fields} and op in LAYOUTS
    assert set(OWNED_FIELDS) == set(RULES)


def test_every_op_has_an_interpreter_handler():
    assert interp_registry.HANDLERS.missing() == []


def test_every_op_has_a_lowering():
    assert lower_registry.LOWERINGS.missing() == []


# --- semantic attributes ------------------------------------------------------------------------

def test_every_op_has_a_kind():
    assert {op.name for op in OPS if op.kind not in KINDS} == set()


def test_pure_ops_compute_one_register_from_registers():
    for op in (op for op in OPS if op.pure):
        assert all(f.kind in (isa.REG, isa.REGS, isa.IMM, isa.TYPE) for f in op.fields), op.name
        assert [f.name for f in op.fields if f.out] == ["result"], op.name
        assert not op.terminator and op.access is None and op.call is None, op.name
        # They trap only where integers divide or a ref's type is checked.
        divides = op.name.startswith(("div.i", "rem.i"))
        assert op.traps == (divides or any(f.kind == isa.TYPE for f in op.fields)), op.name


def test_kinds_of_pure_ops_match_their_names():
    prefixes = [(isa.CAST, ("trunc.", "ext.", "cast.", "bitcast.")), (isa.COMPARE, ("cmp.",)),
                (isa.CONST, ("const.",)), (isa.SELECT, ("select.", "switch."))]
    for op in OPS:
        if op.pure:
            assert op.kind == next((k for k, names in prefixes if op.name.startswith(names)), isa.ARITH), op.name


def test_buffer_accesses_have_the_width_of_their_names():
    accesses = [op for op in OPS if op.name.startswith(("buffer.load.", "buffer.store.", "buffer.fill."))]
    assert len(accesses) == 20
    for op in accesses:
        a = op.access
        parts = op.name.split(".")  # buffer.load.i16.s
        assert op.kind == isa.BUFFERS and op.traps and a is not None, op.name
        assert a.action == {"load": isa.LOAD, "store": isa.STORE, "fill": isa.FILL}[parts[1]], op.name
        assert a.element == parts[2] and a.width == int(parts[2][1:]) // 8, op.name
        assert a.signed == {"s": True, "u": False, None: None}[parts[3] if len(parts) > 3 else None], op.name
        assert a.narrow == (a.width < isa.BANK_WIDTH[op.type]), op.name
        assert (a.signed is not None) == (a.narrow and a.action == isa.LOAD), op.name
        assert op.type == ("i32" if a.narrow else a.element), op.name  # the register a narrow element widens to


def test_global_accesses_match_their_names():
    for op in (op for op in OPS if op.kind == isa.GLOBALS):
        a = op.access
        parts = op.name.split(".")  # global.load.indirect.f32
        assert a is not None and a.element == parts[-1] == op.type, op.name
        assert a.action == {"load": isa.LOAD, "store": isa.STORE}[parts[1]], op.name
        assert a.indirect == ("indirect" in parts), op.name
        assert a.width == isa.BANK_WIDTH.get(op.type), op.name
        assert op.traps == (a.indirect or a.element == "ref"), op.name  # direct value offsets are verified


def test_only_memory_element_ops_have_an_access():
    for op in OPS:
        if op.access is None:
            continue
        assert op.kind in (isa.GLOBALS, isa.BUFFERS), op.name
        banks = {f.bank for f in op.fields if f.kind == isa.REG and (f.out if op.access.action == isa.LOAD
                                                                     else f.name == "value")}
        assert banks == {op.type}, op.name  # the register the element moves through
    assert {op.name for op in OPS if op.kind == isa.BUFFERS and op.access is None} == {
        "buffer.alloc", "buffer.clone", "buffer.length", "buffer.copy", "buffer.compare", "buffer.hash"}


def test_calls_match_their_operands():
    for op in OPS:
        kinds = {f.name: f.kind for f in op.fields}
        assert (op.call is not None) == ("callee_ordinal" in kinds), op.name
        if op.call is None:
            continue
        assert op.kind == isa.CALLS and op.traps
        assert op.call.variadic == (isa.SEGMENTS in kinds.values()) == op.name.startswith("call.variadic")
        assert op.call.yieldable == ("dest_pc" in kinds) == op.terminator == op.name.endswith(".yieldable")


def test_terminators_are_control_ops_and_yieldable_calls():
    for op in OPS:
        branches = any(f.kind in (isa.TARGET, isa.CASES) for f in op.fields)
        if branches:
            assert op.terminator, op.name
        expected = op.kind == isa.CONTROL and op.name != "block" or op.call is not None and op.call.yieldable
        assert op.terminator == expected, op.name
