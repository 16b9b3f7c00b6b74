"""Ref registers and ref globals: assignment, moves, checked casts, compares, select, switch.

IREE's ref rules: reading a register without the move bit adds a reference; with it the
reference moves and the register is cleared; a checked transfer fails with "source ref
type mismatch" (leaving everything unchanged) when a non-null ref has another type than
the one the op names (`!vm.ref<?>` accepts any).
"""

from __future__ import annotations

from ...frontend.handlers import OpHandlers
from ...runtime.vm import traps
from .types import I8, I32, I64, PTR, const, offset_of

lowers = OpHandlers("lowering")  # this family's part of registry.LOWERINGS


def check_type(e, obj, type_index: int) -> None:
    """Traps with "source ref type mismatch" unless `obj` is null or of the named type."""
    b = e.b
    tid = e.mod.ref_type_id(b, type_index)
    nonnull = e.fn.append_basic_block(f"typecheck_pc{e.pc}")
    cont = e.fn.append_basic_block(f"typed_pc{e.pc}")
    b.cbranch(b.icmp_unsigned("!=", obj, const(PTR, None)), nonnull, cont)
    b.position_at_end(nonnull)
    e.check(b.icmp_unsigned("==", e.type_id_of(obj), tid), traps.TYPE_MISMATCH,
            message="source ref type mismatch")
    b.branch(cont)
    b.position_at_end(cont)


def checked_retain_or_move(e, src, dst, type_index: int) -> None:
    check_type(e, e.get(src, "ref"), type_index)
    e.retain_or_move(src, dst)


@lowers("const.ref.zero")
def _zero(e, ins):
    e.set_ref(ins["result"], const(PTR, None))


@lowers("assign.ref")
def _assign(e, ins):
    e.retain_or_move(ins["source"], ins["result"])


@lowers("cast.any.ref")
def _cast(e, ins):
    checked_retain_or_move(e, ins["operand"], ins["result"], ins["result_type"])


@lowers("discard.refs")
def _discard(e, ins):
    for reg in ins["refs"]:
        if reg.is_ref:
            e.set_ref(reg, const(PTR, None))


@lowers("cmp.eq.ref", "cmp.ne.ref")
def _cmp(e, ins):
    a, b = e.get(ins["left"], "ref"), e.get(ins["right"], "ref")
    pred = "==" if ins.op.name == "cmp.eq.ref" else "!="
    e.set(ins["result"], e.b.zext(e.b.icmp_unsigned(pred, a, b), I32), "i32")


@lowers("cmp.nz.ref")
def _nz(e, ins):
    v = e.get(ins["operand"], "ref")
    e.set(ins["result"], e.b.zext(e.b.icmp_unsigned("!=", v, const(PTR, None)), I32), "i32")


@lowers("select.ref")
def _select(e, ins):
    b = e.b
    cond = b.icmp_unsigned("!=", e.i32(ins["condition"]), const(I32, 0))
    t, f, r = ins["true_value"], ins["false_value"], ins["result"]
    with b.if_else(cond) as (then, otherwise):
        for side, chosen, other in ((then, t, f), (otherwise, f, t)):  # t and f may be one register
            with side:
                checked_retain_or_move(e, chosen, r, ins["type_def"])
                if other.move and other.index != r.index:
                    e.set_ref(other, const(PTR, None))


@lowers("switch.ref")
def _switch(e, ins):
    b = e.b
    index = e.i32(ins["index"])
    values = ins["values"]
    done = e.fn.append_basic_block(f"switch_done_pc{e.pc}")
    default = e.fn.append_basic_block(f"switch_default_pc{e.pc}")
    sw = b.switch(index, default)
    for i, reg in enumerate(values):
        case = e.fn.append_basic_block(f"switch_case{i}_pc{e.pc}")
        sw.add_case(const(I32, i), case)
        b.position_at_end(case)
        checked_retain_or_move(e, reg, ins["result"], ins["type_def"])
        b.branch(done)
    b.position_at_end(default)
    checked_retain_or_move(e, ins["default_value"], ins["result"], ins["type_def"])
    b.branch(done)
    b.position_at_end(done)


# --- ref globals ----------------------------------------------------------------------------

def _global_slot(e, ordinal):
    b = e.b
    table = b.load(b.gep(e.state, [const(I64, offset_of("ModuleState", "refs"))], source_etype=I8,
                         inbounds=True), typ=PTR)
    return b.gep(table, [ordinal], source_etype=PTR, inbounds=True)


def _indirect_ordinal(e, reg):
    b = e.b
    ordinal = b.zext(e.i32(reg), I64)
    count = b.load(b.gep(e.state, [const(I64, offset_of("ModuleState", "ref_count"))], source_etype=I8), typ=I64)
    e.check(b.icmp_unsigned("<", ordinal, count), traps.GLOBAL_REF_OUT_OF_RANGE, [ordinal, count])
    return ordinal


def _load_global(e, slot, result, type_index):
    b = e.b
    obj = b.load(slot, typ=PTR)
    check_type(e, obj, type_index)
    if result.move:
        b.store(const(PTR, None), slot)
    else:
        e.retain(obj)
    e.set_ref(result, obj)


def _store_global(e, slot, value, type_index):
    b = e.b
    check_type(e, e.get(value, "ref"), type_index)
    new = e.take_ref(value)
    old = b.load(slot, typ=PTR)
    b.store(new, slot)
    e.release(old)


@lowers("global.load.ref")
def _gload(e, ins):
    _load_global(e, _global_slot(e, const(I64, ins["global"])), ins["value"], ins["type_def"])


@lowers("global.store.ref")
def _gstore(e, ins):
    _store_global(e, _global_slot(e, const(I64, ins["global"])), ins["value"], ins["type_def"])


@lowers("global.load.indirect.ref")
def _gload_indirect(e, ins):
    _load_global(e, _global_slot(e, _indirect_ordinal(e, ins["global"])), ins["value"], ins["type_def"])


@lowers("global.store.indirect.ref")
def _gstore_indirect(e, ins):
    _store_global(e, _global_slot(e, _indirect_ordinal(e, ins["global"])), ins["value"], ins["type_def"])


