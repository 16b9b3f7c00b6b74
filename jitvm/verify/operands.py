"""Operand rules per ISA field kind: one checker per kind, applied through per-op plans.

The ISA table says what each operand is (register of a bank, global offset, type id,
branch target...); this module says what makes each kind valid, so no opcode is named
here. Operands that only make sense against a signature (call arguments and results,
return values) are left to `calls`, which owns them through `OWNED_FIELDS`.
"""

from __future__ import annotations

from ..frontend import isa
from ..frontend.isa import IMPORT_BIT
from .calls import OWNED_FIELDS
from .registers import check_register

# TYPE fields by name: which type-table entries they may reference.
TYPE_FIELD_NEEDS_REF = {
    "element_type": False,  # list.alloc: any element type, values included
    "type_def": True,  # global/list/select/switch ref ops
    "result_type": True,  # cast.any.ref
}


def _register(fv, ins, field, value) -> None:
    check_register(fv, ins, field.bank, value.raw, f"operand '{field.name}'", field.move)


def _registers(fv, ins, field, value) -> None:
    # Every ref register list honours the move bit (IREE's dispatch moves out of call,
    # return, switch and discard lists); result lists are written, never moved from.
    move_ok = not field.out
    for k, reg in enumerate(value):
        check_register(fv, ins, field.bank, reg.raw, f"operand '{field.name}'[{k}]", move_ok)


def _target(fv, ins, field, value) -> None:
    if value not in fv.block_of_pc:
        if value >= fv.length:
            detail = f"lies outside the function ({fv.length} bytes)"
        else:
            detail = "is not the start of a block"
        raise fv.fail(ins, f"branch target pc {value} ({field.name}) {detail}")


def _remap(fv, ins, field, value) -> None:
    for k, (src, dst) in enumerate(value):
        if src.is_ref != dst.is_ref:
            raise fv.fail(ins, f"branch operand {k} of '{field.name}' moves between banks "
                               f"({src.bank} -> {dst.bank})")
        bank = "ref" if src.is_ref else "i32"
        check_register(fv, ins, bank, src.raw, f"branch operand {k} source", True)
        check_register(fv, ins, bank, dst.raw, f"branch operand {k} destination", False)


def _cases(fv, ins, field, value) -> None:
    for target, remap in value:
        _target(fv, ins, field, target)
        _remap(fv, ins, field, remap)


def _global(fv, ins, field, value) -> None:
    if field.bank == "ref":
        if value >= fv.global_refs:
            raise fv.fail(ins, f"ref global {value} is out of range ({fv.global_refs} ref globals)")
        return
    width = isa.BANK_WIDTH[field.bank]
    if value + width > fv.global_bytes:
        raise fv.fail(ins, f"{field.bank} global at byte offset {value} lies outside the "
                           f"{fv.global_bytes} bytes of global storage")
    if value % width:
        raise fv.fail(ins, f"{field.bank} global at byte offset {value} is not {width}-byte aligned")


def _rodata(fv, ins, field, value) -> None:
    if value >= fv.rodata_count:
        raise fv.fail(ins, f"rodata ordinal {value} is out of range ({fv.rodata_count} segments)")


def _type(fv, ins, field, value) -> None:
    types = fv.types
    if value >= len(types):
        raise fv.fail(ins, f"type id {value} is out of range ({len(types)} types)")
    if TYPE_FIELD_NEEDS_REF[field.name] and not types[value].is_ref:
        raise fv.fail(ins, f"'{field.name}' must be a ref type but type {value} is {types[value].name}")


def _import_ordinal(fv, ins, field, value) -> None:
    if not value & IMPORT_BIT:
        raise fv.fail(ins, f"function ordinal {value} is not an import")
    index = value & ~IMPORT_BIT
    if index >= fv.import_count:
        raise fv.fail(ins, f"import ordinal {index} is out of range ({fv.import_count} imports)")


def _nothing(fv, ins, field, value) -> None:
    """Immediates and strings: decoding already proved they lie inside the function."""


CHECK_BY_KIND = {
    isa.REG: _register,
    isa.REGS: _registers,
    isa.TARGET: _target,
    isa.REMAP: _remap,
    isa.CASES: _cases,
    isa.GLOBAL: _global,
    isa.RODATA: _rodata,
    isa.TYPE: _type,
    isa.FUNC: _import_ordinal,
    isa.IMM: _nothing,
    isa.STRING: _nothing,
    isa.SEGMENTS: _nothing,
}
"""field kind -> check(verifier, instruction, field, decoded value)"""

def _plan(op: isa.Op) -> tuple:
    owned = OWNED_FIELDS.get(op, ())
    return tuple((i, f, CHECK_BY_KIND[f.kind]) for i, f in enumerate(op.fields)
                 if f.name not in owned and CHECK_BY_KIND[f.kind] is not _nothing)


PLANS = {op: _plan(op) for op in isa.OPS.values()}
"""op -> ((field index, field, checker), ...) for the operands this module verifies"""

_UNCLASSIFIED = {f.name for op in isa.OPS.values() for f in op.fields
                 if f.kind == isa.TYPE} - TYPE_FIELD_NEEDS_REF.keys()
assert not _UNCLASSIFIED, f"TYPE fields without a rule: {_UNCLASSIFIED}"
