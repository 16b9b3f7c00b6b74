"""Module globals: value globals in the instance's rwdata bytes, ref globals in its ref table.

Generated code sees one instance's state through per-instance names: `RWU`/`RWK` (rwdata
as unsigned 32/64-bit words), `RWB` (bytes), `RWN` (its size), `GR` (the ref table as
addresses) and `GRN` (its length). Values move as bits, so f32/f64 globals keep NaN
payloads. Direct offsets and ordinals were proven in range by the verifier; indirect ones
are checked as IREE does (OUT_OF_RANGE naming the offset or ordinal and the table size).
Ref globals use IREE's checked retain-or-move: a load whose result register has the move
bit moves the reference out of the global.
"""

from __future__ import annotations

from ..frontend import isa
from ..frontend.handlers import OpHandlers
from .ops_control import store_ref
from .ops_refs import check_type

handles = OpHandlers("interpreter")  # this family's part of registry.HANDLERS


def _rw(e, fmt: str) -> str:
    return e.env(f"RW{fmt}", ("rwdata", fmt))


def _word(e, ins) -> tuple[str, int]:
    w = ins.op.access.width
    return _rw(e, "U" if w == 4 else "K"), w


def _bits(e, reg, ty: str) -> str:
    return e.bits(reg, ty)


def _load(e, ins):
    ty = ins.op.type
    view, w = _word(e, ins)
    k = ins["byte_offset"]
    if k % w:
        e.line(f"{_bits(e, ins['result'], ty)} = int.from_bytes({_rw(e, 'B')}[{k}:{k + w}], 'little')")
    else:
        e.line(f"{_bits(e, ins['result'], ty)} = {view}[{k // w}]")


def _store(e, ins):
    ty = ins.op.type
    view, w = _word(e, ins)
    k = ins["byte_offset"]
    if k % w:
        e.line(f"{_rw(e, 'B')}[{k}:{k + w}] = {_bits(e, ins['value'], ty)}.to_bytes({w}, 'little')")
    else:
        e.line(f"{view}[{k // w}] = {_bits(e, ins['value'], ty)}")


def _indirect_offset(e, reg, w: int) -> None:
    size = e.env("RWN", ("rwdata_size",))
    e.line(f"o = {e.u32(reg)}")
    with e.indented(f"if o + {w} > {size}:"):
        e.raise_(f"TRAP(K_GLOBAL_OUT_OF_RANGE, o, {size})")


def _load_indirect(e, ins):
    ty = ins.op.type
    view, w = _word(e, ins)
    _indirect_offset(e, ins["byte_offset"], w)
    raw = _rw(e, "B")
    e.line(f"{_bits(e, ins['result'], ty)} = {view}[o >> {w.bit_length() - 1}] if not o & {w - 1} "
           f"else int.from_bytes({raw}[o:o + {w}], 'little')")


def _store_indirect(e, ins):
    ty = ins.op.type
    view, w = _word(e, ins)
    _indirect_offset(e, ins["byte_offset"], w)
    value = _bits(e, ins["value"], ty)
    with e.indented(f"if o & {w - 1}:"):
        e.line(f"{_rw(e, 'B')}[o:o + {w}] = {value}.to_bytes({w}, 'little')")
    with e.indented("else:"):
        e.line(f"{view}[o >> {w.bit_length() - 1}] = {value}")


_VALUE_HANDLER = {(isa.LOAD, False): _load, (isa.STORE, False): _store,
                  (isa.LOAD, True): _load_indirect, (isa.STORE, True): _store_indirect}
for _op in isa.OPS.values():
    if _op.kind == isa.GLOBALS and _op.access.element != "ref":
        handles(_op.name)(_VALUE_HANDLER[_op.access.action, _op.access.indirect])


# --- ref globals ----------------------------------------------------------------------------------

def _ref_slot(e, ins, field: str) -> str:
    """The ref-table index expression of a ref global access (checked when indirect)."""
    table = e.env("GR", ("refs",))
    if not ins.op.access.indirect:
        return f"{table}[{ins[field]}]"
    count = e.env("GRN", ("ref_count",))
    e.line(f"g = {e.u32(ins[field])}")
    with e.indented(f"if g >= {count}:"):
        e.raise_(f"TRAP(K_GLOBAL_REF_OUT_OF_RANGE, g, {count})")
    return f"{table}[g]"


@handles("global.load.ref", "global.load.indirect.ref")
def _load_ref(e, ins):
    slot = _ref_slot(e, ins, "global")
    result = ins["value"]
    e.line(f"v = {slot}")
    check_type(e, "v", ins["type_def"])
    if result.move:
        e.line(f"{slot} = 0")
    else:
        with e.indented("if v:"):
            e.line("RET(v)")
    store_ref(e, result, "v")


@handles("global.store.ref", "global.store.indirect.ref")
def _store_ref(e, ins):
    slot = _ref_slot(e, ins, "global")
    value = ins["value"]
    e.line(f"v = R[{value.index}]")
    check_type(e, "v", ins["type_def"])
    if value.move:
        e.line(f"R[{value.index}] = 0")
    else:
        with e.indented("if v:"):
            e.line("RET(v)")
    e.line(f"o = {slot}")
    e.line(f"{slot} = v")
    with e.indented("if o:"):
        e.line("REL(o)")
