"""Ref registers: constants, assignment, moves, checked casts, compares, select, switch.

IREE's rules (runtime/src/iree/vm/ref.c): reading a register without the move bit adds a
reference, with it the reference moves and the register is cleared; a checked transfer
fails with INVALID_ARGUMENT "source ref type mismatch" (changing nothing) when a non-null
ref is not of the type the op names. A type-table entry that is not a concrete ref type
(`!vm.opaque`, or a value type) names no ref type at all, so every non-null ref mismatches
it; measured with iree-base-runtime 3.13: `vm.cast.any.ref %buffer -> !vm.opaque` fails.
"""

from __future__ import annotations

from contextlib import nullcontext

from ..frontend.handlers import OpHandlers
from ..runtime.vm.objects import checked_type_id
from .ops_control import ref_move_or_retain, store_ref

handles = OpHandlers("interpreter")  # this family's part of registry.HANDLERS


def ref_type_id(e, type_index: int) -> int:
    """The runtime type id a checked op compares against (runtime.vm.objects.checked_type_id)."""
    return checked_type_id(e.vf.module.types[type_index])


def check_type(e, value: str, type_index: int) -> None:
    """Traps unless the object in `value` (an address expression) is null or of the type."""
    with e.indented(f"if {value} and TID({value}) != {ref_type_id(e, type_index)}:"):
        e.raise_(f"TRAP(K_TYPE_MISMATCH, message={e.const('source ref type mismatch', 'msg')})")


def checked_move_or_retain(e, src, dst, type_index: int) -> None:
    e.line(f"v = R[{src.index}]")
    check_type(e, "v", type_index)
    ref_move_or_retain(e, src, dst)


@handles("const.ref.zero")
def _zero(e, ins):
    store_ref(e, ins["result"], "0")


@handles("const.ref.rodata")
def _rodata(e, ins):
    """A new reference to the loaded module's read-only buffer over the segment."""
    addr = e.const(e.gen.rodata[ins["rodata"]], "ro")  # a name: the source stays the same in every process
    e.line(f"RET({addr})")
    store_ref(e, ins["value"], addr)


@handles("assign.ref")
def _assign(e, ins):
    ref_move_or_retain(e, ins["source"], ins["result"])


@handles("cast.any.ref")
def _cast(e, ins):
    checked_move_or_retain(e, ins["operand"], ins["result"], ins["result_type"])


@handles("discard.refs")
def _discard(e, ins):
    for reg in ins["refs"]:
        if reg.is_ref:
            e.line(f"x = R[{reg.index}]")
            with e.indented("if x:"):
                e.line(f"R[{reg.index}] = 0")
                e.line("REL(x)")


@handles("cmp.eq.ref", "cmp.ne.ref")
def _cmp(e, ins):
    op = "==" if ins.op.name == "cmp.eq.ref" else "!="
    e.line(f"{e.u32(ins['result'])} = {e.ref(ins['left'])} {op} {e.ref(ins['right'])}")


@handles("cmp.nz.ref")
def _nz(e, ins):
    e.line(f"{e.u32(ins['result'])} = {e.ref(ins['operand'])} != 0")


@handles("select.ref")
def _select(e, ins):
    t, f, r = ins["true_value"], ins["false_value"], ins["result"]
    for head, chosen, other in ((f"if {e.u32(ins['condition'])}:", t, f), ("else:", f, t)):
        with e.indented(head):
            checked_move_or_retain(e, chosen, r, ins["type_def"])
            if other.move and other.index != r.index:  # IREE releases the other moved operand
                e.line(f"x = R[{other.index}]")
                with e.indented("if x:"):
                    e.line(f"R[{other.index}] = 0")
                    e.line("REL(x)")


@handles("switch.ref")
def _switch(e, ins):
    """The chosen register (or the default) moves or is retained; other operands stay."""
    values = ins["values"]
    e.line(f"x = {e.i32(ins['index'])}")
    for i, reg in enumerate(values):
        with e.indented(f"{'if' if i == 0 else 'elif'} x == {i}:"):
            checked_move_or_retain(e, reg, ins["result"], ins["type_def"])
    with e.indented("else:") if values else nullcontext():
        checked_move_or_retain(e, ins["default_value"], ins["result"], ins["type_def"])
